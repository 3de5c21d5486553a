"""This gateway replica's own capacity, and waits that end when their client leaves.

A synchronous run wait (``XREAD BLOCK`` in a loop), an event stream (the same) and a
direct call to the searcher (``BLPOP``) each hold a connection of the Redis pool for as
long as they last. Each kind has a limit (``PM_MAX_WAITING_RUNS``,
``PM_MAX_EVENT_STREAMS``, ``PM_MAX_DIRECT_SEARCHES``) whose sum stays below the pool
(``PM_REDIS_MAX_CONNECTIONS``, checked by the settings); past a limit a request is
refused at once with ``503`` and ``Retry-After`` instead of queueing for a connection.
The per-key limits of :mod:`pmsearch.services.gateway.limits` (``429``) are shared by replicas
through Redis; these are per process, in memory, and cost nothing to check.

A tenant may hold at most its share of each kind (``PM_TENANT_SHARE``, half by default,
at least one slot): past it, its request is ``429`` ``tenant_busy`` with ``Retry-After``,
while other tenants still find slots. Requests with the admin token count against the
tenant they act on.

A client that goes away stops its wait: the work is cancelled (freeing its connection
and its slot) instead of polling Redis until the run's deadline.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any, Literal, TypeVar

from sse_starlette.sse import EventSourceResponse
from starlette.types import Receive, Scope, Send

from pmsearch.services.gateway import metrics
from pmsearch.services.gateway.auth import Principal
from pmsearch.services.gateway.errors import Overloaded, TenantBusy
from pmsearch.services.gateway.limits import KeyLimits, StreamSlot
from pmsearch.shared.settings import GatewaySettings

T = TypeVar("T")
RETRY_AFTER_SECONDS = 1  # slots free as runs end and searches answer: seconds


class ClientGone(Exception):
    """The client disconnected while its request waited; nobody is left to answer."""


class Capacity:
    """At most ``limit`` holders at once, and at most ``per_tenant`` of one tenant; one
    more is refused at once (no queue)."""

    def __init__(self, kind: str, limit: int, setting: str, share: float = 1.0) -> None:
        self.kind = kind
        self.limit = limit
        self.setting = setting
        self.per_tenant = max(1, math.floor(limit * share))
        self.held = 0
        self.held_by: Counter[str] = Counter()

    def take(self, tenant: str) -> Ticket:
        if self.held >= self.limit:
            metrics.OVERLOADED.labels(self.kind).inc()
            raise Overloaded(
                f"this gateway is at its limit of {self.limit} {self.kind.replace('_', ' ')} ({self.setting}); "
                "retry shortly",
                retry_after=RETRY_AFTER_SECONDS,
            )
        if self.held_by[tenant] >= self.per_tenant:
            metrics.TENANT_BUSY.labels(self.kind).inc()
            raise TenantBusy(
                f"this tenant holds its share of {self.per_tenant} {self.kind.replace('_', ' ')} on this gateway "
                "(PM_TENANT_SHARE); retry shortly",
                retry_after=RETRY_AFTER_SECONDS,
            )
        self.held += 1
        self.held_by[tenant] += 1
        metrics.ADMITTED.labels(self.kind).inc()
        return Ticket(self, tenant)


class Ticket:
    """One held slot; :meth:`release` gives it back (once, however often it is called)."""

    def __init__(self, capacity: Capacity, tenant: str) -> None:
        self._capacity: Capacity | None = capacity
        self._tenant = tenant

    def release(self) -> None:
        if self._capacity is not None:
            self._capacity.held -= 1
            self._capacity.held_by[self._tenant] -= 1
            if not self._capacity.held_by[self._tenant]:
                del self._capacity.held_by[self._tenant]
            metrics.ADMITTED.labels(self._capacity.kind).dec()
            self._capacity = None


Kind = Literal["waiting_runs", "event_streams", "direct_searches"]


class Admission:
    """The replica's three capacities, and the key's own limits taken with them."""

    def __init__(self, settings: GatewaySettings, limits: KeyLimits) -> None:
        share = settings.tenant_share
        self.limits = limits
        self.capacities = {
            "waiting_runs": Capacity("waiting_runs", settings.max_waiting_runs, "PM_MAX_WAITING_RUNS", share),
            "event_streams": Capacity("event_streams", settings.max_event_streams, "PM_MAX_EVENT_STREAMS", share),
            "direct_searches": Capacity(
                "direct_searches", settings.max_direct_searches, "PM_MAX_DIRECT_SEARCHES", share
            ),
        }

    @asynccontextmanager
    async def hold(
        self, kind: Kind, principal: Principal, *, tenant: str | None = None,
        key_limit: Literal["rate", "stream"] | None = None,
    ) -> AsyncIterator[Hold]:
        """A slot of ``kind`` on this replica for ``tenant`` (the key's own by default;
        the admin names the tenant it acts on), then, for a key, one search of its rate
        (``"rate"``) or one of its stream slots kept renewed (``"stream"``). This
        replica's capacity comes first: a refused request spends nothing of the key's.
        All is given back when the block ends, unless :meth:`Hold.stream` handed it to
        a response."""
        owner = tenant if tenant is not None else principal.record.tenant_id
        held = Hold(self.capacities[kind].take(owner))
        try:
            if principal.key is not None and key_limit == "rate":
                await self.limits.take_search(principal.key.key_id)
            elif principal.key is not None and key_limit == "stream":
                held.slot = await self.limits.open_stream(principal.key.key_id)
            if held.slot is None:
                yield held
            else:
                async with held.slot.renewed():
                    yield held
        finally:
            if not held.handed_over:
                if held.slot is not None:
                    await held.slot.release()
                held.ticket.release()


class Hold:
    """What :meth:`Admission.hold` took: this replica's ticket and maybe the key's slot."""

    def __init__(self, ticket: Ticket) -> None:
        self.ticket = ticket
        self.slot: StreamSlot | None = None
        self.handed_over = False

    def stream(self, events: AsyncIterator[dict[str, Any]], **kwargs: Any) -> HeldEventSource:
        """An SSE response of ``events`` that keeps what is held until it ends, however it
        ends (finished, client gone, never started); the block no longer gives it back."""
        self.handed_over = True
        source = self.slot.stream(events) if self.slot is not None else events
        return HeldEventSource(source, ping=5, release=self.ticket.release, **kwargs)


async def _disconnected(receive: Receive) -> None:
    # The body has been read: the next message is the client hanging up.
    while (await receive())["type"] != "http.disconnect":
        pass


async def unless_client_leaves(receive: Receive, work: Awaitable[T], kind: str) -> T:
    """The result of ``work``, or :class:`ClientGone` once the client disconnects
    (``work`` is then cancelled)."""
    task = asyncio.ensure_future(work)
    watcher = asyncio.ensure_future(_disconnected(receive))
    try:
        await asyncio.wait({task, watcher}, return_when=asyncio.FIRST_COMPLETED)
        if task.done():
            return task.result()
        metrics.CLIENT_GONE.labels(kind).inc()
        raise ClientGone(kind)
    finally:
        for pending in (task, watcher):
            pending.cancel()
        with contextlib.suppress(BaseException):
            await asyncio.gather(task, watcher, return_exceptions=True)


class HeldEventSource(EventSourceResponse):
    """An SSE response that calls ``release`` when it ends, however it ends: finished,
    client gone (sse-starlette cancels the stream), or never started."""

    def __init__(self, *args: Any, release: Callable[[], None], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._release = release

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await super().__call__(scope, receive, send)
        finally:
            self._release()
