"""The planner's prompt: the shared passage prompt plus the decide instruction, and the
one-line notes that tell the model what was searched. Mail-derived text reaches the
model only inside the call's fence."""

from __future__ import annotations

import json
from typing import Any

from shared.fencing import Fence
from shared.messages import ToolOutcome
from shared.passages import ANSWER, SYSTEM, Passage, user_turn
from shared.text import question as asked

SEARCH = """The passages above do not answer the question. Give up to 3 searches in "searches" that could find the answer: use the exact words, names and numbers of the question or the passages, mode "keyword" for names, numbers and codes. Add a filter only when the question asks for it. If no search could help, give an empty list.
{steps}"""  # noqa: E501 (the model reads the prompt's lines as they are)


# What each kind of fact is called when the model is asked to add it.
WANTED = {
    asked.TIME: "the time",
    asked.DATE: "the date",
    asked.WHEN: "the date or time",
    asked.AMOUNT: "the amount",
    asked.PLACE: "the place (the address or room)",
    asked.PERSON: "the person's name",
    asked.CONTACT: "how to reach them (phone number or e-mail address)",
    asked.LINK: "the link",
    asked.ACCOUNT: "the account (IBAN or account number)",
}


def add_missing(kinds: list[str]) -> str:
    """The follow-up instruction asking the model to add what its answer left out."""
    wanted = [WANTED[k] for k in kinds]
    what = wanted[0] if len(wanted) == 1 else ", ".join(wanted[:-1]) + " and " + wanted[-1]
    return (
        f'Your answer leaves out {what} that the question asks for. Write the whole answer again in "answer", '
        f"adding {what} exactly as the passages give it. If the passages do not give it, write your answer again "
        "unchanged."
    )


def attempt_messages(question: str, passages: list[Passage], notes: list[str], fence: Fence) -> list[dict[str, Any]]:
    """An answer attempt: word for word the prompt the answerer would send, so either
    stage's call reuses the other's cached prefix."""
    return [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": user_turn(question, passages, fence, ANSWER, notes)},
    ]


def search_messages(
    question: str, passages: list[Passage], notes: list[str], fence: Fence, rounds_left: int
) -> list[dict[str, Any]]:
    steps = f"After these searches there will be {rounds_left} more chance(s) to answer." if rounds_left else ""
    return [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": user_turn(question, passages, fence, SEARCH.format(steps=steps), notes)},
    ]


def search_note(outcome: ToolOutcome, new: int) -> str:
    """What one call found, for the next decision: the call and how many messages.
    Never mail text (that comes as passages)."""
    args = {k: v for k, v in outcome.arguments.items() if v not in (None, [], "")}
    head = f"{outcome.tool} {json.dumps(args, ensure_ascii=False)[:200]}"
    if not outcome.ok:
        return f"{head}: refused ({outcome.error_code or 'error'})"
    return f"{head}: {len(outcome.message_ids)} message(s), {new} new"
