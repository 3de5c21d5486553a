"""The answerer's prompt: the question and the fenced evidence, nothing else."""

from __future__ import annotations

from typing import Any

from shared.fencing import Fence
from shared.messages import EvidenceMessage

MESSAGE_CHARS = 600
# The embedded model reads about 70 prompt tokens a second on two cores: the evidence
# shown is the run's main cost. Quotes are still checked against the whole source.
EVIDENCE_BUDGET = 3200

RULES = """You answer a question about a person's mail using only the evidence messages given.
Reply with one JSON object: {"sentences": [{"citations": ["<message_id>"], "quote": "<exact words from that message>", "text": "<one statement>"}]}.
- Write 1 to 3 statements that answer the question. For each: the message_id it comes from, 3 to 15 words copied exactly from that message that prove it, and the statement in your own words.
- Prefer the most recent message that decides the matter. Only cite message_ids that appear in the evidence. Never invent facts, ids or quotes.
- If the evidence does not answer the question, reply {"sentences": []}."""


def answer_messages(question: str, evidence: list[EvidenceMessage], fence: Fence) -> list[dict[str, Any]]:
    blocks, used = [], 0
    for m in evidence:
        text = (
            f"message_id: {m.message_id}\ndate: {m.date.isoformat() if m.date else 'unknown'}\n"
            f"from: {m.sender}\nsubject: {m.subject}\n\n{m.body[:MESSAGE_CHARS]}"
        )
        for a in m.attachments[:2]:
            text += f"\n\n[attachment {a.name}]\n{a.text[:400]}"
        block = fence.wrap(f"message:{m.message_id}", text)
        if used + len(block) > EVIDENCE_BUDGET:
            break
        blocks.append(block)
        used += len(block)
    return [
        {"role": "system", "content": RULES},
        {
            "role": "user",
            "content": f"Question: {question}\n\n{fence.system_rules()}\n\nEvidence:\n" + "\n".join(blocks),
        },
    ]
