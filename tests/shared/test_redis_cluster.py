"""The services' cluster client (pmsearch/shared/redis_cluster.py) on three primaries on
loopback: it waits for a free connection instead of failing, and places stream reads
without asking the server where their keys are."""

from __future__ import annotations

import asyncio

import pytest

from pmsearch.shared.bus import connect
from pmsearch.shared.consumer_group import ConsumerGroup
from pmsearch.shared.redis_cluster import WaitingCluster
from pmsearch.shared.settings import ServiceSettings
from pmsearch.testing.cluster import LoopbackCluster


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    with LoopbackCluster(tmp_path_factory.mktemp("cluster")) as nodes:
        yield nodes


def settings_for(cluster: LoopbackCluster, user: str = "admin") -> ServiceSettings:
    return ServiceSettings(
        redis_url=f"redis://127.0.0.1:{cluster.ports[0]}/0", redis_cluster=True,
        redis_username=user, redis_password=cluster.secrets.passwords[user],
    )


def getkeys_calls(cluster: LoopbackCluster) -> int:
    return sum(
        int(cluster.node(port).info("commandstats").get("cmdstat_command|getkeys", {}).get("calls", 0))
        for port in cluster.ports
    )


async def test_a_stage_client_on_a_cluster_waits_for_a_connection_when_all_are_busy(cluster):
    client = connect(settings_for(cluster), max_connections=4, pool_timeout=10)
    assert isinstance(client, WaitingCluster)
    try:
        # Twice as many blocking reads as connections: redis-py's own pool would raise
        # MaxConnectionsError on the fifth; these wait their turn.
        replies = await asyncio.gather(*(client.blpop([f"pm:reply:wait-{n}"], timeout=0.3) for n in range(8)))
        assert replies == [None] * 8
    finally:
        await client.aclose()


async def test_a_client_that_finds_no_connection_in_time_fails_as_a_connection_error(cluster):
    from redis.exceptions import ConnectionError as RedisConnectionError

    client = connect(settings_for(cluster), max_connections=4, pool_timeout=0.2)
    try:
        results = await asyncio.gather(
            *(client.blpop([f"pm:reply:late-{n}"], timeout=1) for n in range(5)), return_exceptions=True
        )
        assert sum(isinstance(r, RedisConnectionError) for r in results) == 1
    finally:
        await client.aclose()


async def test_stream_reads_are_placed_without_asking_the_server(cluster):
    client = connect(settings_for(cluster, "planner"))
    try:
        group = ConsumerGroup(client, "pm:runs", "planner", "c1")
        await group.ensure()
        before = getkeys_calls(cluster)
        for _ in range(5):
            await group.read(1, 1)
        assert getkeys_calls(cluster) == before
    finally:
        await client.aclose()


def test_a_cluster_is_refused_beside_sentinels_or_with_result_replicas():
    with pytest.raises(ValueError, match="exclude each other"):
        ServiceSettings(redis_cluster=True, redis_sentinels="127.0.0.1:26379")
    with pytest.raises(ValueError, match="not supported with PM_REDIS_CLUSTER"):
        ServiceSettings(redis_cluster=True, redis_result_replicas=1)
