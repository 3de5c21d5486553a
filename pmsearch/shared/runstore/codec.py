"""One serialisation of a run's keys: pydantic JSON for records, the bus envelope for
progress entries. The async store and the synchronous reader both decode through here."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from pmsearch.shared.bus import decode
from pmsearch.shared.messages import EvidenceMessage, ProgressEvent

log = logging.getLogger("pmsearch.runstore")
M = TypeVar("M", bound=BaseModel)


def text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value


def record(run_id: str, what: str, raw: bytes | str | None, model: type[M]) -> M | None:
    """``raw`` as ``model``; None when absent or unreadable (logged): a record any stage
    could have corrupted must not take a reader down with it."""
    if raw is None:
        return None
    try:
        return model.model_validate_json(raw)
    except ValidationError:
        log.warning("run %s: %s unreadable, ignored", run_id, what)
        return None


def evidence(run_id: str, raw: Mapping[Any, Any]) -> dict[str, EvidenceMessage]:
    """The evidence hash, field = message ID. An unreadable entry is skipped (and
    logged): a sentence citing one then fails verification as an unknown citation."""
    found: dict[str, EvidenceMessage] = {}
    for field, value in raw.items():
        message_id = text(field)
        try:
            found[message_id] = EvidenceMessage.model_validate_json(value)
        except ValidationError as exc:
            log.warning("run %s: evidence %s unreadable, skipped: %s", run_id, message_id, exc)
    return found


def ordered(found: Mapping[str, EvidenceMessage], order: Sequence[str] = ()) -> list[EvidenceMessage]:
    """Those named in ``order`` first, in that order, then the rest in the hash's order."""
    first = [found[m] for m in dict.fromkeys(order) if m in found]
    seen = set(order)
    return first + [m for k, m in found.items() if k not in seen]


def progress(fields: Mapping[Any, Any]) -> ProgressEvent | None:
    """A progress entry, or None for one that breaks its contract (several stages write
    the stream; one bad entry must not end a reader)."""
    try:
        return decode(dict(fields), ProgressEvent)
    except (ValueError, KeyError, TypeError):
        return None
