"""A small circuit breaker for the model endpoint.

Closed: calls pass, consecutive failures are counted. After ``failures`` of them in a
row it opens: calls are refused at once (no network, no waiting), so a dead model costs
a run microseconds rather than its whole time budget. After ``reset_seconds`` it is
half-open: one trial call passes; success closes it, failure opens it again.

What counts as a failure is the caller's judgement (:mod:`pmsearch.shared.llm.client` counts only
what shows the endpoint is unwell); an outcome that proves nothing either way is
:meth:`CircuitBreaker.release_trial`, which frees the trial slot if the call held it.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Literal

State = Literal["closed", "open", "half_open"]


class CircuitBreaker:
    def __init__(
        self,
        failures: int = 3,
        reset_seconds: float = 30.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.failures = max(1, failures)
        self.reset_seconds = reset_seconds
        self._clock = clock
        self._consecutive = 0
        self._opened_at: float | None = None
        self._trial_in_flight = False
        # Shared by every coroutine of a process (and possibly threads): keep the state
        # transitions atomic.
        self._lock = threading.Lock()

    @property
    def state(self) -> State:
        with self._lock:
            return self._state()

    def _state(self) -> State:
        if self._opened_at is None:
            return "closed"
        if self._clock() - self._opened_at >= self.reset_seconds:
            return "half_open"
        return "open"

    def allow(self) -> bool:
        """Whether a call may go ahead now. In half-open state only one trial at a time."""
        return self.admit() is not None

    def admit(self) -> State | None:
        """Like :meth:`allow`, saying how the call goes ahead: ``closed`` (an ordinary
        call), ``half_open`` (the trial), or None (refused)."""
        with self._lock:
            state = self._state()
            if state == "closed":
                return "closed"
            if state == "half_open" and not self._trial_in_flight:
                self._trial_in_flight = True
                return "half_open"
            return None

    def record_success(self) -> None:
        with self._lock:
            self._consecutive = 0
            self._opened_at = None
            self._trial_in_flight = False

    def record_failure(self) -> None:
        with self._lock:
            self._consecutive += 1
            if self._trial_in_flight or self._consecutive >= self.failures:
                self._opened_at = self._clock()
            self._trial_in_flight = False

    def release_trial(self) -> None:
        """The trial proved nothing (cancelled, refused as a bad request): free the
        half-open trial slot. Only the call :meth:`admit` let through as the trial may
        call this."""
        with self._lock:
            self._trial_in_flight = False

    def seconds_until_retry(self) -> float:
        with self._lock:
            if self._opened_at is None:
                return 0.0
            return max(0.0, self.reset_seconds - (self._clock() - self._opened_at))
