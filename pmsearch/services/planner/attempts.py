"""What an answer attempt's usable reply hands to the answerer, in either answer style:
each function records the answer in the run's state (deciding ``answer``) when the
reply holds one, and returns the step's note, if any (a search round or the end follows
a reply without an answer)."""

from __future__ import annotations

from typing import Any

from pmsearch.services.planner.schemas import RunState
from pmsearch.shared import extracts, prompts
from pmsearch.shared import passages as P
from pmsearch.shared.fencing import Fence
from pmsearch.shared.messages import CarriedAnswer, CarriedChoice, CarriedSentence


def carried(state: RunState, labels: dict[str, str], fence: Fence, notes: list[str], reply: Any) -> str | None:
    """A written answer goes on as the model wrote it, with what continuing its
    conversation takes (the fence, the notes the prompt showed)."""
    said = [CarriedSentence(text=x.text, passages=list(x.passages)) for x in reply.answer]
    if not any(prompts.says_something(x.text) for x in said):
        return None
    state.carried = CarriedAnswer(sentences=said, labels=labels, fence=fence.marker, notes=notes)
    state.decision = "answer"
    return state.decision


def chosen(
    state: RunState, sentences: list[extracts.Labelled], shown: list[P.Passage], min_coverage: float, reply: Any
) -> str | None:
    """An extract-style choice goes on as the sentences code showed, noted with how much
    of the question they hold with their passages (:func:`pmsearch.shared.extracts.coverage`).
    The small model chooses something for every question, also one the mail does not
    answer: a choice holding less than ``min_coverage`` is no answer."""
    picked = extracts.read_choice(list(reply.sentences), sentences)
    if not picked:
        return None
    held = extracts.coverage(state.run.question, picked, shown)
    note = (
        f"chose {', '.join(s.label for s in picked)} "
        f"(coverage {held.sentences:.2f}, with passages {held.passages:.2f})"
    )
    if held.passages < min_coverage:
        return f"no answer: {note}, under {min_coverage:.2f}"
    state.chosen, state.decision = CarriedChoice(sentences=[s.chosen() for s in picked]), "answer"
    return f"answer: {note}"
