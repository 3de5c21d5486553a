"""One soak client: starts an agentic run and follows it to its one result through
gateway kills, as a careful client would.

* Every start carries an ``Idempotency-Key`` of its own: a request sent again follows
  the run the first one started, so a cut never starts (or pays for) a second run.
* ``503``/``429``, or ``409`` while the first request is still starting its run: wait
  ``Retry-After``, send again.
* Connection refused: the gateway is restarting; send again shortly.
* An SSE stream cut after its headers: resume at ``GET /v1/runs/{id}/events`` with
  ``Last-Event-ID`` until ``done``.
* A request cut before the client learned its run id (a waiting request, whose id comes
  with the result; a stream cut before its headers): counted, and sent again with the
  same key. A run no client follows (recorded by a gateway killed before it published
  the run; the watchdog ends it) is audited in Redis like every other and counted as
  ended unread.
* An ``error`` event or a ``504`` (the run outlived the gateway's wait): counted, then
  ``GET /v1/runs/{id}`` until the result, which is not a relayed ``done``.
"""

from __future__ import annotations

import asyncio
import json
import re
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import httpx

from bench._harness import retry_after, sse_events

RECONNECT_SECONDS = 0.3
_RUN_ID = re.compile(r"/v1/runs/([0-9a-f]{32})")


@dataclass
class Client:
    index: int
    kind: str  # "sse" or "wait"
    question: str
    run_id: str | None = None  # the run it followed to the end
    relayed_done: int = 0  # `done` events (SSE) or results (waiting) the gateway relayed
    result: dict[str, Any] | None = None
    wall: float | None = None
    resumes: int = 0
    cut_off: int = 0  # requests cut before the run id was known
    error_events: int = 0
    wait_timeouts: int = 0
    refused: Counter[int] = field(default_factory=Counter)
    server_errors: list[int] = field(default_factory=list)
    other_errors: list[str] = field(default_factory=list)


async def run_client(http: httpx.AsyncClient, key: str, c: Client, give_up: float) -> None:
    started = time.monotonic()
    auth = {"Authorization": f"Bearer {key}"}
    start = {**auth, "Idempotency-Key": f"soak-{c.index}-{uuid.uuid4().hex}"}
    body = {"query": c.question, "mode": "agentic"}
    last_id: str | None = None
    while time.monotonic() < give_up and c.relayed_done == 0:
        try:
            if c.run_id is not None:
                last_id = await _resume(http, auth, c, last_id)
            elif c.kind == "sse":
                last_id = await _start_stream(http, start, body, c)
            else:
                await _start_wait(http, start, body, c)
        except httpx.ConnectError:
            await asyncio.sleep(RECONNECT_SECONDS)  # the gateway is down: nothing was sent
        except httpx.TransportError:
            if c.run_id is None:
                c.cut_off += 1  # else a stream cut after its headers: resumed next round
            await asyncio.sleep(RECONNECT_SECONDS)
        if c.error_events or c.wait_timeouts:
            await _poll(http, auth, c, give_up)
            break
    if c.relayed_done:
        c.wall = time.monotonic() - started


async def _refused(resp: httpx.Response, c: Client) -> bool:
    """Count and wait out a refusal or a server error; True when ``resp`` was one."""
    if resp.status_code in (409, 429, 503):
        c.refused[resp.status_code] += 1
        wait = retry_after(resp)
        if wait is None:
            c.server_errors.append(resp.status_code)  # an overload answer must say when
        await asyncio.sleep(min(wait if wait is not None else 1.0, 5.0))
        return True
    if resp.status_code >= 500 and resp.status_code != 504:
        c.server_errors.append(resp.status_code)
        await asyncio.sleep(RECONNECT_SECONDS)
        return True
    return False


async def _relay(resp: httpx.Response, c: Client, last_id: str | None) -> str | None:
    """Read one stream to its end; the last relayed event id."""
    async for ev in sse_events(resp):
        if ev.id:
            last_id = ev.id
        if ev.event == "done":
            c.relayed_done += 1
            c.result = json.loads(ev.data)
        elif ev.event == "error":
            c.error_events += 1
    return last_id


async def _start_stream(http: httpx.AsyncClient, auth: dict, body: dict, c: Client) -> str | None:
    headers = {**auth, "Accept": "text/event-stream"}
    async with http.stream("POST", "/v1/search", json=body, headers=headers) as resp:
        if await _refused(resp, c):
            return None
        if resp.status_code != 200:
            await resp.aread()
            c.other_errors.append(f"{resp.status_code} {resp.text[:200]}")
            await asyncio.sleep(1.0)  # counted; sent again
            return None
        c.run_id = resp.headers["X-Run-Id"]
        return await _relay(resp, c, None)


async def _resume(http: httpx.AsyncClient, auth: dict, c: Client, last_id: str | None) -> str | None:
    headers = {**auth, "Accept": "text/event-stream"}
    if last_id:
        headers["Last-Event-ID"] = last_id
    async with http.stream("GET", f"/v1/runs/{c.run_id}/events", headers=headers) as resp:
        if await _refused(resp, c):
            return last_id
        if resp.status_code != 200:
            await resp.aread()
            c.other_errors.append(f"resume: {resp.status_code} {resp.text[:200]}")
            c.error_events += 1  # nothing more to resume: fall back to polling
            return last_id
        c.resumes += 1
        return await _relay(resp, c, last_id)


async def _start_wait(http: httpx.AsyncClient, auth: dict, body: dict, c: Client) -> None:
    resp = await http.post("/v1/search", json=body, headers=auth)
    if await _refused(resp, c):
        return
    if resp.status_code == 504:
        found = _RUN_ID.search(resp.text)
        c.wait_timeouts += 1
        c.run_id = found.group(1) if found else None
        return
    if resp.status_code != 200:
        c.other_errors.append(f"{resp.status_code} {resp.text[:200]}")
        return
    c.run_id = resp.headers["X-Run-Id"]
    c.relayed_done += 1
    c.result = resp.json()


async def _poll(http: httpx.AsyncClient, auth: dict, c: Client, give_up: float) -> None:
    """After an ``error`` event or a ``504``: the stored result, by ``GET /v1/runs/{id}``
    (recorded, but not as a relayed ``done``)."""
    if c.run_id is None:
        return
    while time.monotonic() < give_up + 60:
        try:
            resp = await http.get(f"/v1/runs/{c.run_id}", headers=auth)
            if resp.status_code == 200:
                c.result = resp.json()
                return
        except httpx.TransportError:
            pass
        await asyncio.sleep(1.0)
