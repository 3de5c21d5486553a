"""Ask the gateway each question over SSE and time it; failures become ``error`` records."""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable, Iterable

import httpx
from httpx_sse import aconnect_sse

from pmsearch.cli.evaluation.questions import Question

STRATEGIES = ("loop", "single_shot")


@dataclass
class RunRecord:
    """One question asked once with one strategy."""

    question_id: str
    strategy: str
    outcome: str  # a run outcome, or "error" when the request itself failed
    run_id: str | None = None
    error: str | None = None
    wall_seconds: float | None = None  # request sent -> ``done`` received
    first_evidence_seconds: float | None = None  # request sent -> first ``evidence`` event
    result: dict[str, Any] | None = None  # the finished run's JSON (RunResult)
    events: dict[str, int] = field(default_factory=dict)  # count per SSE event name


def _problem(resp: httpx.Response) -> str:
    try:
        body = resp.json()
        return f"HTTP {resp.status_code} {body.get('title', '')}: {body.get('detail', '')}".strip()
    except ValueError:
        return f"HTTP {resp.status_code}: {resp.text[:200]}"


async def _final_result(client: httpx.AsyncClient, run_id: str | None, headers: dict, done: dict) -> dict:
    """The stored result (authoritative: only the verifier writes it), else the ``done`` payload.

    The gateway already swaps the stored result into ``done`` when it can; fetching it
    again covers the case where the store was not readable at that moment."""
    if run_id:
        try:
            resp = await client.get(f"/v1/runs/{run_id}", headers=headers)
            if resp.status_code == 200:
                return resp.json()
        except httpx.HTTPError:
            pass
    return done


async def ask_once(
    client: httpx.AsyncClient, api_key: str, question: Question, strategy: str, timeout: float
) -> RunRecord:
    """One agentic run over SSE. Never raises for HTTP errors or timeouts."""
    record = RunRecord(question.id, strategy, outcome="error")
    headers = {"Authorization": f"Bearer {api_key}"}
    body = {"query": question.question, "mode": "agentic", "strategy": strategy}
    started = time.perf_counter()
    try:
        async with asyncio.timeout(timeout):
            async with aconnect_sse(
                client, "POST", "/v1/search", json=body, headers={**headers, "Accept": "text/event-stream"}
            ) as source:
                resp = source.response
                if resp.status_code >= 400:
                    await resp.aread()
                    record.error = _problem(resp)
                    return record
                record.run_id = resp.headers.get("X-Run-Id")
                done: dict | None = None
                async for sse in source.aiter_sse():
                    record.events[sse.event] = record.events.get(sse.event, 0) + 1
                    if sse.event == "evidence" and record.first_evidence_seconds is None:
                        record.first_evidence_seconds = time.perf_counter() - started
                    elif sse.event == "error":
                        record.error = f"stream error: {_detail(sse.data)}"
                        return record
                    elif sse.event == "done":
                        record.wall_seconds = time.perf_counter() - started
                        done = json.loads(sse.data) if sse.data else {}
                        break
            if done is None:
                record.error = "the event stream ended before done"
                return record
            record.run_id = record.run_id or done.get("run_id")
            result = await _final_result(client, record.run_id, headers, done)
    except TimeoutError:
        record.error = f"timed out after {timeout:g} s"
        return record
    except (httpx.HTTPError, ValueError) as exc:  # ValueError: a payload that is not JSON
        record.error = f"{type(exc).__name__}: {exc}".rstrip(": ")
        return record
    if "outcome" not in result:
        record.error = "the finished run has no outcome"
        return record
    record.result = result
    record.outcome = str(result["outcome"])
    return record


def _detail(data: str) -> str:
    try:
        return str(json.loads(data).get("detail", data))
    except (ValueError, AttributeError):
        return data


async def run_all(
    gateway_url: str,
    questions: Iterable[Question],
    keys: dict[str, str],
    strategies: Iterable[str] = ("loop",),
    concurrency: int = 1,
    timeout: float = 300.0,
    on_record: Callable[[RunRecord], Awaitable[None] | None] | None = None,
) -> list[RunRecord]:
    """Every question with every strategy, at most ``concurrency`` at once.

    Records come back in (strategy, question) order whatever order they finished in."""
    jobs = [(s, q) for s in strategies for q in questions]
    gate = asyncio.Semaphore(max(1, concurrency))
    # The run's own time is bounded by ``timeout``; the read timeout only has to outlast
    # the gateway's 5 s SSE pings.
    http_timeout = httpx.Timeout(30.0, read=60.0)
    async with httpx.AsyncClient(base_url=gateway_url, timeout=http_timeout) as client:

        async def one(strategy: str, q: Question) -> RunRecord:
            async with gate:
                record = await ask_once(client, keys[q.key], q, strategy, timeout)
            if on_record is not None:
                maybe = on_record(record)
                if asyncio.iscoroutine(maybe):
                    await maybe
            return record

        return list(await asyncio.gather(*(one(s, q) for s, q in jobs)))
