"""The verifier's errors, rooted in :class:`pmsearch.shared.errors.PmError`.

    PmError
    └── VerifierError
        ├── RequestContractError   a drafts entry that does not match VerificationRequested
        ├── DraftMismatch          a draft whose run, tenant, scope or question is not the run's record
        ├── StoreError             Redis refused or failed a read or write
        │   ├── RunBusy            another draft of the run holds the finishing lease
        │   └── ResultNotReplicated  no replica took the result in time (Sentinel mode)
        └── AuditInputError        a draft or evidence file given to ``pmsearch verify`` is unusable

Verification itself never raises: a sentence that fails is removed and recorded, not an
error. These errors are about the plumbing around it.
"""

from __future__ import annotations

from pmsearch.shared.errors import ContractError, PmError


class VerifierError(PmError):
    code = "verifier"
    title = "Verifier error"


class RequestContractError(VerifierError, ContractError):
    """Retrying cannot fix a message that breaks its contract: it goes to dead letters."""

    status = 422
    code = "verification_request_invalid"
    title = "Verification request does not match its contract"


class DraftMismatch(VerifierError, ContractError):
    """A draft that does not match the gateway's record of its run (forged, or for a run
    the gateway never admitted): it never finishes a run; it goes to dead letters."""

    status = 422
    code = "draft_mismatch"
    title = "Draft does not match its run"


class StoreError(VerifierError):
    """Transient by assumption: the message stays pending and is retried."""

    status = 503
    code = "verifier_store"
    title = "Result store unavailable"


class RunBusy(StoreError):
    """Another draft of the run is being finished and its lease has not run out: this
    one stays pending and is retried, so it finishes the run if the other never does."""

    code = "run_busy"
    title = "Run being finished by another draft"


class ResultNotReplicated(StoreError):
    """Sentinel mode: the stored result reached fewer replicas than
    ``PM_REDIS_RESULT_REPLICAS`` in time, so the run is not announced; the draft stays
    pending and its retry announces the same stored result once a replica holds it."""

    code = "result_not_replicated"
    title = "Result not yet on a replica"


class AuditInputError(VerifierError):
    status = 400
    code = "verify_input"
    title = "Cannot read the draft or evidence to verify"
