"""Planner errors.

    PmError
    └── PlannerError
        └── RunStateMissing   an observation for a run the planner has no state for
"""

from pmsearch.shared.errors import PmError


class PlannerError(PmError):
    code = "planner"
    title = "Planner error"


class RunStateMissing(PlannerError):
    code = "run_state_missing"
    title = "No state for this run"
