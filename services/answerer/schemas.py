"""What the answerer's model may say. The verifier re-checks every sentence."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class CitedSentence(BaseModel):
    """One sentence of the answer and the message ids it rests on."""

    model_config = ConfigDict(extra="forbid")

    text: str = Field(min_length=1, max_length=600)
    citations: list[str] = Field(min_length=1, max_length=4)


class AnswerDraft(BaseModel):
    """The answer as cited sentences; empty when the evidence does not answer."""

    model_config = ConfigDict(extra="forbid")

    sentences: list[CitedSentence] = Field(default_factory=list, max_length=6)
