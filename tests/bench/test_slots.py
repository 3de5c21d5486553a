"""bench.slots' audit: which transactions and multi-key commands span hash slots, read
from MONITOR lines, with the keys a real redis-server names (COMMAND GETKEYS)."""

from __future__ import annotations

import redis

from bench.slots import MONITOR_LINE, audit, monitor_argv, observe


def lines(*raw: str) -> list[tuple[str, list[str]]]:
    out = []
    for line in raw:
        found = MONITOR_LINE.match(line)
        out.append((found.group(1), monitor_argv(found.group(2))))
    return out


def test_a_transaction_over_two_slots_is_listed_with_its_slots_and_user(redis_url):
    admin = redis.Redis.from_url(redis_url)
    watched = lines(
        '1.0 [0 127.0.0.1:1] "MULTI"',
        '1.1 [0 127.0.0.1:2] "GET" "pm:tenant:acme"',
        '1.2 [0 127.0.0.1:1] "SET" "pm:run:{abc}:meta" "{\\"a\\": 1}"',
        '1.3 [0 127.0.0.1:1] "XADD" "pm:runs" "*" "data" "x"',
        '1.4 [0 127.0.0.1:1] "EXEC"',
        '2.0 [0 127.0.0.1:2] "MULTI"',
        '2.1 [0 127.0.0.1:2] "SET" "pm:run:{abc}:meta" "x"',
        '2.2 [0 127.0.0.1:2] "GET" "pm:run:{abc}:final"',
        '2.3 [0 127.0.0.1:2] "EXEC"',
    )
    rows = audit(watched, admin, {"127.0.0.1:1": "gateway", "127.0.0.1:2": "verifier"})
    assert [(r["user"], r["slots"], r["sent"]) for r in rows] == [("gateway", 2, 1), ("verifier", 1, 1)]
    assert rows[0]["keys"] == "SET pm:run:*:meta + XADD pm:runs"


def test_a_multi_key_command_outside_a_transaction_is_listed_too(redis_url):
    admin = redis.Redis.from_url(redis_url)
    rows = audit(lines('1.0 [0 127.0.0.1:3] "MGET" "pm:apikey:a" "pm:apikey:b"',
                       '1.1 [0 127.0.0.1:3] "GET" "pm:apikey:a"'), admin, {})
    assert [(r["kind"], r["slots"], r["user"]) for r in rows] == [("MGET", 2, "?")]


def test_no_transaction_or_multi_key_command_of_the_running_stack_spans_two_slots():
    # The stack with its demo mailbox, agentic runs waited for and streamed, a cancel,
    # direct searches and the key list, every command watched: a Redis Cluster would
    # refuse any of them whose keys lie on two slots.
    watched, rows = observe(runs=2)
    assert watched > 500 and any(r["user"] == "gateway" and r["kind"] == "MULTI" for r in rows), rows
    assert [r for r in rows if r["slots"] > 1] == []
