"""The model client package. Imported by the planner and the answerer only: the
verifier has no model credentials and must never import it."""

from shared.llm.breaker import CircuitBreaker
from shared.llm.client import ModelClient, ModelUsage, StructuredResult
from shared.llm.errors import ModelError, ModelOutputInvalid, ModelTimeout, ModelUnavailable

__all__ = [
    "CircuitBreaker",
    "ModelClient",
    "ModelError",
    "ModelOutputInvalid",
    "ModelTimeout",
    "ModelUnavailable",
    "ModelUsage",
    "StructuredResult",
]
