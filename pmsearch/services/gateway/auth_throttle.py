"""Throttling before authentication: a client address that has sent
``PM_AUTH_FAILURES_PER_MINUTE`` wrong credentials (an unknown, expired or revoked API
key, a wrong admin token) in its current minute gets 429 ``auth_throttled`` with
``Retry-After`` until that minute ends, before its next credential is even looked up.

Kept in this replica's memory, not in Redis: an unauthenticated flood must not be able to
make the gateway write to the store every tenant shares. So the limit is per replica (n
replicas let n times as many guesses through), and the table of addresses is bounded
(the least recently seen are forgotten first). A request that sends no credential at all
is not a guess and is not counted. Behind a proxy every client shares the proxy's
address: set the limit for what the proxy forwards, or 0 to turn it off.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable

from pmsearch.services.gateway import metrics
from pmsearch.services.gateway.errors import AuthThrottled

WINDOW_SECONDS = 60.0


class AuthThrottle:
    def __init__(
        self, failures_per_minute: int, *, max_addresses: int = 10_000, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.limit = failures_per_minute
        self.max_addresses = max_addresses
        self.clock = clock
        self._failures: OrderedDict[str, tuple[float, int]] = OrderedDict()  # address -> (window start, count)

    def check(self, address: str | None) -> None:
        """Raise :class:`AuthThrottled` while ``address`` has used up its failures."""
        if not self.limit or not address or address not in self._failures:
            return
        started, count = self._failures[address]
        left = started + WINDOW_SECONDS - self.clock()
        if left <= 0:
            del self._failures[address]
        elif count >= self.limit:
            metrics.AUTH_THROTTLED.inc()
            raise AuthThrottled(
                f"too many wrong credentials from this address; try again in {int(left) + 1} s", int(left) + 1
            )

    def failed(self, address: str | None) -> None:
        """Count one wrong credential from ``address``."""
        if not self.limit or not address:
            return
        now = self.clock()
        started, count = self._failures.pop(address, (now, 0))
        if now - started >= WINDOW_SECONDS:
            started, count = now, 0
        self._failures[address] = (started, count + 1)
        while len(self._failures) > self.max_addresses:
            self._failures.popitem(last=False)
