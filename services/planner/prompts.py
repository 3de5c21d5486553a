"""The planner's prompt: the shared passage prompt plus the decide instruction, and the
one-line notes that tell the model what was searched. Mail-derived text reaches the
model only inside the call's fence."""

from __future__ import annotations

import json
from typing import Any

from shared.fencing import Fence
from shared.messages import ToolOutcome
from shared.passages import SYSTEM, Passage, user_turn

DECIDE = """Decide, in the "decision" field:
- "answer": the passages answer the question. Write the answer in "answer".
- "search": the passages do not answer it yet, but more mail may. Give up to 3 calls in "searches"; use the exact words, names and numbers the question or the passages use.
- "not_in_mail": the passages do not answer it and searching more will not help.
{steps}"""

LAST = """Decide, in the "decision" field: "answer" (write the answer in "answer") if the passages answer the question, else "not_in_mail". There are no searches left."""


def decide_messages(
    question: str, passages: list[Passage], notes: list[str], fence: Fence, steps_left: int
) -> list[dict[str, Any]]:
    if steps_left > 1:
        instruction = DECIDE.format(steps=f"You have {steps_left - 1} search step(s) left.")
    else:
        instruction = LAST
    return [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": user_turn(question, passages, fence, instruction, notes)},
    ]


def search_note(outcome: ToolOutcome, new: int, dropped: list[str]) -> str:
    """What one call found, for the next decision: the call, how many messages, and why
    it may have found nothing. Never mail text (that comes as passages)."""
    args = {k: v for k, v in outcome.arguments.items() if v not in (None, [], "")}
    head = f"{outcome.tool} {json.dumps(args, ensure_ascii=False)[:200]}"
    if not outcome.ok:
        return f"{head}: refused ({outcome.error_code or 'error'})"
    found = len(outcome.message_ids)
    note = f"{head}: {found} message(s), {new} new"
    if dropped:
        note += f"; filters the question never mentioned were dropped ({', '.join(dropped)})"
    return note
