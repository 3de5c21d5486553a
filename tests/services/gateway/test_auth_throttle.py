"""Throttling before authentication, on a clock the test moves."""

from __future__ import annotations

import pytest

from pmsearch.services.gateway.auth_throttle import WINDOW_SECONDS, AuthThrottle
from pmsearch.services.gateway.errors import AuthThrottled
from tests.fixtures.clock import FakeClock


def test_an_address_is_refused_once_its_failures_for_the_minute_are_spent():
    throttle = AuthThrottle(3, clock=FakeClock())
    for _ in range(3):
        throttle.check("198.51.100.7")
        throttle.failed("198.51.100.7")
    with pytest.raises(AuthThrottled) as refused:
        throttle.check("198.51.100.7")
    assert refused.value.extra["retry_after"] == int(WINDOW_SECONDS) + 1
    throttle.check("198.51.100.8")  # another address is not held to it


def test_the_refusal_ends_with_the_minute():
    clock = FakeClock()
    throttle = AuthThrottle(1, clock=clock)
    throttle.failed("198.51.100.7")
    clock.now += WINDOW_SECONDS
    throttle.check("198.51.100.7")
    throttle.failed("198.51.100.7")  # counted in a new minute
    with pytest.raises(AuthThrottled):
        throttle.check("198.51.100.7")


def test_the_table_of_addresses_is_bounded_and_forgets_the_least_recent_first():
    throttle = AuthThrottle(1, max_addresses=2, clock=FakeClock())
    for address in ("a", "b", "c"):
        throttle.failed(address)
    throttle.check("a")  # forgotten
    with pytest.raises(AuthThrottled):
        throttle.check("c")


def test_a_limit_of_zero_throttles_nothing():
    throttle = AuthThrottle(0, clock=FakeClock())
    for _ in range(100):
        throttle.failed("198.51.100.7")
    throttle.check("198.51.100.7")
