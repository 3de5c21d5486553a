"""A per-process cache for work done on mail text.

The same messages come back run after run and call after call of a run, and reading
them (steering marks at about 400 ns a character, quote and signature cuts, stems) was
a tenth or more of a stage's CPU under load. A text past the size limit is worked on
afresh rather than held, so the cache's memory stays bounded by count times limit.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache, wraps
from typing import Any, TypeVar

F = TypeVar("F", bound=Callable[..., Any])

TEXT_CACHE_CHARS = 64_000


def _chars(args: tuple[Any, ...]) -> int:
    size = 0
    for a in args:
        if isinstance(a, str):
            size += len(a)
        elif isinstance(a, tuple):
            size += _chars(a)
    return size


def cached_text(maxsize: int, limit: int = TEXT_CACHE_CHARS) -> Callable[[F], F]:
    """Cache ``fn`` (a pure function of hashable arguments) for calls whose text
    arguments, strings and tuples of them, hold at most ``limit`` characters."""

    def decorate(fn: F) -> F:
        cached = lru_cache(maxsize=maxsize)(fn)

        @wraps(fn)
        def call(*args: Any) -> Any:
            return cached(*args) if _chars(args) <= limit else fn(*args)

        return call  # type: ignore[return-value]

    return decorate
