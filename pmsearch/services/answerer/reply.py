"""A model's answer reply read as draft sentences, and the follow-up that asks the
model for a part of the question its answer left out. Pure functions: the model calls
are the service's."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ValidationError

from pmsearch.shared import prompts
from pmsearch.shared.fencing import Fence
from pmsearch.shared.messages import CarriedAnswer, DraftSentence
from pmsearch.shared.passages import Passage, message_ids
from pmsearch.shared.text.shapes import missing


def written(labels: dict[str, str], sentences: list[Any]) -> list[DraftSentence]:
    """The reply's sentences that say something, without the prompt's labels, each
    citing the messages behind the passages it names (``labels``: each label shown to
    its message; an echoed placeholder is dropped)."""
    return [
        DraftSentence(text=prompts.without_labels(s.text.strip()), citations=message_ids(labels, list(s.passages)))
        for s in sentences
        if prompts.says_something(s.text)
    ]


def left_out(question: str, sentences: list[DraftSentence]) -> list[str]:
    """The kinds of fact the question asks for that the answer does not give."""
    return missing(question, [s.text for s in sentences]) if sentences else []


def follow_up(
    texts: prompts.PromptSettings, question: str, shown: list[Passage], carried: CarriedAnswer,
    schema: type[BaseModel], lacking: list[str],
) -> list[dict[str, Any]] | None:
    """The carried attempt's conversation, word for word (so a server that caches
    prefixes reads only the reply and the request), then the model's reply and the
    request to add what it left out; None when the reply no longer fits the passages
    (its labels name none shown)."""
    try:
        reply = schema.model_validate({"answer": [s.model_dump() for s in carried.sentences]})
    except ValidationError:
        return None
    fence = Fence(marker=carried.fence)
    return [
        *prompts.answer_messages(texts, question, shown, fence, carried.notes),
        {"role": "assistant", "content": reply.model_dump_json()},
        {"role": "user", "content": prompts.add_missing(texts, lacking)},
    ]


def leaves_out_less(question: str, first: list[DraftSentence], second: list[DraftSentence]) -> bool:
    """Whether the second answer is the one to keep: it says something and leaves out
    fewer parts of the question than the first."""
    return bool(second) and len(left_out(question, second)) < len(left_out(question, first))
