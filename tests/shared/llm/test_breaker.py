"""The circuit breaker's states, on a fake clock."""

from __future__ import annotations

from shared.llm.breaker import CircuitBreaker


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_opens_after_consecutive_failures_and_half_opens_after_reset():
    clock = Clock()
    breaker = CircuitBreaker(failures=2, reset_seconds=10, clock=clock)
    breaker.record_failure()
    breaker.record_success()  # success resets the count
    breaker.record_failure()
    assert breaker.state == "closed" and breaker.allow()
    breaker.record_failure()
    assert breaker.state == "open" and not breaker.allow()
    assert breaker.seconds_until_retry() == 10
    clock.now += 10
    assert breaker.state == "half_open"
    assert breaker.allow()  # one trial ...
    assert not breaker.allow()  # ... at a time
    breaker.record_failure()  # the trial failed: open again, for a full period
    assert breaker.state == "open"
    clock.now += 10
    assert breaker.allow()
    breaker.record_success()
    assert breaker.state == "closed" and breaker.allow()


def test_cancelled_trial_frees_the_slot():
    clock = Clock()
    breaker = CircuitBreaker(failures=1, reset_seconds=1, clock=clock)
    breaker.record_failure()
    clock.now += 1
    assert breaker.allow()
    breaker.release_trial()
    assert breaker.allow()
