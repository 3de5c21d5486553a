"""The part of a two-part question the answer leaves out, in another message's words.

"What is invoice INV-2024-0173 for, and has it been paid?" came back with what the
invoice is for, from the invoice, and nothing on the payment, though Bob's reply "the
chairs invoice was paid today by bank transfer" was among the passages. The invoice
cannot say it was paid, and :mod:`.details` reads only the answer's own source. Code
finds the sentence of another evidence message that holds every word of the part the
answer shares nothing with and names what the answer is about (at least ``MIN_SHARED``
of its other words); it is added word for word with who wrote it and when, and goes
with the answer if the verifier removes that (``completes``).

Only whole parts: a part the answer touches with one word is answered, however badly,
and a sentence missing one of the part's words is about something else.
"""

from __future__ import annotations

from collections.abc import Sequence

from pmsearch.services.answerer.details import MIN_SHARED, left_out_part
from pmsearch.services.answerer.statements import quotable, sentences, statement
from pmsearch.shared.messages import DraftSentence, EvidenceMessage
from pmsearch.shared.text.words import prefix_stems as stems


def left_out_statement(
    question: str, answer: Sequence[DraftSentence], evidence: Sequence[EvidenceMessage]
) -> list[DraftSentence]:
    """A sentence of an evidence message the answer does not cite that answers the
    part of the question the answer leaves out; none when there is none."""
    if not answer or not answer[0].citations:
        return []
    said = stems(" ".join(s.text for s in answer))
    part = left_out_part(question, said)
    if not part:
        return []
    about = stems(answer[0].text) | stems(question) - part
    cited = {m for s in answer for m in s.citations}
    best: tuple[int, int, EvidenceMessage, str] | None = None
    for order, m in enumerate(evidence):
        if m.message_id in cited:
            continue
        for sentence in sentences(m):
            words = stems(sentence)
            if not part <= words or not quotable(sentence):
                continue
            shared = len(about & (words - part))
            if shared >= MIN_SHARED and (best is None or shared > best[0]):
                best = (shared, -order, m, sentence)
    return [] if best is None else [statement(best[2], best[3]).model_copy(update={"completes": 0})]


def with_left_out(
    question: str, answer: Sequence[DraftSentence], evidence: Sequence[EvidenceMessage]
) -> list[DraftSentence]:
    """``answer`` with the sentence answering the part it leaves out added after it."""
    return [*answer, *left_out_statement(question, answer, evidence)]
