"""Redis at its maxmemory: the gateway answers 503 ``store_full`` with ``Retry-After``,
writes nothing of a run it could not start, and serves again once memory is freed.

A real gateway process and a real redis-server with the shipped ACL file; the test
fills Redis as its admin user until writes are refused (``noeviction``).
"""

from __future__ import annotations

import httpx
import pytest
import redis

from pmsearch.cli.stack import Stack
from tests.fixtures.stack import gateway_only, new_key

FILLER = "test:filler:"


@pytest.fixture(scope="module")
def gateway(tmp_path_factory):
    with gateway_only(tmp_path_factory.mktemp("redis-full"), {"PM_DEFAULT_MAX_SECONDS": "30"}) as stack:
        yield stack


@pytest.fixture(scope="module")
def api_key(gateway) -> str:
    return new_key(gateway)


def fill(admin: redis.Redis) -> None:
    """Set maxmemory just above what Redis holds, then write until it refuses."""
    used = int(admin.info("memory")["used_memory"])
    admin.config_set("maxmemory", used + 2 * 1024 * 1024)
    for i in range(100_000):
        try:
            admin.set(f"{FILLER}{i}", "x" * 4096)
        except redis.exceptions.OutOfMemoryError:
            return
    raise AssertionError("Redis never refused a write")


def free(admin: redis.Redis) -> None:
    keys = list(admin.scan_iter(match=f"{FILLER}*", count=1000))
    for i in range(0, len(keys), 500):
        admin.delete(*keys[i : i + 500])
    admin.config_set("maxmemory", 0)


def run_keys(admin: redis.Redis) -> set[bytes]:
    return set(admin.scan_iter(match="pm:run:*", count=1000))


def start_run(gateway: Stack, auth: dict[str, str], idempotency_key: str) -> httpx.Response:
    """Ask for an agentic run as an event stream and hang up once it answers: the
    status and headers say whether the run was started."""
    body = {"query": "did the insurer pay?", "mode": "agentic"}
    headers = {**auth, "Accept": "text/event-stream", "Idempotency-Key": idempotency_key}
    with httpx.stream("POST", f"{gateway.gateway_url}/v1/search", json=body, headers=headers, timeout=30) as resp:
        if resp.status_code != 200:
            resp.read()
        return resp


def test_a_full_store_is_a_503_that_writes_nothing_and_the_gateway_recovers(gateway, api_key):
    admin = gateway.redis_client()
    auth = {"Authorization": f"Bearer {api_key}"}
    before = run_keys(admin)
    runs_before = admin.xlen("pm:runs") if admin.exists("pm:runs") else 0
    fill(admin)
    try:
        resp = start_run(gateway, auth, "full-1")
        assert resp.status_code == 503, resp.text
        assert resp.headers["content-type"].startswith("application/problem+json")
        assert resp.json()["code"] == "store_full"
        assert int(resp.headers["retry-after"]) > 0
        assert run_keys(admin) == before  # no run recorded without being started
        assert (admin.xlen("pm:runs") if admin.exists("pm:runs") else 0) == runs_before
        metrics = httpx.get(f"{gateway.gateway_url}/metrics", timeout=10).text
        assert "pm_gateway_store_full_total 1.0" in metrics
    finally:
        free(admin)
    resp = start_run(gateway, auth, "full-1")  # the same key: the refused request left no claim
    assert resp.status_code == 200 and resp.headers["x-run-id"]
    assert admin.xlen("pm:runs") == runs_before + 1
