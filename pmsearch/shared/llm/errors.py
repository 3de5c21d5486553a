"""Errors of the model client.

    PmError
    └── ModelError              anything that went wrong talking to a model
        ├── ModelUnavailable    refused, 5xx/429 after retries, or the circuit is open
        │   └── ModelTimeout    no answer within the call's timeout or the run's deadline
        └── ModelOutputInvalid  answered, twice, with output that fails the schema

``ModelTimeout`` is a kind of ``ModelUnavailable`` so that a caller that turns an
unavailable model into the ``degraded`` outcome catches both with one clause.

Every error the client raises says what the call had spent when it gave up
(``attempts``, ``prompt_tokens``, ``completion_tokens``): two invalid replies still
cost their tokens, and a run's usage must show them.
"""

from __future__ import annotations

from typing import Any

from pmsearch.shared.errors import PmError


class ModelError(PmError):
    status = 502
    code = "model_error"
    title = "Model error"

    def __init__(
        self,
        detail: str,
        *,
        attempts: int = 0,
        prompt_tokens: int = 0,
        completion_tokens: int = 0,
        **extra: Any,
    ) -> None:
        super().__init__(detail, **extra)
        self.attempts = attempts
        self.prompt_tokens = prompt_tokens
        self.completion_tokens = completion_tokens

    def spent(self, attempts: int, prompt_tokens: int, completion_tokens: int) -> None:
        """Record what the call had spent before this error (set by the client, which
        alone knows it)."""
        self.attempts = attempts
        self.prompt_tokens = prompt_tokens
        self.completion_tokens = completion_tokens


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
