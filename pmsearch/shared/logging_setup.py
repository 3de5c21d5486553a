"""Logging for every pmsearch process, configured in one place: one JSON object a line
(``PM_LOG_FORMAT=json``, the default) or plain text for reading by eye (``text``).

Each line carries the process's ``service`` and whatever the code handling the current
event bound with :func:`bound` or :func:`bind`: ``run_id``, ``tenant``, ``stage``,
``step``, ``duration_ms``. Bound fields live in a context variable, so concurrent runs
in one process never mix their ids.

What is never logged: mail text, a question, evidence, API keys or secrets. Call sites
log ids, counts, codes and durations only. As a second line of defence, the values of
the process's own secrets (its ``SecretStr`` settings) are replaced by ``[redacted]``
wherever they would appear in a line.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from pydantic import SecretStr
from pythonjsonlogger.json import JsonFormatter

# The fields a line may carry besides its message; anything else passed in ``extra``
# is kept too (``route``, ``status``, ``stream``...), by name.
CONTEXT_FIELDS = ("run_id", "tenant", "stage", "step", "duration_ms")
REDACTED = "[redacted]"
# Short values would redact ordinary words; real secrets are long (settings refuse < 32 bytes).
MIN_REDACT_CHARS = 8

QUIET_LIBRARIES = ("httpx", "httpcore")

_fields: ContextVar[dict[str, Any] | None] = ContextVar("pm_log_fields", default=None)


@contextmanager
def bound(**fields: Any) -> Iterator[dict[str, Any]]:
    """Fields added to every line logged inside the block (in this task and the tasks it
    starts). The dict is yielded, so the block can add to it as it learns more."""
    merged = {**(_fields.get() or {}), **{k: v for k, v in fields.items() if v is not None}}
    token = _fields.set(merged)
    try:
        yield merged
    finally:
        _fields.reset(token)


def task_fields(**fields: Any) -> None:
    """Start this task's own fields (its context is a copy; a shared dict would leak)."""
    _fields.set({**(_fields.get() or {}), **{k: v for k, v in fields.items() if v is not None}})


def bind(**fields: Any) -> None:
    """Add fields to the innermost :func:`bound` block, so a request's closing line names
    a run id the handler learned (the dict is shared with the block's caller)."""
    current = _fields.get()
    if current is None:
        _fields.set({k: v for k, v in fields.items() if v is not None})
    else:
        current.update({k: v for k, v in fields.items() if v is not None})


class _Context(logging.Filter):
    """Copies the bound fields and the service name onto each record."""

    def __init__(self, service: str | None) -> None:
        super().__init__()
        self.service = service

    def filter(self, record: logging.LogRecord) -> bool:
        if self.service and not hasattr(record, "service"):
            record.service = self.service
        for key, value in (_fields.get() or {}).items():
            if not hasattr(record, key):
                setattr(record, key, value)
        return True


class _Redact:
    """Replaces known secret values in a formatted line."""

    def __init__(self, secrets: Iterable[str]) -> None:
        self.secrets = sorted({s for s in secrets if len(s) >= MIN_REDACT_CHARS}, key=len, reverse=True)

    def __call__(self, line: str) -> str:
        for secret in self.secrets:
            if secret in line:
                line = line.replace(secret, REDACTED)
        return line


class JsonLines(JsonFormatter):
    def __init__(self, redact: _Redact) -> None:
        super().__init__(
            "%(levelname)s %(name)s %(message)s",
            rename_fields={"levelname": "level", "name": "logger"},
            timestamp="time",  # ISO 8601, UTC
        )
        self.redact = redact

    def format(self, record: logging.LogRecord) -> str:
        return self.redact(super().format(record))


class TextLines(logging.Formatter):
    def __init__(self, redact: _Redact) -> None:
        super().__init__("%(asctime)s %(levelname)s %(name)s %(message)s")
        self.redact = redact

    def format(self, record: logging.LogRecord) -> str:
        line = super().format(record)
        extras = " ".join(f"{k}={getattr(record, k)}" for k in ("service", *CONTEXT_FIELDS) if hasattr(record, k))
        return self.redact(f"{line} [{extras}]" if extras else line)


def secret_values(settings: Any) -> list[str]:
    """The plain values of every ``SecretStr`` setting of ``settings``."""
    values = []
    for name in type(settings).model_fields:
        value = getattr(settings, name, None)
        if isinstance(value, SecretStr):
            values.append(value.get_secret_value())
    return values


def configure(level: str = "INFO", fmt: str = "json", service: str | None = None,
              secrets: Iterable[str] = (), stream: Any = None) -> logging.Handler:
    """Send every logger's records to one handler on ``stream`` (stderr), replacing any
    handler set up before; Python warnings go through it too."""
    redact = _Redact(secrets)
    handler = logging.StreamHandler(stream or sys.stderr)
    handler.setFormatter(JsonLines(redact) if fmt == "json" else TextLines(redact))
    handler.addFilter(_Context(service))
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level.upper())
    # A line per HTTP call (every model call) says nothing the stage's own lines do not.
    for chatty in QUIET_LIBRARIES:
        logging.getLogger(chatty).setLevel(max(logging.WARNING, root.level))
    logging.captureWarnings(True)
    return handler
