"""Which written sentences answer the question, and which only pad it.

The first sentence is the answer; one written again is kept once. A later one must
restate what the question is about (half its content words, at least two), give a part
of the question the sentences before it left out (:func:`pmsearch.shared.text.shapes.missing`),
or go on with the first sentence's own subject (not a month, a weekday or a currency)
and a figure, naming no code that nothing before it names ("... because of a
deductible." "The deductible is EUR 225.00."). A small model pads its answer with
whatever another passage says ("Priya Nair has three applications for the dispatcher
role" after the flight to Hamburg), which is true of its source and answers nothing.

Every later sentence kept rests on the first (``follows``): the verifier removes it
when the first goes. What the model adds to an answer it got wrong is no answer of its
own (a removed "glass cover for the van is not insured" leaves "We pay EUR 3,180.00", the
bodywork's amount, or the windscreen's uninsured EUR 890.00, as if it were the price
asked for).
"""

from __future__ import annotations

import re

from pmsearch.shared.messages import DraftSentence
from pmsearch.shared.text import calendar
from pmsearch.shared.text.question import codes
from pmsearch.shared.text.shapes import missing
from pmsearch.shared.text.words import prefix_stems

_DIGIT = re.compile(r"\d")
# Words two sentences share without sharing a subject: a month, a weekday, a currency.
_NOT_A_SUBJECT = frozenset(
    w[:5] for w in (*calendar.MONTH_NAMES["en"], *calendar.WEEKDAY_NAMES["en"], "eur", "usd", "gbp", "chf")
)
_NOT_WORD = re.compile(r"\W+")


def _folded(text: str) -> str:
    return _NOT_WORD.sub(" ", text.casefold()).strip()


def answering(question: str, written: list[DraftSentence]) -> tuple[list[DraftSentence], int]:
    """The written sentences that answer the question (see the module), and how many were
    the same sentence written again."""
    kept = written[:1]
    repeated = 0
    for s in written[1:]:
        same = next((i for i, k in enumerate(kept) if _folded(k.text) == _folded(s.text)), None)
        if same is not None:
            # The small model writes one sentence twice, citing two passages: one
            # sentence, both passages.
            merged = kept[same].citations + [m for m in s.citations if m not in kept[same].citations]
            kept[same] = kept[same].model_copy(update={"citations": merged})
            repeated += 1
            continue
        elif _addresses(question, [k.text for k in kept], s.text):
            kept.append(s.model_copy(update={"follows": 0}))
    return kept, repeated


def _addresses(question: str, before: list[str], sentence: str) -> bool:
    """Whether a later answer sentence answers the question rather than padding it (see
    the module)."""
    wanted = prefix_stems(question)
    own = prefix_stems(sentence)
    if len(own & wanted) >= min(len(wanted), max(2, len(wanted) // 2)):
        return True
    if len(missing(question, [*before, sentence])) < len(missing(question, before)):
        return True
    if set(codes(sentence)) - set(codes(" ".join([question, *before]))):
        return False  # a code nothing before names is another thing's: "claim CLM-2023-48810 was settled"
    subject = {w for w in (own & prefix_stems(before[0])) - wanted - _NOT_A_SUBJECT if not w.isdigit()}
    return bool(_DIGIT.search(sentence)) and bool(subject)
