"""A message's own sentences, and one of them copied into an answer word for word.

Code adds sentences to the model's answer in two places (:mod:`.disagreement`, the
other version when the mail disagrees; :mod:`.details`, the details the answer leaves
out), both as the source's exact words with who wrote them and when, so the reader can
weigh them and the verifier checks them like any quote.
"""

from __future__ import annotations

import re
from datetime import datetime

from pmsearch.shared.messages import DraftSentence, EvidenceMessage
from pmsearch.shared.text.mail import own_text, sender_name
from pmsearch.shared.text.sentences import prose_sentences, table_sentences

# Longer, it is a page, not a sentence: copied whole from a stranger's unpunctuated text,
# it would fill the answer, the result, the progress stream and the draft.
MAX_STATEMENT_CHARS = 1000
# A quote inside would break ours; a bracket would read as a citation marker ("[0,480]").
_QUOTES = re.compile('["“”„\\[\\]]')


def sentences(m: EvidenceMessage) -> list[str]:
    """The sentences of the message's own text (no quoted parent, signature or steering)."""
    return prose_sentences(own_text(m.body))


def attachment_sentences(m: EvidenceMessage) -> list[str]:
    """The sentences of the message's attachments, a table's row with its header
    (:func:`pmsearch.shared.text.sentences.table_sentences`)."""
    return [s for attachment in m.attachments for s in table_sentences(attachment.name, attachment.text)]


# What is in a mail's own text and still no sender's prose: a patch trailer
# ("Signed-off-by: ...", "Cc: ..."), a shell line ("$ make ..."), a diff's file list. A
# sentence holding one was made of lines without stops run together.
_NOT_PROSE = re.compile(
    r"\b(?:[A-Z][a-z]+-)+by:\s|(?:^|\s)(?:Cc|Fixes|Link|Closes):\s|^\$\s|\s\|\s+\d+\s+[-+]+"
)
MIN_WORDS = 3  # fewer is a greeting, a name or a one-word sign-off: no statement


def quotable(sentence: str) -> bool:
    """Whether ``sentence`` can be copied as a statement: a question states nothing,
    a quote or a bracket inside would break ours, a "sentence" of a page (mail without
    full stops, a stranger's stuffed text) is no statement, and neither is a line of
    the mail that is not prose (a trailer, a shell line) or a word or two."""
    return (
        len(sentence) <= MAX_STATEMENT_CHARS and not sentence.endswith("?") and not _QUOTES.search(sentence)
        and not _NOT_PROSE.search(sentence) and len(sentence.split()) >= MIN_WORDS
    )


def statement(m: EvidenceMessage, sentence: str) -> DraftSentence:
    """``sentence`` word for word, with who wrote it and when, cited to its message."""
    return DraftSentence(text=f'{_who_and_when(m)}: "{sentence}"', citations=[m.message_id])


def _who_and_when(m: EvidenceMessage) -> str:
    """"Sabine Roth, 3 April": the sender's name and the day the message was sent."""
    d: datetime | None = m.date
    return sender_name(m.sender) + (f", {d.day} {d.strftime('%B')}" if d else "")



# The quote marks a chosen sentence is set in: the first pair none of its own double
# quotes would close (the verifier, pmsearch.shared.text.quotes, reads « » as one quote
# whatever straight or curly quotes it holds).
_OUTER_QUOTES = (('"', '"'), ("«", "»"), ("「", "」"))
_DOUBLE_MARKS = re.compile('["“”„‟＂«»「」『』〝〞〟]')


def chosen_statement(m: EvidenceMessage, part: str, chosen: list[str]) -> DraftSentence:
    """Sentences the model chose of one part of a message (extract style), word for word
    as one statement, with who wrote them and when: the sender, and the author the
    message quotes or forwards (``part`` as :mod:`pmsearch.shared.passages` names it).
    Never changed: set in quote marks its own quotes do not close, so the verifier finds
    the whole in the message."""
    kind, _, label = part.partition(":")
    sentence = " ".join(chosen)
    marks = set(_DOUBLE_MARKS.findall(sentence))
    # A straight quote is closed by any double quote inside; the others only by their own.
    pairs = _OUTER_QUOTES[1:] if marks else _OUTER_QUOTES
    opening, closing = next(((o, c) for o, c in pairs if not marks & {o, c}), pairs[-1])
    who = _who_and_when(m)
    # An attachment's name is no word of its message's text: the verifier would read
    # "HM-88213.pdf" as a code no source holds. The citation names the part.
    if kind in ("quoted", "forwarded") and " from " in label:
        who += f", {kind} from {label.split(' from ', 1)[1]}"
    return DraftSentence(text=f"{who}: {opening}{sentence}{closing}", citations=[m.message_id])
