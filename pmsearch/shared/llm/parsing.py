"""Turning a model's reply text into a validated pydantic object.

Whatever a provider promised about structured output, the reply is checked here by
code: reasoning blocks are removed, the first JSON object is taken out of any code
fence or surrounding prose, and it must validate strictly against the schema model
(which forbids unknown fields).
"""

from __future__ import annotations

import json
import re
from typing import TypeVar

from pydantic import BaseModel, ValidationError

T = TypeVar("T", bound=BaseModel)

_THINK_BLOCK = re.compile(r"<think>.*?</think>", re.DOTALL | re.IGNORECASE)
_THINK_CLOSE = re.compile(r"</think>", re.IGNORECASE)
_CODE_FENCE = re.compile(r"```[A-Za-z0-9_-]*\s*\n?(.*?)```", re.DOTALL)
_MAX_OBJECT_STARTS = 32  # bounds the scan over "{" positions in a long, broken reply


class OutputError(ValueError):
    """The reply is not a valid object; ``feedback`` is what to tell the model."""

    def __init__(self, feedback: str) -> None:
        super().__init__(feedback)
        self.feedback = feedback


def strip_reasoning(text: str) -> str:
    """Drop ``<think>…</think>`` blocks (Qwen3-style models). Some chat templates open
    the block in the prompt, so a reply may carry only the closing tag: then everything
    before the last ``</think>`` is reasoning too."""
    text = _THINK_BLOCK.sub("", text)
    closes = list(_THINK_CLOSE.finditer(text))
    if closes:
        text = text[closes[-1].end() :]
    return text.strip()


def extract_json_object(text: str) -> str | None:
    """The first complete JSON object in ``text`` (inside a code fence if there is
    one), as its exact source slice, or None."""
    candidates = [m.group(1) for m in _CODE_FENCE.finditer(text)] + [text]
    decoder = json.JSONDecoder()
    for candidate in candidates:
        start = candidate.find("{")
        tries = 0
        while start != -1 and tries < _MAX_OBJECT_STARTS:
            tries += 1
            try:
                obj, end = decoder.raw_decode(candidate, start)
            except json.JSONDecodeError:
                start = candidate.find("{", start + 1)
                continue
            if isinstance(obj, dict):
                return candidate[start:end]
            start = candidate.find("{", end)
    return None


def parse_structured(text: str, schema_model: type[T]) -> T:
    """Validate a reply strictly; raise :class:`OutputError` with model-readable
    feedback when it does not fit."""
    cleaned = strip_reasoning(text)
    if not cleaned:
        raise OutputError("The reply was empty. Reply with one JSON object.")
    payload = cleaned if cleaned.startswith("{") and cleaned.endswith("}") else None
    payload = payload or extract_json_object(cleaned)
    if payload is None:
        raise OutputError("The reply contained no JSON object. Reply with one JSON object only.")
    try:
        return schema_model.model_validate_json(payload, strict=True)
    except ValidationError as exc:
        # The first try may have been a whole reply that only looked like one object
        # ("{...} and also {...}"): give the extracted first object its own chance.
        first = extract_json_object(cleaned)
        if first is not None and first != payload:
            try:
                return schema_model.model_validate_json(first, strict=True)
            except ValidationError:
                pass
        raise OutputError(_feedback(exc)) from exc


def _feedback(exc: ValidationError, limit: int = 12) -> str:
    lines = []
    for err in exc.errors(include_url=False, include_input=False)[:limit]:
        where = ".".join(str(p) for p in err.get("loc", ())) or "(root)"
        lines.append(f"- {where}: {err.get('msg', 'invalid')}")
    more = exc.error_count() - limit
    if more > 0:
        lines.append(f"- ... and {more} more")
    return "The JSON did not match the schema:\n" + "\n".join(lines)
