"""Redis users (issue 8, item 6): one compromised stage cannot freeze, drain or speak for
the system. Each denial is checked with ``ACL DRYRUN`` (as the admin, without running
the command) or on a live connection as the service's own user, on redis-server started
with the shipped ACL file (``acl_redis``); the services themselves run under it in
``demo_stack``.
"""

from __future__ import annotations

import json
import re
import time
import uuid

import pytest
import redis

from pmsearch.cli.acl import TEMPLATE, USERS
from pmsearch.cli.stack import Stack

SERVICES = [u for u in USERS if u != "admin"]

# Which stage consumes which stream, and who produces to it (pmsearch/shared/streams.py).
INPUTS = {
    "searcher": ["pm:queries", "pm:lookups", "pm:ingest", "pm:withdrawn", "pm:tools"],
    "planner": ["pm:runs", "pm:observations"],
    "answerer": ["pm:answers"],
    "verifier": ["pm:drafts:answerer", "pm:drafts:planner", "pm:drafts:watchdog", "pm:drafts"],
}
PRODUCED = [
    ("gateway", "pm:queries"), ("gateway", "pm:lookups"), ("gateway", "pm:ingest"), ("gateway", "pm:runs"),
    ("gateway", "pm:drafts:watchdog"),
    ("planner", "pm:tools"), ("planner", "pm:answers"), ("planner", "pm:drafts:planner"),
    ("searcher", "pm:observations"),
    ("answerer", "pm:drafts:answerer"),
    ("sync", "pm:ingest"), ("sync", "pm:withdrawn"),
]
# Each producer of drafts has a stream of its own (pmsearch/shared/streams.py).
DRAFTS_OF = {"gateway": "pm:drafts:watchdog", "planner": "pm:drafts:planner", "answerer": "pm:drafts:answerer"}
MAX_ID = "18446744073709551615-18446744073709551615"
GROUP_OF = {s: u for u, streams in INPUTS.items() for s in streams}


def dryrun(stack: Stack, user: str, *command: str) -> str:
    reply = stack.redis_client().execute_command("ACL", "DRYRUN", user, *command)
    return reply.decode() if isinstance(reply, bytes) else str(reply)


def refused(stack: Stack, user: str, *command: str) -> bool:
    return dryrun(stack, user, *command) != "OK"


def _ids(cases) -> list[str]:
    return ["-".join(str(p).split()[0] for p in case) for case in cases]


CLIENT_CONTROL = [("CLIENT", "KILL", "ID", "1"), ("CLIENT", "PAUSE", "10000"), ("CLIENT", "LIST"),
                  ("CLIENT", "NO-EVICT", "on"), ("CLIENT", "UNBLOCK", "1")]


@pytest.mark.parametrize("user", SERVICES)
@pytest.mark.parametrize("command", CLIENT_CONTROL, ids=lambda c: " ".join(c[:2]))
def test_no_service_may_pause_kill_or_list_other_clients(acl_redis, user, command):
    assert refused(acl_redis, user, *command)


SCRIPTING = [("EVAL", "return 1", "0"), ("EVALSHA", "e0e1f9fabfc9d4800c877a703b823ac0578ff8db", "0"),
             ("SCRIPT", "LOAD", "return 1"), ("FUNCTION", "LOAD", "#!lua name=x"), ("FCALL", "f", "0")]


@pytest.mark.parametrize("user", SERVICES)
@pytest.mark.parametrize("command", SCRIPTING, ids=lambda c: " ".join(c[:2]) if c[0] in ("SCRIPT", "FUNCTION") else c[0])
def test_no_service_may_run_scripts(acl_redis, user, command):
    assert refused(acl_redis, user, *command)


DRAIN = [
    lambda s: ("XTRIM", s, "MAXLEN", "0"),
    lambda s: ("DEL", s),
    lambda s: ("XDEL", s, "1-0"),
    lambda s: ("XGROUP", "DESTROY", s, GROUP_OF[s]),
    lambda s: ("XGROUP", "SETID", s, GROUP_OF[s], "$"),
    lambda s: ("XGROUP", "DELCONSUMER", s, GROUP_OF[s], "c1"),
    # Reading another stage's input through its group takes the entries from that stage.
    lambda s: ("XREADGROUP", "GROUP", GROUP_OF[s], "thief", "STREAMS", s, ">"),
    lambda s: ("XAUTOCLAIM", s, GROUP_OF[s], "thief", "0", "0-0"),
    lambda s: ("XACK", s, GROUP_OF[s], "1-0"),
]


@pytest.mark.parametrize("user,stream", PRODUCED, ids=[f"{u}>{s}" for u, s in PRODUCED])
def test_a_producer_may_only_add_to_the_stream_it_feeds(acl_redis, user, stream):
    assert dryrun(acl_redis, user, "XADD", stream, "*", "f", "v") == "OK"
    still_allowed = [d(stream) for d in DRAIN if not refused(acl_redis, user, *d(stream))]
    assert still_allowed == []


@pytest.mark.parametrize("user", list(DRAFTS_OF))
def test_a_drafts_producer_cannot_jam_or_empty_another_producers_drafts(acl_redis, user):
    # ACLs cannot see XADD's arguments: on one shared stream an entry at the maximum ID
    # would fail every later "XADD *" of the others, and MAXLEN 0 would drop theirs.
    for other, stream in DRAFTS_OF.items():
        if other != user:
            assert refused(acl_redis, user, "XADD", stream, MAX_ID, "f", "v"), stream
            assert refused(acl_redis, user, "XADD", stream, "MAXLEN", "0", "*", "f", "v"), stream
    assert refused(acl_redis, user, "XADD", "pm:drafts", "*", "f", "v")  # the old shared stream: drained only


def test_a_producer_that_jams_its_own_drafts_stream_leaves_the_others_working(acl_redis):
    answerer, planner = acl_redis.redis_client("answerer"), acl_redis.redis_client("planner")
    try:
        answerer.xadd(DRAFTS_OF["answerer"], {"f": "v"}, id=MAX_ID)
        with pytest.raises(redis.exceptions.ResponseError):
            answerer.xadd(DRAFTS_OF["answerer"], {"f": "v"})  # its own stream is jammed
        assert planner.xadd(DRAFTS_OF["planner"], {"f": "v"})
        assert acl_redis.redis_client("gateway").xadd(DRAFTS_OF["gateway"], {"f": "v"})
    finally:
        acl_redis.redis_client().delete(*DRAFTS_OF.values())


@pytest.mark.parametrize("user", list(INPUTS))
def test_a_consumer_may_trim_but_not_delete_or_reset_its_own_input(acl_redis, user):
    # The worker runtime trims what its groups consumed (XTRIM MINID). ACL rules cannot
    # refuse an argument, so it could trim more; but it could drop its input as well by
    # reading and acknowledging it. Deleting the stream or resetting a group it cannot.
    stream = INPUTS[user][0]
    assert dryrun(acl_redis, user, "XTRIM", stream, "MINID", "1-0") == "OK"
    for command in (("DEL", stream), ("XGROUP", "DESTROY", stream, user), ("XGROUP", "SETID", stream, user, "$")):
        assert refused(acl_redis, user, *command), command


@pytest.mark.parametrize("user", list(INPUTS))
def test_no_consumer_deletes_entries_so_every_groups_lag_stays_exact(acl_redis, user):
    for stream in INPUTS[user]:
        assert refused(acl_redis, user, "XDEL", stream, "1-0"), stream


@pytest.mark.parametrize("user", list(INPUTS))
def test_a_consumer_may_read_and_acknowledge_only_its_own_input(acl_redis, user):
    own = INPUTS[user][0]
    for command in (("XGROUP", "CREATE", own, user, "$", "MKSTREAM"), ("XGROUP", "CREATECONSUMER", own, user, "c"),
                    ("XREADGROUP", "GROUP", user, "c", "STREAMS", own, ">"), ("XACK", own, user, "1-0"),
                    ("XAUTOCLAIM", own, user, "c", "0", "0-0"), ("XCLAIM", own, user, "c", "0", "1-0"),
                    ("XPENDING", own, user)):
        assert dryrun(acl_redis, user, *command) == "OK", command
    other = next(s for u, streams in INPUTS.items() if u != user for s in streams)
    assert refused(acl_redis, user, "XREADGROUP", "GROUP", user, "c", "STREAMS", other, ">")


@pytest.mark.parametrize("user", list(INPUTS))
def test_delivery_counts_are_redis_own_so_no_stage_may_write_one(acl_redis, user):
    # A message is dead-lettered by Redis's own delivery count (XPENDING); a writable
    # counter would let a stage dead-letter another stage's messages.
    other = next(s for u, streams in INPUTS.items() if u != user for s in streams)
    assert refused(acl_redis, user, "INCRBY", f"pm:deliveries:{other}:1-0", "1")
    assert refused(acl_redis, user, "INCRBY", f"pm:deliveries:{INPUTS[user][0]}:1-0", "1")
    own = INPUTS[user][0]
    assert dryrun(acl_redis, user, "XPENDING", own, user, "-", "+", "10", "c") == "OK"
    assert dryrun(acl_redis, user, "XCLAIM", own, user, "c", "0", "1-0", "JUSTID") == "OK"
    assert refused(acl_redis, user, "XCLAIM", other, GROUP_OF[other], "c", "0", "1-0", "JUSTID")


@pytest.mark.parametrize("user", list(INPUTS))
def test_a_stage_may_see_whether_a_run_is_finished_but_not_finish_it(acl_redis, user):
    # The worker runtime drops work for a run that already has its result.
    assert dryrun(acl_redis, user, "EXISTS", "pm:run:{r}:final") == "OK"
    if user != "verifier":
        assert refused(acl_redis, user, "SET", "pm:run:{r}:final", "{}")


# Each run key and the users that write it (deploy/redis/users.acl.in); nobody else may
# shorten its life: EXPIRE ... 0 deletes it. The verifier shortens the snapshot it reads
# once the run has its result.
RUN_KEY_WRITERS = {
    "meta": {"gateway"},
    "state": {"planner"},
    "steps": {"planner", "verifier"},
    "lock": {"planner"},
    "final": {"verifier"},
    "evidence": {"searcher", "verifier"},
    "progress": {"searcher", "planner", "verifier"},
}


@pytest.mark.parametrize("user", SERVICES)
def test_no_stage_may_expire_a_run_key_another_stage_writes(acl_redis, user):
    for key, writers in RUN_KEY_WRITERS.items():
        if user not in writers:
            assert refused(acl_redis, user, "EXPIRE", f"pm:run:{{r}}:{key}", "0"), key
            assert refused(acl_redis, user, "SET", f"pm:run:{{r}}:{key}", "{}"), key


def test_the_answerer_may_not_write_a_runs_progress(acl_redis):
    answerer = acl_redis.redis_client("answerer")
    with pytest.raises(redis.exceptions.NoPermissionError):
        answerer.xadd("pm:run:{r-forged}:progress", {"__data__": json.dumps({"event": "answer"})})


@pytest.mark.parametrize("user", [u for u in SERVICES if u != "verifier"])
def test_only_the_verifier_may_write_a_runs_result(acl_redis, user):
    client = acl_redis.redis_client(user)
    with pytest.raises(redis.exceptions.NoPermissionError):
        client.set("pm:run:{r-forged}:final", "{}")
    with pytest.raises(redis.exceptions.NoPermissionError):
        client.set("pm:run:{r-forged}:owner:final", "x")
    assert dryrun(acl_redis, "verifier", "SET", "pm:run:{r}:final", "{}", "NX") == "OK"


def test_no_service_user_is_granted_a_whole_command_category():
    lines = [ln for ln in re.split(r"\n(?=\S)", TEMPLATE.read_text()) if ln.startswith("user ")]
    service_lines = [ln for ln in lines if ln.split()[1] in SERVICES]
    assert len(service_lines) == len(SERVICES)
    assert [ln.split()[1] for ln in service_lines if "+@" in ln or "allcommands" in ln] == []


def test_the_stack_caps_memory_and_never_evicts(acl_redis):
    config = acl_redis.redis_client().config_get("maxmemory*")
    assert config["maxmemory-policy"] == "noeviction"
    assert int(config["maxmemory"]) > 0
    # AOF is required: queued entries, groups and results must survive a Redis restart.
    assert acl_redis.redis_client().config_get("appendonly")["appendonly"] == "yes"


def test_a_full_redis_refuses_writes_and_keeps_every_queued_entry(tmp_path):
    stack = Stack(tmp_path, services=(), redis_maxmemory="4mb")
    stack.start_redis()
    try:
        admin = stack.redis_client()
        queued = admin.xadd("pm:runs", {"x": "1"})
        for size in (100_000, 1_000, 10):  # fill to the brim, not merely near it
            with pytest.raises(redis.exceptions.OutOfMemoryError):
                for i in range(10_000):
                    admin.set(f"filler:{size}:{i}", b"x" * size)
        with pytest.raises(redis.exceptions.OutOfMemoryError):
            stack.redis_client("gateway").xadd("pm:runs", {"x": "2"})
        assert [e[0] for e in admin.xrange("pm:runs")] == [queued]
    finally:
        stack.stop()


def test_the_services_run_a_whole_run_without_one_acl_denial(api, demo_stack, stack_model):
    """Every command the stages and the gateway send, as they run, is one their user may send."""
    from pmsearch.testing.brains import honest

    admin = demo_stack.redis_client()
    admin.execute_command("ACL", "LOG", "RESET")
    stack_model.set_script(honest())
    alice = api.key("acme/alice")
    resp = api.search(alice, query="Did the insurer accept the Golf claim after we sent the photos?", mode="agentic")
    assert resp.status_code == 200, resp.text
    assert api.search(alice, query="invoice", mode="keyword").status_code == 200
    new_key = api.new_key(tenant_id="acme", principal=f"acl-{uuid.uuid4().hex[:6]}", mailboxes=["alice"])
    assert api.search(new_key, query="claim", mode="hybrid").status_code == 200
    time.sleep(1)  # the stages' last writes (expiries, acks) land after the reply
    denials = [(e["username"], e["object"], e["context"]) for e in admin.acl_log() if e["username"] in SERVICES]
    assert denials == []


def test_no_connection_can_act_as_the_default_user(acl_redis):
    # The default user holds every permission for the AOF replay's sake (see
    # deploy/redis/users.acl.in): it must stay impossible to become.
    anonymous = redis.Redis.from_url(acl_redis.redis_url)
    with pytest.raises(redis.exceptions.AuthenticationError):
        anonymous.ping()
    for password in ("", "nopass", acl_redis.secrets.passwords["admin"]):
        with pytest.raises((redis.exceptions.AuthenticationError, redis.exceptions.ResponseError)):
            redis.Redis.from_url(acl_redis.redis_url, username="default", password=password).ping()


def test_the_sync_feeds_ingest_but_reads_no_mail_and_no_other_callers_replies(acl_redis):
    assert not refused(acl_redis, "sync", "HSET", "pm:sync:acme:alice:INBOX", "last_uid", "7")
    assert not refused(acl_redis, "sync", "BLPOP", "pm:reply:sync-abc", "1")
    assert refused(acl_redis, "sync", "BLPOP", "pm:reply:0f3a", "1")  # a gateway request's reply
    assert refused(acl_redis, "sync", "XREADGROUP", "GROUP", "searcher", "x", "STREAMS", "pm:ingest", ">")
    assert refused(acl_redis, "sync", "XRANGE", "pm:ingest", "-", "+")
    assert refused(acl_redis, "sync", "HSET", "pm:apikey:x", "tenant", "acme")
