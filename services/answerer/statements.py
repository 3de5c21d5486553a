"""A message's own sentences, and one of them copied into an answer word for word.

Code adds sentences to the model's answer in two places (:mod:`.disagreement`, the
other version when the mail disagrees; :mod:`.details`, the details the answer leaves
out), both as the source's exact words with who wrote them and when, so the reader can
weigh them and the verifier checks them like any quote.
"""

from __future__ import annotations

import re
from datetime import datetime

from shared.messages import DraftSentence, EvidenceMessage
from shared.passages import own_text, sender_name

# A sentence ends at ".", "!" or "?" before a space (not inside "1,520.00"), or a line.
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n+")
# Longer, it is a page, not a sentence: copied whole from a stranger's unpunctuated text,
# it would fill the answer, the result, the progress stream and the draft.
MAX_STATEMENT_CHARS = 1000
# A quote inside would break ours; a bracket would read as a citation marker ("[0,480]").
_QUOTES = re.compile('["“”„\\[\\]]')


def sentences(m: EvidenceMessage) -> list[str]:
    """The sentences of the message's own text (no quoted parent, signature or steering)."""
    return _split(own_text(m.body))


def attachment_sentences(m: EvidenceMessage) -> list[str]:
    """The sentences of the message's attachments; a table's row (a line with "|", or
    any line of a CSV file) is one, after its header row and an ellipsis ("KPI | March |
    February ... On-time delivery | 94.1% | 95.6%"): a figure in a table means nothing
    without its column."""
    out: list[str] = []
    for attachment in m.attachments:
        csv = attachment.name.casefold().endswith((".csv", ".tsv"))
        header: str | None = None
        prose: list[str] = []
        for line in attachment.text.splitlines():
            if not (csv and line.strip()) and "|" not in line:
                header = None
                prose.append(line)
                continue
            out.extend(_split("\n".join(prose)))
            prose = []
            row = line.strip()
            if header is None:
                header = row
                out.append(row)
            else:
                out.append(f"{header} ... {row}")
        out.extend(_split("\n".join(prose)))
    return out


# A line that starts a list item ("- Forklift training certificates renewed", "2) ...").
_ITEM = r"[ \t]*(?:[-*•–]|\d{1,2}[.)])[ \t]"


def _split(text: str) -> list[str]:
    # A wrapped line goes on with the next; a blank line, a sentence end or a list item
    # stops it: each item of a list states its own thing ("- Forklift training
    # certificates renewed" / "- Two new pickers start Monday" is not one sentence).
    text = re.sub(rf"(?<![.!?:\n])\n(?!\n|{_ITEM})", " ", text)
    return [s.strip() for s in _SENTENCE_END.split(text) if s.strip()]


def quotable(sentence: str) -> bool:
    """Whether ``sentence`` can be copied as a statement: a question states nothing,
    a quote or a bracket inside would break ours, and a "sentence" of a page (mail
    without full stops, a stranger's stuffed text) is no statement."""
    return len(sentence) <= MAX_STATEMENT_CHARS and not sentence.endswith("?") and not _QUOTES.search(sentence)


def statement(m: EvidenceMessage, sentence: str) -> DraftSentence:
    """``sentence`` word for word, with who wrote it and when, cited to its message."""
    d: datetime | None = m.date
    who = sender_name(m.sender)
    text = f'{who}, {d.day} {d.strftime("%B")}: "{sentence}"' if d else f'{who}: "{sentence}"'
    return DraftSentence(text=text, citations=[m.message_id])
