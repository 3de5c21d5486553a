"""Each service's Redis user may write only what DESIGN.md's table gives it."""

import pytest
import redis

# (user, a write it must be refused)
REFUSED = [
    ("planner", lambda r: r.set("pm:run:{r1}:final", "forged")),
    ("planner", lambda r: r.hset("pm:run:{r1}:evidence", "m1", "forged")),
    ("answerer", lambda r: r.hset("pm:run:{r1}:evidence", "m1", "forged")),
    ("searcher", lambda r: r.set("pm:run:{r1}:final", "forged")),
    ("searcher", lambda r: r.set("pm:apikey:abc", "forged")),
    ("gateway", lambda r: r.set("pm:run:{r1}:final", "forged")),
    ("gateway", lambda r: r.hset("pm:run:{r1}:evidence", "m1", "forged")),
    ("verifier", lambda r: r.hset("pm:run:{r1}:evidence", "m1", "forged")),
    ("verifier", lambda r: r.xadd("pm:tools", {"x": "1"})),
    ("verifier", lambda r: r.set("pm:apikey:abc", "forged")),
    ("planner", lambda r: r.flushall()),
    ("searcher", lambda r: r.config_set("appendonly", "no")),
    # Trimming and deleting entries is for a consumer's own input only.
    ("searcher", lambda r: r.xdel("pm:tools", "1-0")),
    ("planner", lambda r: r.xtrim("pm:tools", minid="1-0")),
    ("answerer", lambda r: r.xtrim("pm:drafts:answerer", minid="1-0")),
    # A producer of drafts writes its own stream only.
    ("answerer", lambda r: r.xadd("pm:drafts:planner", {"x": "1"})),
    ("planner", lambda r: r.xadd("pm:drafts:watchdog", {"x": "1"})),
    ("gateway", lambda r: r.xtrim("pm:runs", minid="1-0")),
]

# (user, a write its job needs)
ALLOWED = [
    ("verifier", lambda r: r.set("pm:run:{r2}:final", "{}", nx=True)),
    ("searcher", lambda r: r.hsetnx("pm:run:{r2}:evidence", "m1", "{}")),
    ("searcher", lambda r: r.xadd("pm:observations", {"x": "1"})),
    ("planner", lambda r: r.xadd("pm:tools", {"x": "1"})),
    ("planner", lambda r: r.xadd("pm:drafts:planner", {"x": "1"})),
    ("answerer", lambda r: r.xadd("pm:drafts:answerer", {"x": "1"})),
    ("gateway", lambda r: r.xadd("pm:drafts:watchdog", {"x": "1"})),
    ("gateway", lambda r: r.xadd("pm:runs", {"x": "1"})),
    ("gateway", lambda r: r.set("pm:apikey:abc", "{}")),
    # The worker runtime trims consumed entries of its own input, raw mail at once.
    ("planner", lambda r: r.xtrim("pm:runs", minid="1-0")),
    ("verifier", lambda r: r.xtrim("pm:drafts:answerer", minid="1-0")),
    ("searcher", lambda r: r.xtrim("pm:ingest", minid="1-0")),
]


@pytest.mark.parametrize("user,write", REFUSED, ids=[f"{u}-{i}" for i, (u, _) in enumerate(REFUSED)])
def test_service_user_is_refused_writes_outside_its_row(acl_redis, user, write):
    with pytest.raises(redis.exceptions.NoPermissionError):
        write(acl_redis.redis_client(user))


@pytest.mark.parametrize("user,write", ALLOWED, ids=[f"{u}-{i}" for i, (u, _) in enumerate(ALLOWED)])
def test_service_user_may_write_its_own_keys(acl_redis, user, write):
    write(acl_redis.redis_client(user))


def test_default_user_is_disabled(acl_redis):
    with pytest.raises(redis.exceptions.AuthenticationError):
        redis.Redis(port=acl_redis.redis_port).ping()


def test_gateway_reads_progress_without_a_consumer_group(acl_redis):
    acl_redis.redis_client("verifier").xadd("pm:run:{r3}:progress", {"x": "1"})
    gw = acl_redis.redis_client("gateway")
    assert gw.xread({"pm:run:{r3}:progress": "0"}, count=1)
    with pytest.raises(redis.exceptions.NoPermissionError):
        gw.xgroup_create("pm:run:{r3}:progress", "gateway", id="0")


def test_no_stage_writes_a_results_stream_nobody_reads(acl_redis):
    # Results live in pm:run:*:final (read by the gateway); pm:results is gone.
    for user in ("verifier", "gateway", "planner"):
        with pytest.raises(redis.exceptions.NoPermissionError):
            acl_redis.redis_client(user).xadd("pm:results", {"x": "1"})
