"""The passages as sentences to choose from: the extract answer style's reading.

A small model writes wrong sentences about mail it read right (the reviewer for the
author, one date for another). In the extract style it writes none: every sentence the
passages show gets a label (S1, S2, ...), the model replies with the labels of the few
that answer, constrained at decoding to the labels shown, and the answer is made of
those sentences word for word, in the mail's own language (the answerer's
:mod:`pmsearch.services.answerer.statements`). Both model-calling stages show the
sentences the same way, as they show passages.

The model never abstains on its own, so the planner weighs its choice: how much of the
question's weighted words (:mod:`pmsearch.shared.relevance`) the chosen sentences hold,
alone and with their passage (its subject and the other sentences shown of it).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from pmsearch.shared import relevance
from pmsearch.shared.fencing import Fence
from pmsearch.shared.messages import ChosenSentence
from pmsearch.shared.passages import Passage

MAX_CHOSEN = 3  # an answer is a sentence or two; a third for a disagreement or a list
_LINE_BREAKS = re.compile(r"\s*\n\s*")


@dataclass(frozen=True)
class Labelled:
    label: str  # "S1", "S2", ... in the order shown
    passage: Passage
    part: str
    text: str

    def chosen(self) -> ChosenSentence:
        return ChosenSentence(message_id=self.passage.message_id, part=self.part, text=self.text)


def labelled(passages: list[Passage]) -> list[Labelled]:
    """Every sentence the passages show, labelled in the order shown."""
    out: list[Labelled] = []
    for p in passages:
        for part, text in p.sentences:
            out.append(Labelled(f"S{len(out) + 1}", p, part, text))
    return out


def render(passages: list[Passage], fence: Fence) -> str:
    """The passages as :func:`pmsearch.shared.passages.render` shows them, each sentence
    on a line of its own after its label, a part other than the sender's own words
    named where it starts. A passage showing no sentence shows its subject only."""
    if not passages:
        return "(no evidence found)"
    blocks = []
    sentences = iter(labelled(passages))
    for p in passages:
        lines = [f"{p.ref} | {p.header}"]
        part = "body"
        for _ in p.sentences:
            s = next(sentences)
            named = f"[{s.part.split(':', 1)[1]}] " if s.part != part and ":" in s.part else ""
            lines.append(f"{s.label} {named}{_LINE_BREAKS.sub(' ', s.text)}")
            part = s.part
        blocks.append("\n".join(lines))
    return fence.wrap("evidence", "\n\n".join(blocks))


def read_choice(labels: list[str], shown: list[Labelled]) -> list[Labelled]:
    """The sentences named by ``labels``, once each, in the order shown (the decoding
    constraint keeps unknown labels out; one is dropped all the same)."""
    wanted = set(labels)
    return [s for s in shown if s.label in wanted][:MAX_CHOSEN]


@dataclass(frozen=True)
class Coverage:
    """The share of the question's weight the chosen sentences hold, alone
    (``sentences``) and with the rest of their passages (``passages``: subject and the
    other sentences shown of the same messages)."""

    sentences: float
    passages: float


def coverage(question: str, chosen: list[Labelled], passages: list[Passage]) -> Coverage:
    """How much of the question the choice holds (see :class:`Coverage`), each word of the
    question weighted by how few sentences of all the passages hold it."""
    every = [relevance.terms(text) for p in passages for _, text in p.sentences]
    weights = relevance.Weights.of(question, every)
    total = sum(weights.weight.values())
    if not total or not chosen:
        return Coverage(0.0, 0.0)
    own = frozenset().union(*(relevance.terms(s.text) for s in chosen))
    around = own.union(*(
        relevance.terms(p.header) | frozenset().union(*(relevance.terms(t) for _, t in p.sentences))
        for p in {s.passage.ref: s.passage for s in chosen}.values()
    ))
    return Coverage(round(weights.score(own) / total, 3), round(weights.score(around) / total, 3))
