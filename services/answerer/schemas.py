"""What the answerer's model may say: sentences pointing at the passages of this call.
The verifier re-checks every sentence."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, create_model

from shared.passages import MAX_SENTENCES, sentence_model


def answer_model(refs: list[str]) -> type[BaseModel]:
    """The answer as sentences citing passage refs (an enum of ``refs``); an empty list
    says the passages do not answer."""
    return create_model(
        "AnswerDraft",
        __config__=ConfigDict(extra="forbid"),
        answer=(list[sentence_model(refs)], Field(default_factory=list, max_length=MAX_SENTENCES)),  # type: ignore[misc]
    )
