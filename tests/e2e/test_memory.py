"""Memory bounded by age, not counts (issue 9, item 9), on the running stack: handled raw
mail leaves the ingest stream at once, and a run's keys follow the one TTL policy of
``pmsearch.shared.runstore`` (working keys until the deadline plus a margin, the result for the
retention). The services run under the shipped Redis ACL, so the grants are checked too."""

from __future__ import annotations

import time

import pytest
import redis.asyncio as aioredis

from pmsearch.shared import streams
from pmsearch.shared.consumer_group import ConsumerGroup
from pmsearch.shared.messages import RunMeta
from pmsearch.shared.runstore import WORK_MARGIN_SECONDS, retention_seconds
from pmsearch.testing.brains import honest

QUESTION = "Did the insurer accept the Golf claim after we sent the photos?"


def test_raw_mail_does_not_stay_on_the_ingest_stream(demo_stack):
    # The demo mailbox was imported through the gateway and the searcher at start.
    with demo_stack.redis_client() as r:
        (group,) = r.xinfo_groups(streams.INGEST)
        assert int(group["entries-read"]) > 0 and group["pending"] == 0
        assert r.xlen(streams.INGEST) == 0
        assert r.xlen(streams.dead_letter(streams.INGEST)) == 0


def test_a_runs_working_keys_live_until_its_deadline_and_its_result_for_the_retention(api, demo_stack, stack_model):
    api.tenant("acme", **{"search.agentic_max_steps": 4, "search.agentic_max_seconds": 20, "search.agentic_daily_cap": 500})
    stack_model.reset()
    stack_model.set_script(honest())
    resp = api.search(api.key("acme/alice"), query=QUESTION, mode="agentic")
    assert resp.status_code == 200, resp.text
    result = resp.json()
    assert result["outcome"] == "answered" and result["evidence"]
    run_id = result["run_id"]
    with demo_stack.redis_client() as r:
        meta = RunMeta.model_validate_json(r.get(streams.meta_key(run_id)))
        horizon = meta.deadline + WORK_MARGIN_SECONDS - time.time()
        for part in ("evidence", "state", "steps", "progress"):
            ttl = r.ttl(streams.run_key(run_id, part))
            assert 0 < ttl <= horizon + 1, (part, ttl, horizon)
        for part in ("meta", "final", "owner:final"):
            ttl = r.ttl(streams.run_key(run_id, part))
            assert retention_seconds() - 120 < ttl <= retention_seconds(), (part, ttl)  # the default 30 days


@pytest.mark.parametrize("stream", sorted(streams.GROUP))
async def test_each_stage_may_trim_its_own_input_under_the_shipped_acl(acl_redis, stream):
    user = streams.GROUP[stream]
    client = aioredis.from_url(acl_redis.redis_url, username=user, password=acl_redis.secrets.passwords[user])
    try:
        group = ConsumerGroup(client, stream, user, "c1")
        await group.ensure()
        await group.trim_consumed(int(time.time() * 1000))  # NoPermissionError if a grant is missing
        if stream == streams.INGEST:
            await group.forget("1-0")
    finally:
        await client.aclose()
