"""The planner's prompts. Every piece of mail-derived text goes through the call's fence."""

from __future__ import annotations

import json
from typing import Any

from shared.fencing import Fence
from shared.messages import ToolOutcome

NOTE_CHARS = 1200  # one observation as the model reads it
# All observations of one call. The embedded model reads about 70 prompt tokens a
# second on two cores, so the prompt size is the run's main cost.
NOTES_BUDGET = 2000

TOOLS_HELP = """Tools (read-only; arguments can only narrow what you may see):
- search {"query": str, "mode": "keyword"|"semantic"|"hybrid", "limit": int, "senders": [email], "date_from": "YYYY-MM-DD", "date_to": "YYYY-MM-DD", "has_attachment": bool, "folders": [str]}
- read_thread {"thread_id": str}
- read_message {"message_id": str}
- read_attachment_text {"message_id": str, "attachment_name": str}
- find_related {"message_id": str}
- contacts {"query": str}"""

RULES = """You plan searches over a person's mail to answer their question.
Reply with one JSON object: {"action": "search"|"answer"|"give_up", "calls": [{"tool": ..., "arguments": {...}}], "reason": "..."}.
- "search": up to 3 tool calls that run in parallel; use exact terms (numbers, names) with mode "keyword", meaning with "semantic" or "hybrid"; read a whole thread when a hit looks relevant.
- "answer": the observations already contain what answers the question.
- "give_up": the observations show the mail does not answer it.
You can only read mail you were given access to; no tool can reach other people's or other companies' mail."""


# The system prompt never changes, so a server that caches prompt prefixes (llama.cpp
# does) reads it once; the per-call fence rules go in the user turn.
SYSTEM = f"{RULES}\n\n{TOOLS_HELP}"


def plan_messages(question: str, fence: Fence) -> list[dict[str, Any]]:
    return [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": f"Question: {question}\nPlan the first searches."},
    ]


def judge_messages(question: str, notes: list[str], fence: Fence, steps_left: int) -> list[dict[str, Any]]:
    fenced = []
    used = 0
    for note in reversed(notes):  # the latest observations matter most
        block = fence.wrap("observation", note)
        if used + len(block) > NOTES_BUDGET:
            break
        fenced.append(block)
        used += len(block)
    observed = "\n".join(reversed(fenced)) or "(nothing found yet)"
    return [
        {"role": "system", "content": SYSTEM},
        {
            "role": "user",
            "content": (
                f"Question: {question}\n\n{fence.system_rules()}\n\nObservations so far:\n{observed}\n\n"
                + (
                    f"You have {steps_left} step(s) left. Decide the next action."
                    if steps_left > 1
                    else "This is your last step: no more searches. Reply answer if the observations answer the question, else give_up."
                )
            ),
        },
    ]


def observation_note(outcome: ToolOutcome) -> str:
    """One tool outcome as compact text for the model (fenced by the caller)."""
    head = f"{outcome.tool} {json.dumps(outcome.arguments, ensure_ascii=False)[:300]}"
    if not outcome.ok:
        return f"{head}\nrefused: {outcome.error}"
    out = outcome.output
    lines: list[str] = []
    if isinstance(out, list):
        for item in out:
            if isinstance(item, dict) and "snippet" in item:
                lines.append(
                    f"- message_id={item['message_id']} thread_id={item['thread_id']} date={item.get('date')} "
                    f"from={item.get('from')} subject={item.get('subject')}: {item.get('snippet')}"
                )
            elif isinstance(item, dict) and "body" in item:
                lines.append(_message_line(item))
            else:
                lines.append(f"- {json.dumps(item, ensure_ascii=False)[:300]}")
        if not out:
            lines.append("(no results)")
    elif isinstance(out, dict):
        lines.append(_message_line(out))
    text = head + "\n" + "\n".join(lines)
    return text[:NOTE_CHARS]


def _message_line(m: dict[str, Any]) -> str:
    body = " ".join(str(m.get("body", "")).split())[:700]
    return (
        f"- message_id={m.get('message_id')} thread_id={m.get('thread_id')} date={m.get('date')} "
        f"from={m.get('sender')} subject={m.get('subject')}\n  {body}"
    )
