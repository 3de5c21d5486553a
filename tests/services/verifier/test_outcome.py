"""Cancellation as the verifier judges it: only a run whose record the gateway marked
ends ``cancelled``, and every draft of such a run does."""

from __future__ import annotations

import pytest

from pmsearch.services.verifier.decide import decide
from pmsearch.services.verifier.errors import DraftMismatch
from pmsearch.services.verifier.outcome import cancellation, checked
from pmsearch.shared.messages import StepTrace, Trace
from tests.services.verifier.factory import M1, evidence, request, run_record


def test_any_draft_of_a_cancelled_run_ends_it_cancelled_with_its_trace() -> None:
    draft = request(text=f"The claim was accepted [{M1}].", trace=Trace(steps=[StepTrace(step=1, kind="answer")]))
    record = run_record(draft).model_copy(update={"cancelled_at": 1.0})
    result = decide(cancellation(checked(draft, record), record), evidence())
    assert (result.outcome, result.reason, result.answer) == ("cancelled", "cancelled", None)
    assert [s.step for s in result.trace.steps] == [1]
    assert result.evidence  # what the run found is still shown


def test_a_cancelled_ending_of_a_run_nobody_cancelled_is_refused() -> None:
    draft = request(ending="cancelled")
    with pytest.raises(DraftMismatch):
        cancellation(checked(draft, run_record(draft)), run_record(draft))


def test_a_run_not_cancelled_keeps_its_drafts_ending() -> None:
    draft = request(ending="budget_exhausted")
    assert cancellation(draft, run_record(draft)) == draft
