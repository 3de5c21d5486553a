"""The answerer's prompt: the shared passage prompt with the answer instruction. It
reads the same system prompt as the planner's decide call, so a server that caches
prompt prefixes reads it once."""

from __future__ import annotations

from typing import Any

from shared.fencing import Fence
from shared.passages import ANSWER, SYSTEM, Passage, user_turn


def answer_messages(question: str, passages: list[Passage], fence: Fence) -> list[dict[str, Any]]:
    return [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": user_turn(question, passages, fence, ANSWER)},
    ]
