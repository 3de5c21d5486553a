"""call_model: every outcome is a value with its spending, and the model metrics are
recorded once per call, invalid replies' tokens included."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import httpx
from prometheus_client import REGISTRY

from pmsearch.shared.llm import ModelCall, ModelClient, call_model
from pmsearch.shared.messages import Usage
from tests.shared.llm.helpers import GOOD, MESSAGES, Pick, completion, settings

ROOT = Path(__file__).resolve().parents[3]


def replying(*replies):
    """A mock transport answering ``replies`` in order (a response, a completion body, or
    an exception to raise), counting requests."""
    pending = list(replies)
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        reply = pending.pop(0) if len(pending) > 1 else pending[0]
        if isinstance(reply, Exception):
            raise reply
        if isinstance(reply, httpx.Response):
            return reply
        return httpx.Response(200, json=reply)

    return httpx.MockTransport(handler), seen


class Recorded:
    """The model metrics of one stage, read before and after a call."""

    def __init__(self, stage: str) -> None:
        self.stage = stage
        self.before = self.read()

    def read(self) -> dict[str, float]:
        def value(name: str, **labels: str) -> float:
            return REGISTRY.get_sample_value(name, {"stage": self.stage, **labels}) or 0.0

        out = {r: value("pm_model_calls_total", result=r) for r in ("ok", "invalid", "unavailable", "timeout")}
        out |= {f"seconds_{r}": value("pm_model_seconds_count", result=r) for r in ("ok", "invalid", "unavailable", "timeout")}
        out |= {k: value("pm_model_tokens_total", kind=k) for k in ("prompt", "completion")}
        return out

    def delta(self) -> dict[str, float]:
        after = self.read()
        return {k: after[k] - self.before[k] for k in after if after[k] != self.before[k]}


async def run(transport: httpx.MockTransport, stage: str, **over) -> ModelCall[Pick]:
    async with ModelClient(settings(**over), transport=transport) as client:
        return await call_model(client, stage, MESSAGES, Pick, name="pick")


async def test_ok():
    transport, seen = replying(completion(GOOD, usage=(11, 5)))
    recorded = Recorded("t_ok")
    call = await run(transport, "t_ok")
    assert call.ok and call.value == Pick(tool="search", limit=3)
    assert (call.result, call.error, call.attempts) == ("ok", None, 1)
    assert call.usage() == Usage(model_calls=1, prompt_tokens=11, completion_tokens=5)
    assert recorded.delta() == {"ok": 1, "seconds_ok": 1, "prompt": 11, "completion": 5}
    assert len(seen) == 1


async def test_invalid_twice_counts_both_replies_tokens():
    transport, seen = replying(completion("I cannot help.", usage=(7, 3)), completion('{"tool": 1}', usage=(20, 4)))
    recorded = Recorded("t_invalid")
    call = await run(transport, "t_invalid")
    assert call.value is None and call.result == "invalid" and not call.ok
    assert call.error.startswith("invalid model output: ") and "limit" in call.error
    assert call.usage() == Usage(model_calls=2, prompt_tokens=27, completion_tokens=7)
    assert recorded.delta() == {"invalid": 1, "seconds_invalid": 1, "prompt": 27, "completion": 7}
    assert len(seen) == 2


async def test_invalid_then_unavailable_keeps_the_first_replys_tokens():
    transport, _ = replying(completion("no json", usage=(9, 2)), httpx.Response(503))
    call = await run(transport, "t_invalid_then_down", model_retries=1)
    assert call.result == "unavailable"
    assert call.usage() == Usage(model_calls=3, prompt_tokens=9, completion_tokens=2)


async def test_unavailable():
    transport, seen = replying(httpx.Response(503))
    recorded = Recorded("t_unavailable")
    call = await run(transport, "t_unavailable", model_retries=2)
    assert call.value is None and call.result == "unavailable"
    assert call.error == "model unavailable: model endpoint answered 503"
    assert call.attempts == len(seen) == 3  # one try and two retries, each an HTTP request
    assert recorded.delta() == {"unavailable": 1, "seconds_unavailable": 1}


async def test_open_circuit_requests_nothing():
    transport, seen = replying(httpx.Response(503))
    async with ModelClient(settings(model_retries=0, breaker_failures=1), transport=transport) as client:
        await call_model(client, "t_circuit", MESSAGES, Pick, name="pick")
        call = await call_model(client, "t_circuit", MESSAGES, Pick, name="pick")
    assert call.result == "unavailable" and "circuit is open" in call.error
    assert call.attempts == 0 and len(seen) == 1


async def test_timeout():
    transport, seen = replying(httpx.ReadTimeout("slow"))
    recorded = Recorded("t_timeout")
    call = await run(transport, "t_timeout", model_retries=1)
    assert call.value is None and call.result == "timeout"
    assert call.error.startswith("model timed out: ")
    assert call.attempts == len(seen) == 2
    assert recorded.delta() == {"timeout": 1, "seconds_timeout": 1}


async def test_spent_deadline_is_a_timeout_without_a_request():
    transport, seen = replying(completion(GOOD))
    async with ModelClient(settings(), transport=transport) as client:
        call = await call_model(client, "t_deadline", MESSAGES, Pick, name="pick", deadline=time.time() - 1)
    assert call.result == "timeout" and call.attempts == 0 and seen == []


def test_both_stages_metrics_and_the_shared_ones_import_in_one_process():
    code = "import pmsearch.services.planner.metrics, pmsearch.services.answerer.metrics, pmsearch.shared.llm.metrics"
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
