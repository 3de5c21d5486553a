"""Each service's Redis user may write only what DESIGN.md's table gives it."""

import pytest
import redis

# (user, a write it must be refused)
REFUSED = [
    ("planner", lambda r: r.xadd("pm:results", {"x": "1"})),
    ("planner", lambda r: r.set("pm:run:{r1}:final", "forged")),
    ("planner", lambda r: r.hset("pm:run:{r1}:evidence", "m1", "forged")),
    ("answerer", lambda r: r.xadd("pm:results", {"x": "1"})),
    ("answerer", lambda r: r.hset("pm:run:{r1}:evidence", "m1", "forged")),
    ("searcher", lambda r: r.xadd("pm:results", {"x": "1"})),
    ("searcher", lambda r: r.set("pm:run:{r1}:final", "forged")),
    ("searcher", lambda r: r.set("pm:apikey:abc", "forged")),
    ("gateway", lambda r: r.xadd("pm:results", {"x": "1"})),
    ("gateway", lambda r: r.set("pm:run:{r1}:final", "forged")),
    ("gateway", lambda r: r.hset("pm:run:{r1}:evidence", "m1", "forged")),
    ("verifier", lambda r: r.hset("pm:run:{r1}:evidence", "m1", "forged")),
    ("verifier", lambda r: r.xadd("pm:tools", {"x": "1"})),
    ("verifier", lambda r: r.set("pm:apikey:abc", "forged")),
    ("planner", lambda r: r.flushall()),
    ("searcher", lambda r: r.config_set("appendonly", "no")),
]

# (user, a write its job needs)
ALLOWED = [
    ("verifier", lambda r: r.set("pm:run:{r2}:final", "{}", nx=True)),
    ("verifier", lambda r: r.xadd("pm:results", {"x": "1"})),
    ("searcher", lambda r: r.hsetnx("pm:run:{r2}:evidence", "m1", "{}")),
    ("searcher", lambda r: r.xadd("pm:observations", {"x": "1"})),
    ("planner", lambda r: r.xadd("pm:tools", {"x": "1"})),
    ("planner", lambda r: r.xadd("pm:drafts", {"x": "1"})),
    ("answerer", lambda r: r.xadd("pm:drafts", {"x": "1"})),
    ("gateway", lambda r: r.xadd("pm:runs", {"x": "1"})),
    ("gateway", lambda r: r.set("pm:apikey:abc", "{}")),
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


def test_gateway_reads_results_without_a_consumer_group(acl_redis):
    acl_redis.redis_client("verifier").xadd("pm:results", {"x": "1"})
    gw = acl_redis.redis_client("gateway")
    assert gw.xread({"pm:results": "0"}, count=1)
    with pytest.raises(redis.exceptions.NoPermissionError):
        gw.xgroup_create("pm:results", "gateway", id="0")
