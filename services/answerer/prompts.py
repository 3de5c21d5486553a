"""The answerer's prompt: the shared passage prompt with the answer instruction. It
reads the same system prompt as the planner's decide call, so a server that caches
prompt prefixes reads it once."""

from __future__ import annotations

from typing import Any

from shared.fencing import Fence
from shared.passages import SYSTEM, Passage, user_turn

ANSWER = """Write the answer in "answer": 1 to 3 short sentences, each with the passages that state it. If the passages do not answer the question, reply with an empty "answer" list."""


def answer_messages(question: str, passages: list[Passage], fence: Fence) -> list[dict[str, Any]]:
    return [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": user_turn(question, passages, fence, ANSWER)},
    ]
