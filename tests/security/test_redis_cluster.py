"""The shipped Redis users on a Redis Cluster of three primaries (``pmsearch.testing.cluster``):
each service user can open a cluster client (the slot map, the command table) and run
its own commands on keys of every primary, and is refused the cluster's administration."""

from __future__ import annotations

import pytest
import redis
from redis.crc import key_slot

from pmsearch.cli.acl import USERS
from pmsearch.testing.cluster import LoopbackCluster

# One command each stage's user may send, on its own keys (deploy/redis/users.acl.in).
OWN = {
    "gateway": ("GET", "pm:tenant:{}"),
    "searcher": ("HGETALL", "pm:run:{{{}}}:evidence"),
    "planner": ("GET", "pm:run:{{{}}}:state"),
    "answerer": ("HGETALL", "pm:run:{{{}}}:evidence"),
    "verifier": ("GET", "pm:run:{{{}}}:final"),
    "sync": ("HLEN", "pm:sync:{}"),
}
ADMINISTRATION = [
    ("CLUSTER", "FAILOVER"), ("CLUSTER", "RESET"), ("CLUSTER", "FORGET", "0" * 40), ("CLUSTER", "MEET", "127.0.0.1", "1"),
    ("CLUSTER", "SETSLOT", "0", "STABLE"), ("FLUSHALL",), ("CONFIG", "GET", "*"), ("READWRITE",),
]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    with LoopbackCluster(tmp_path_factory.mktemp("cluster")) as running:
        yield running


def spread(pattern: str, nodes: int) -> list[str]:
    """Keys of ``pattern`` on as many different primaries' slot ranges as there are."""
    keys, ranges = [], set()
    for n in range(1000):
        key = pattern.format(f"k{n}") if "{}" in pattern else pattern
        part = key_slot(key.encode()) * nodes // 16384
        if part not in ranges:
            ranges.add(part)
            keys.append(key)
        if len(ranges) == nodes or "{}" not in pattern:
            break
    return keys


def test_the_cluster_has_every_slot_on_three_primaries(cluster):
    shards = {tuple(s[:2]) for s in cluster.node(cluster.ports[0]).execute_command("CLUSTER", "SLOTS")}
    assert len(shards) == 3


@pytest.mark.parametrize("user", [u for u in USERS if u != "admin"])
def test_each_service_user_opens_a_cluster_client_and_reaches_every_primary(cluster, user):
    client = cluster.client(user)
    assert client.ping()
    command, pattern = OWN[user]
    for key in spread(pattern, 3):
        client.execute_command(command, key)  # NOPERM would raise


@pytest.mark.parametrize("user", [u for u in USERS if u != "admin"] + ["keda"])
@pytest.mark.parametrize("command", ADMINISTRATION, ids=lambda c: " ".join(c[:2]))
def test_no_service_user_may_administer_the_cluster(cluster, user, command):
    node = cluster.node(cluster.ports[0], user)
    with pytest.raises(redis.exceptions.NoPermissionError):
        node.execute_command(*command)
