"""The model client package. Imported by the planner and the answerer only: the
verifier has no model credentials and must never import it.

Stages call the model through :func:`call_model`, which returns a :class:`ModelCall`
and records the model metrics (:mod:`pmsearch.shared.llm.metrics`) in one place.
"""

from pmsearch.shared.llm.bookkeeping import ModelCall, call_model
from pmsearch.shared.llm.breaker import CircuitBreaker
from pmsearch.shared.llm.client import ModelClient, ModelUsage, StructuredResult
from pmsearch.shared.llm.errors import ModelError, ModelOutputInvalid, ModelTimeout, ModelUnavailable

__all__ = [
    "CircuitBreaker",
    "ModelCall",
    "ModelClient",
    "ModelError",
    "ModelOutputInvalid",
    "ModelTimeout",
    "ModelUnavailable",
    "ModelUsage",
    "StructuredResult",
    "call_model",
]
