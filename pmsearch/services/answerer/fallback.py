"""The mail's sentence a written one was made from (answer style ``write_or_extract``).

The small model reads the right sentence and writes it wrong: the reviewer for the
author, mtime for ctime, a date from another message's header. Where the verifier would
remove a written sentence for what it claims, or finds words in it that its sources do
not hold, the sentence of the mail it was made from can stand in its place, word for
word. Code finds that sentence here, before the verifier judges, so the verifier stays
the one judge: it checks the stand-in like any quote and applies the question's rules to
it (:func:`pmsearch.services.verifier.service.verify`).

The sentence is the cited messages' own sentence (or two neighbours, when the written
sentence draws on both) that shares the most with it: its details (dates, amounts,
codes; a detail counts as :data:`DETAIL_WEIGHT` words, as the verifier's alignment
weighs figures) and its words; an attachment's row or sentence only when the mail's own
text shares less. None when nothing shares :data:`MIN_SHARED` words: the written
sentence then stands or falls alone.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from pmsearch.services.answerer.statements import attachment_sentences, chosen_statement, quotable, sentences
from pmsearch.services.answerer.values import details
from pmsearch.shared.messages import DraftSentence, EvidenceMessage, SourceSentence
from pmsearch.shared.text.words import prefix_stems as stems

MIN_SHARED = 2
DETAIL_WEIGHT = 3
# Neighbours joined at most: a written sentence rarely draws on more, and a longer
# stand-in answers more than was asked.
MAX_SENTENCES = 2


def _score(words: set[str], have: set[str], sentence: str) -> int:
    return len(words & stems(sentence)) + DETAIL_WEIGHT * len(have & details(sentence))


def source_sentence(written: DraftSentence, evidence: Mapping[str, EvidenceMessage]) -> SourceSentence | None:
    """The sentence (or two neighbours) of ``written``'s cited messages it was made
    from, as a statement of the mail; None when none shares enough with it."""
    words, have = stems(written.text), details(written.text)
    best: tuple[int, EvidenceMessage, str, list[str]] | None = None
    readers: Sequence[tuple[str, Callable[[EvidenceMessage], list[str]]]] = (
        ("body", sentences), ("attachment", attachment_sentences),
    )
    for message_id in written.citations:
        m = evidence.get(message_id)
        if m is None:
            continue
        for part, read in readers:
            said = read(m)
            for i, first in enumerate(said):
                if not quotable(first):
                    continue
                window = [first]
                score = _score(words, have, first)
                if not score:
                    continue  # a window starts with a sentence the written one draws on
                for after in said[i + 1 : i + MAX_SENTENCES]:
                    # A neighbour joins only for what the first does not already give.
                    joined = _score(words, have, " ".join([*window, after]))
                    if not quotable(after) or joined <= score:
                        break
                    window, score = [*window, after], joined
                # The mail's own text first: an attachment wins only with more.
                if best is None or score > best[0]:
                    best = (score, m, part, window)
    if best is None or best[0] < MIN_SHARED:
        return None
    _, m, part, window = best
    made = chosen_statement(m, part, window)
    return SourceSentence(text=made.text, citations=made.citations)


def with_fallbacks(written: list[DraftSentence], evidence: Sequence[EvidenceMessage]) -> list[DraftSentence]:
    """``written`` with each model sentence's fallback set (code's own statements,
    ``completes``, are the mail's words already)."""
    by_id = {m.message_id: m for m in evidence}
    return [
        s if s.completes is not None else s.model_copy(update={"fallback": source_sentence(s, by_id)})
        for s in written
    ]
