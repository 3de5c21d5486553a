"""Errors of the model client.

    PmError
    └── ModelError              anything that went wrong talking to a model
        ├── ModelUnavailable    refused, 5xx/429 after retries, or the circuit is open
        │   └── ModelTimeout    no answer within the call's timeout or the run's deadline
        └── ModelOutputInvalid  answered, twice, with output that fails the schema

``ModelTimeout`` is a kind of ``ModelUnavailable`` so that a caller that turns an
unavailable model into the ``degraded`` outcome catches both with one clause.
"""

from __future__ import annotations

from shared.errors import PmError


class ModelError(PmError):
    status = 502
    code = "model_error"
    title = "Model error"


class ModelUnavailable(ModelError):
    status = 503
    code = "model_unavailable"
    title = "Model unavailable"


class ModelTimeout(ModelUnavailable):
    status = 504
    code = "model_timeout"
    title = "Model timed out"


class ModelOutputInvalid(ModelError):
    status = 502
    code = "model_output_invalid"
    title = "Model output does not match its schema"
