"""Idempotency-Key records (pmsearch/services/gateway/runs/idempotency.py), against a real Redis."""

from __future__ import annotations

import uuid

import pytest

from pmsearch.services.gateway.errors import BadHeader, IdempotencyKeyInUse, IdempotencyKeyReused
from pmsearch.services.gateway.runs import idempotency
from pmsearch.services.gateway.runs.idempotency import (
    RESERVE_SECONDS,
    Claim,
    IdempotencyKeys,
    follow,
    parse_idempotency_key,
    record_key,
    request_digest,
)
from pmsearch.services.gateway.search.schemas import SearchRequest


@pytest.fixture
def k1() -> str:
    """An API key id of this test alone (the Redis is shared)."""
    return uuid.uuid4().hex


def claim(request: str = "digest") -> Claim:
    return Claim(run_id=uuid.uuid4().hex, request=request)


async def test_the_first_request_holds_the_key_and_a_second_sees_its_claim(redis, k1) -> None:
    keys, first, second = IdempotencyKeys(redis), claim(), claim()
    assert await keys.reserve(k1, "order-7", first) is None
    assert await keys.reserve(k1, "order-7", second) == first
    assert 0 < await redis.ttl(record_key(k1, "order-7")) <= RESERVE_SECONDS


async def test_a_started_run_is_remembered_for_the_day_and_followed(redis, k1) -> None:
    keys, first = IdempotencyKeys(redis, remember_seconds=3600), claim()
    await keys.reserve(k1, "order-7", first)
    await keys.mark_started(k1, "order-7", first)
    earlier = await keys.reserve(k1, "order-7", claim())
    assert earlier is not None and earlier.started
    assert follow(earlier, "digest") == first.run_id
    assert RESERVE_SECONDS < await redis.ttl(record_key(k1, "order-7")) <= 3600


async def test_keys_are_per_api_key(redis, k1) -> None:
    keys = IdempotencyKeys(redis)
    assert await keys.reserve(k1, "order-7", claim()) is None
    assert await keys.reserve(k1 + "-other", "order-7", claim()) is None


async def test_a_released_reservation_lets_the_retry_start_afresh(redis, k1) -> None:
    keys, first, retry = IdempotencyKeys(redis), claim(), claim()
    await keys.reserve(k1, "order-7", first)
    await keys.release(k1, "order-7", first)
    assert await keys.reserve(k1, "order-7", retry) is None


async def test_release_leaves_another_requests_reservation_alone(redis, k1) -> None:
    keys, expired, current = IdempotencyKeys(redis), claim(), claim()
    await keys.reserve(k1, "order-7", current)  # the first one's reservation expired and this took it
    await keys.release(k1, "order-7", expired)
    assert await keys.reserve(k1, "order-7", claim()) == current


async def test_an_unreadable_record_is_replaced_not_honoured(redis, k1) -> None:
    keys, mine = IdempotencyKeys(redis), claim()
    await redis.set(record_key(k1, "order-7"), b"not json")
    assert await keys.reserve(k1, "order-7", mine) is None
    assert await keys.reserve(k1, "order-7", claim()) == mine


def test_following_a_run_still_starting_is_409_with_retry_after() -> None:
    with pytest.raises(IdempotencyKeyInUse) as caught:
        follow(claim(), "digest")
    assert caught.value.status == 409 and caught.value.extra["retry_after"] >= 1


def test_the_same_key_with_another_body_is_422() -> None:
    earlier = claim(request_digest(SearchRequest(query="when is the Q2 review?", mode="agentic")))
    earlier = earlier.model_copy(update={"started": True})
    with pytest.raises(IdempotencyKeyReused):
        follow(earlier, request_digest(SearchRequest(query="where is the Q2 review?", mode="agentic")))


def test_the_digest_is_the_bodys_not_the_objects() -> None:
    a = SearchRequest.model_validate({"query": "q", "mode": "agentic", "filters": {"mailboxes": ["alice"]}})
    b = SearchRequest.model_validate({"mode": "agentic", "filters": {"mailboxes": ["alice"]}, "query": "q"})
    c = SearchRequest.model_validate({"query": "q", "mode": "agentic", "strategy": "single_shot"})
    assert request_digest(a) == request_digest(b) != request_digest(c)


@pytest.mark.parametrize("value", ["", "x" * 256, "tab\there", "naïve"])
def test_a_malformed_header_is_400(value) -> None:
    with pytest.raises(BadHeader):
        parse_idempotency_key(value)


def test_a_well_formed_header_passes_as_sent() -> None:
    assert parse_idempotency_key("  order 7 / retry ") == "  order 7 / retry "
    assert parse_idempotency_key(None) is None


async def test_a_run_starts_only_while_its_reservation_is_still_its_own(redis, k1) -> None:
    keys, stalled, later = IdempotencyKeys(redis), claim(), claim()
    await keys.reserve(k1, "order-7", stalled)
    await redis.delete(record_key(k1, "order-7"))  # the reservation ran out while a gateway stalled ...
    assert await keys.reserve(k1, "order-7", later) is None  # ... and a retry reserved the key
    with pytest.raises(IdempotencyKeyInUse):
        await keys.mark_started(k1, "order-7", stalled)
    assert await keys.reserve(k1, "order-7", claim()) == later


async def test_a_reservation_taken_over_between_the_check_and_the_multi_marks_nothing(
    redis, sync_redis, k1, monkeypatch
) -> None:
    keys, first, other = IdempotencyKeys(redis), claim(), claim()
    await keys.reserve(k1, "order-7", first)
    read = idempotency.parse_claim

    def read_then_lose_the_key(raw):
        held = read(raw)  # the check passes; another request writes the key before the MULTI
        sync_redis.set(record_key(k1, "order-7"), other.model_dump_json())
        return held

    monkeypatch.setattr(idempotency, "parse_claim", read_then_lose_the_key)
    with pytest.raises(IdempotencyKeyInUse):
        await keys.mark_started(k1, "order-7", first)
    monkeypatch.setattr(idempotency, "parse_claim", read)
    assert await keys.reserve(k1, "order-7", claim()) == other  # the other request's, not started
