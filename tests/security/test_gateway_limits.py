"""Gateway limits (issue 8, item 12): request bodies are refused before they are read or
authenticated, plain search has a per-key rate and streams a per-key concurrency limit
shared by replicas through Redis, and filters are bounded.

The real gateway app served by uvicorn over TCP, as the gateway's own Redis user of the
shipped ACL file (redis-server from the ``acl_redis`` fixture). No searcher or planner
runs: a search that passes the limits ends in 504, which is how a test tells it apart
from one the limits refused.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
import time
import uuid

import httpx
import pytest
from redis import asyncio as aioredis

from pmsearch.cli.stack import free_port
from pmsearch.services.gateway.errors import TooManyStreams
from pmsearch.services.gateway.limits import KeyLimits
from tests.fixtures.gateway import RATE, Gateway

PROBLEM = "application/problem+json"
MB = 1024 * 1024


@pytest.fixture(scope="module")
def gateway(acl_redis):
    with Gateway(acl_redis) as gw:
        yield gw


@pytest.fixture(scope="module")
def replica(acl_redis):
    with Gateway(acl_redis) as gw:
        yield gw


def _is_problem(resp: httpx.Response, status: int, code: str) -> dict:
    assert resp.status_code == status, resp.text
    assert resp.headers["content-type"].startswith(PROBLEM)
    body = resp.json()
    assert body["code"] == code and body["status"] == status
    return body


def _raw_request(gw: Gateway, head: str, timeout: float = 5.0) -> tuple[bytes, bytes]:
    """Send only a request's head, never its body, and return the answer's head and
    body; ``socket.timeout`` if the server waits for the body instead of answering."""
    with socket.create_connection(("127.0.0.1", gw.port), timeout=timeout) as sock:
        sock.sendall(head.encode())
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = sock.recv(65536)
            assert chunk, "connection closed without an answer"
            data += chunk
        answer_head, _, body = data.partition(b"\r\n\r\n")
        length = next(int(line.split(b":")[1]) for line in answer_head.split(b"\r\n")
                      if line.lower().startswith(b"content-length:"))
        while len(body) < length:
            body += sock.recv(65536)
        return answer_head, body


# ------------------------------------------------------------------ body size


def test_a_declared_60_mb_body_is_refused_with_413_before_a_byte_of_it_is_sent(gateway):
    # Only the head goes out: the answer must come without the server waiting for the
    # body (today it reads and parses all 60 MB first, then says 401).
    head, body = _raw_request(gateway, (
        "POST /v1/search HTTP/1.1\r\nHost: gw\r\nContent-Type: application/json\r\n"
        f"Content-Length: {60 * MB}\r\n\r\n"
    ))
    assert head.startswith(b"HTTP/1.1 413"), head
    assert b"application/problem+json" in head
    problem = json.loads(body)
    assert problem["code"] == "body_too_large" and problem["limit"] == MB


def test_a_chunked_body_is_cut_off_at_the_limit_without_being_read_to_the_end(gateway):
    sent = 0

    def chunks():
        nonlocal sent
        for _ in range(60):
            sent += 1
            yield b" " * MB

    with contextlib.suppress(httpx.WriteError, httpx.RemoteProtocolError):
        resp = gateway.http.post("/v1/search", content=chunks(), headers={"Content-Type": "application/json"})
        _is_problem(resp, 413, "body_too_large")
    assert sent < 10  # the server stopped reading: 60 MB never went over the wire


def test_an_ingest_sized_body_without_the_admin_token_is_refused_unread(gateway):
    head, body = _raw_request(gateway, (
        "POST /v1/admin/ingest HTTP/1.1\r\nHost: gw\r\nContent-Type: application/json\r\n"
        f"Content-Length: {5 * MB}\r\n\r\n"
    ))
    assert head.startswith(b"HTTP/1.1 413"), head
    assert json.loads(body)["code"] == "body_too_large"


def test_the_admin_token_admits_an_ingest_sized_body_to_the_ingest_endpoint_only(gateway):
    import base64

    raw = base64.b64encode(b"From: a@x.example\nSubject: big\n\n" + b"x" * (3 * MB)).decode()
    body = {"tenant_id": "acme", "mailbox": "alice", "raw": [raw]}
    admin = {"Authorization": f"Bearer {gateway.admin_token}"}
    # Read and passed on (no searcher here, so it times out upstream): not refused for size.
    _is_problem(gateway.http.post("/v1/admin/ingest", json=body, headers=admin), 504, "upstream_timeout")
    _is_problem(gateway.http.post("/v1/admin/keys", json=body, headers=admin), 413, "body_too_large")


# ------------------------------------------------------------------ search rate


def test_plain_search_past_the_keys_rate_is_429_with_retry_after(gateway):
    key = gateway.new_key()
    for _ in range(RATE):
        _is_problem(gateway.search(key), 504, "upstream_timeout")  # admitted
    resp = gateway.search(key)
    _is_problem(resp, 429, "rate_limited")
    assert 1 <= int(resp.headers["retry-after"]) <= 60
    # Another key of the same tenant has its own budget.
    _is_problem(gateway.search(gateway.new_key()), 504, "upstream_timeout")


def test_cancelling_runs_counts_against_the_keys_search_rate(gateway):
    # A cancellation writes, publishes and waits for the verifier: a flood of them, even
    # of runs that do not exist, must not be free.
    key = gateway.new_key()
    auth = {"Authorization": f"Bearer {key}"}
    for i in range(RATE):
        _is_problem(gateway.http.delete(f"/v1/runs/{i:032x}", headers=auth), 404, "not_found")
    resp = gateway.http.delete(f"/v1/runs/{RATE:032x}", headers=auth)
    _is_problem(resp, 429, "rate_limited")
    assert 1 <= int(resp.headers["retry-after"]) <= 60


def test_the_search_rate_is_shared_by_gateway_replicas(gateway, replica):
    key = gateway.new_key()
    for gw in (gateway, replica, gateway)[:RATE]:
        _is_problem(gw.search(key), 504, "upstream_timeout")
    _is_problem(replica.search(key), 429, "rate_limited")


# ------------------------------------------------------------------ stream slots


def test_a_key_holding_all_its_streams_gets_429_with_retry_after_on_every_replica(gateway, replica):
    key = gateway.new_key()
    with gateway.agentic_stream(key) as first:
        assert first.status_code == 200
        for gw in (gateway, replica):
            resp = gw.search(key, mode="agentic")
            _is_problem(resp, 429, "too_many_streams")
            assert int(resp.headers["retry-after"]) >= 1
        # Plain search is not a stream; another key has its own slots.
        _is_problem(gateway.search(key), 504, "upstream_timeout")
        with replica.agentic_stream(gateway.new_key()) as other:
            assert other.status_code == 200


def test_a_closed_stream_gives_its_slot_back(gateway):
    key = gateway.new_key()
    with gateway.agentic_stream(key) as first:
        assert first.status_code == 200
    deadline = time.monotonic() + 10
    while True:  # the server notices the disconnect within moments
        with gateway.agentic_stream(key) as again:
            if again.status_code == 200:
                break
            assert again.status_code == 429 and time.monotonic() < deadline
        time.sleep(0.2)


def test_a_slot_left_by_a_dead_replica_expires_with_its_lease(acl_redis):
    async def scenario() -> None:
        redis = aioredis.from_url(acl_redis.redis_url, username="gateway",
                                  password=acl_redis.secrets.passwords["gateway"])
        limits = KeyLimits(redis, search_rate_per_minute=0, max_streams=1, lease_seconds=1.5)
        key_id = uuid.uuid4().hex
        await limits.open_stream(key_id)  # never released: its replica "died"
        with pytest.raises(TooManyStreams):
            await limits.open_stream(key_id)
        await asyncio.sleep(1.7)
        await (await limits.open_stream(key_id)).release()
        await redis.aclose()

    asyncio.run(scenario())


# ------------------------------------------------------------------ filters


@pytest.mark.parametrize(
    "filters, field",
    [
        ({"senders": ["a" * 10_000 + "@x.example"]}, "filters.senders.0"),
        ({"folders": ["F" * 5_000]}, "filters.folders.0"),
        ({"mailboxes": ["m" * 1_000]}, "filters.mailboxes.0"),
    ],
)
def test_an_overlong_filter_item_is_422_naming_it(gateway, filters, field):
    body = _is_problem(gateway.search(gateway.new_key(), filters=filters), 422, "invalid_request")
    assert body["detail"].startswith(field)



def test_a_tenant_past_its_share_of_streams_is_429_while_another_tenant_gets_one(acl_redis):
    with Gateway(acl_redis, max_event_streams=4, tenant_share=0.5) as gw, contextlib.ExitStack() as held:
        for _ in range(2):  # the tenant's share: two of the replica's four
            assert held.enter_context(gw.agentic_stream(gw.new_key("acme"))).status_code == 200
        with gw.agentic_stream(gw.new_key("acme")) as refused:
            refused.read()
            _is_problem(refused, 429, "tenant_busy")
            assert int(refused.headers["retry-after"]) >= 1
        with gw.agentic_stream(gw.new_key("globex")) as other:
            assert other.status_code == 200


def test_wrong_credentials_from_one_address_are_throttled_before_any_lookup(acl_redis):
    with Gateway(acl_redis, auth_failures_per_minute=3) as gw:
        good = gw.new_key()
        _is_problem(gw.http.post("/v1/search", json={"query": "x"}), 401, "unauthorized")  # no key: not a guess
        for guess in range(3):
            wrong = {"Authorization": f"Bearer pm_wrong_{guess}"}
            _is_problem(gw.http.post("/v1/search", json={"query": "x"}, headers=wrong), 401, "unauthorized")
        refused = gw.http.post("/v1/search", json={"query": "x"}, headers={"Authorization": f"Bearer {good}"})
        _is_problem(refused, 429, "auth_throttled")
        assert 0 < int(refused.headers["Retry-After"]) <= 61
        admin = gw.http.get("/v1/admin/keys", headers={"Authorization": f"Bearer {gw.admin_token}"})
        _is_problem(admin, 429, "auth_throttled")


# ------------------------------------------------------------------ operator surfaces


def test_the_public_port_serves_metrics_only_to_this_host_or_the_admin_token(gateway):
    assert gateway.http.get("/metrics").status_code == 200  # this host, through no proxy
    proxied = {"X-Forwarded-For": "203.0.113.9"}
    _is_problem(gateway.http.get("/metrics", headers=proxied), 404, "not_found")
    key = {"Authorization": f"Bearer {gateway.new_key()}"}
    _is_problem(gateway.http.get("/metrics", headers={**proxied, **key}), 404, "not_found")
    admin = gateway.http.get("/metrics", headers={**proxied, "Authorization": f"Bearer {gateway.admin_token}"})
    assert admin.status_code == 200 and "pm_http_requests_total" in admin.text


def test_the_public_port_serves_the_asyncapi_document_and_readiness_details_only_to_operators(gateway):
    proxied = {"X-Forwarded-For": "203.0.113.9"}
    key = {"Authorization": f"Bearer {gateway.new_key()}"}
    admin = {"Authorization": f"Bearer {gateway.admin_token}"}
    for path in ("/asyncapi", "/asyncapi.yaml"):
        assert gateway.http.get(path).status_code == 200  # this host, through no proxy
        _is_problem(gateway.http.get(path, headers={**proxied, **key}), 404, "not_found")
        assert gateway.http.get(path, headers={**proxied, **admin}).status_code == 200
    assert gateway.http.get("/readyz").json()["checks"]["redis"] == "ok"
    public = gateway.http.get("/readyz", headers={**proxied, **key})
    assert public.status_code == 200 and public.json() == {"status": "ok"}


def test_with_an_operator_port_the_public_port_serves_no_operator_surface(acl_redis):
    port = free_port()
    with Gateway(acl_redis, metrics_port=port) as gw:
        for path in ("/metrics", "/asyncapi", "/asyncapi.yaml"):
            _is_problem(gw.http.get(path), 404, "not_found")
        assert gw.http.get("/readyz").json() == {"status": "ok"}
        assert gw.http.get("/healthz").json() == {"status": "ok"}
        operator = f"http://127.0.0.1:{port}"
        assert "pm_http_requests_total" in httpx.get(f"{operator}/metrics", timeout=10).text
        assert httpx.get(f"{operator}/asyncapi", timeout=10).json()["asyncapi"].startswith("3.")
        assert "channels:" in httpx.get(f"{operator}/asyncapi.yaml", timeout=10).text
        ready = httpx.get(f"{operator}/readyz", timeout=10).json()
        assert ready == {"status": "ok", "checks": {"redis": "ok", "watchdog": "ok"}}
        assert httpx.get(f"{operator}/healthz", timeout=10).json() == {"status": "ok", "checks": {"redis": "ok"}}
