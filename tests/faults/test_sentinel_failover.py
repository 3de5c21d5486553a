"""Sentinel mode (PM_REDIS_SENTINELS): a service's client follows the primary the
sentinels name through a SIGKILL of the primary, on real redis-server processes with
pmsearch's ACL users (pmsearch/cli/failover.py)."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time

import pytest
import redis
import redis.asyncio as aioredis

from pmsearch.cli.failover import FailoverSet
from pmsearch.cli.stack import ROOT
from pmsearch.services.verifier import metrics
from pmsearch.services.verifier.errors import ResultNotReplicated
from pmsearch.services.verifier.repository import Repository
from pmsearch.shared import bus, streams
from pmsearch.shared.messages import RunResult
from pmsearch.shared.runstore import RunStore
from pmsearch.shared.settings import ServiceSettings

pytestmark = pytest.mark.timeout(450)


@pytest.fixture
def failover(tmp_path):
    fs = FailoverSet(tmp_path / "failover").start()
    try:
        yield fs
    finally:
        fs.stop()


def settings_for(fs: FailoverSet, user: str, monkeypatch) -> ServiceSettings:
    for key, value in fs.service_env(user).items():
        monkeypatch.setenv(key, value)
    return ServiceSettings()


async def write_until(client: aioredis.Redis, stop: asyncio.Event, acknowledged: list[bytes], failures: list[float]):
    """XADD as a producer does, waiting out a Redis that is down (bus.connect's contract)."""
    n = 0
    while not stop.is_set():
        try:
            acknowledged.append(await client.xadd("pm:queries", {"n": str(n)}))
            n += 1
        except (redis.ConnectionError, redis.TimeoutError):
            failures.append(time.monotonic())
            await asyncio.sleep(0.05)
        await asyncio.sleep(0.005)


def stored(fs: FailoverSet, port: int) -> list[bytes]:
    return [entry_id for entry_id, _ in fs.data_client(port).xrange("pm:queries")]


def test_a_services_client_writes_to_the_new_primary_after_a_sigkill_and_loses_nothing_acknowledged(
    failover, monkeypatch
):
    settings = settings_for(failover, "gateway", monkeypatch)
    old, replica = failover.data_ports

    async def scenario() -> tuple[list[bytes], list[float], float]:
        client = bus.connect(settings)
        stop, acknowledged, failures = asyncio.Event(), [], []
        writer = asyncio.create_task(write_until(client, stop, acknowledged, failures))
        await asyncio.sleep(0.5)
        killed_at = time.monotonic()
        failover.kill("redis-0")
        new = await asyncio.to_thread(failover.wait_for_primary, old)
        assert new == replica
        # The old primary comes back as a crash restart would: as a primary, with its data.
        failover.start_data(0)
        await asyncio.sleep(3)
        stop.set()
        await writer
        await client.aclose()
        return acknowledged, failures, killed_at

    acknowledged, failures, killed_at = asyncio.run(scenario())
    assert failures, "the writer never saw the primary go"
    after = [t for t in failures if t >= killed_at]
    assert after and len(acknowledged) > 50
    # Every write a client was told succeeded is on the primary now, in order; none twice.
    on_primary, told = stored(failover, replica), set(acknowledged)
    assert [entry for entry in on_primary if entry in told] == acknowledged
    assert len(told) == len(acknowledged)
    # The restarted old primary is made to follow the new one, and holds the same.
    FailoverSet._wait(lambda: failover.role(old) == "slave", "the old primary to follow", 20)
    FailoverSet._wait(lambda: stored(failover, old) == stored(failover, replica), "the old primary to catch up", 20)


def test_a_service_user_cannot_reconfigure_the_sentinels_or_the_failover(failover):
    client = failover.sentinel_client(failover.sentinel_ports[0])
    assert client.sentinel_get_master_addr_by_name("pmsearch")
    refused = (("SENTINEL", "FAILOVER", "pmsearch"), ("SENTINEL", "REMOVE", "pmsearch"), ("SENTINEL", "SET", "pmsearch", "quorum", "1"))
    for command in refused:
        with pytest.raises(redis.exceptions.NoPermissionError):
            client.execute_command(*command)
    gateway = failover.data_client(failover.data_ports[0], "gateway")
    for command in (("REPLICAOF", "NO", "ONE"), ("PSYNC", "?", "-1"), ("CONFIG", "SET", "masterauth", "x")):
        with pytest.raises(redis.exceptions.NoPermissionError):
            gateway.execute_command(*command)


def test_a_failover_user_cannot_read_or_write_pmsearch_keys(failover):
    primary = failover.data_ports[0]
    failover.data_client(primary).set("pm:tenant:acme", "x")
    for user in ("replica", "sentinel"):
        client = failover.data_client(primary, user)
        with pytest.raises(redis.exceptions.NoPermissionError):
            client.get("pm:tenant:acme")
        with pytest.raises(redis.exceptions.NoPermissionError):
            client.set("pm:tenant:acme", "y")


def test_sentinel_addresses_that_are_not_host_port_stop_the_service_at_start(monkeypatch):
    monkeypatch.setenv("PM_REDIS_SENTINELS", "127.0.0.1:26379,sentinel-b")
    with pytest.raises(ValueError, match="'sentinel-b' is not host:port"):
        ServiceSettings()


def test_agentic_runs_end_exactly_once_through_sigkills_of_the_primary():
    """The whole stack on Sentinel (bench.soak's harness: scripted model, demo mailbox,
    a careful client), the primary SIGKILLed every few seconds while runs are in flight;
    the supervisor starts each old primary again as its successor's replica."""
    proc = subprocess.run(
        [sys.executable, "-m", "bench.soak", "--runs", "24", "--rate", "1", "--kill-every", "1000s",
         "--max-kills", "0", "--kill-redis-primary-every", "8s"],
        capture_output=True, text=True, timeout=400, cwd=ROOT,
    )
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert result["lost"] == 0 and result["duplicated"] == 0
    assert result["runs_in_store"] == 24 and result["outcomes"] == {"answered": 24}
    assert result["redis_primary_kills"] >= 2 and len(result["failover_s"]) == result["redis_primary_kills"]


def _verifier_finishes(fs: FailoverSet, monkeypatch, run: str) -> bool:
    """The verifier's finishing step for a fresh run, through the sentinels as the
    verifier user (the shipped ACL): True when it published the run."""
    settings = settings_for(fs, "verifier", monkeypatch)

    async def finish() -> bool:
        client = bus.connect(settings)
        try:
            repo = Repository(client, replicas=settings.result_replicas())
            result = RunResult(run_id=run, tenant_id="acme", outcome="insufficient_evidence", finished_at=time.time())
            return await repo.finish(result, "1-0")
        finally:
            await client.aclose()

    return asyncio.run(finish())


def _published(fs: FailoverSet, run: str):
    async def read():
        client = aioredis.Redis(port=fs.primary_port(), username="admin", password=fs.secrets.passwords["admin"])
        try:
            return await RunStore(client).published_result(run)
        finally:
            await client.aclose()

    return asyncio.run(read())


def test_a_result_is_on_the_replica_before_its_run_is_announced(failover, monkeypatch):
    primary, replica = failover.data_ports
    before = metrics.RESULTS_UNREPLICATED._value.get()
    assert _verifier_finishes(failover, monkeypatch, "r" * 32)
    assert failover.data_client(replica).get(streams.final_key("r" * 32)) is not None
    assert _published(failover, "r" * 32) is not None
    assert metrics.RESULTS_UNREPLICATED._value.get() == before


def test_a_result_no_replica_holds_is_not_announced_until_its_retry_finds_one(failover, monkeypatch):
    """A stopped replica: the verifier waits its bounded time, leaves the run
    unannounced (no client reads a result a failover could lose) and counts it; the
    draft's retry, once the replica is back, announces the same stored result."""
    run, before = "s" * 32, metrics.RESULTS_UNREPLICATED._value.get()
    replica = failover.procs["redis-1"]
    os.killpg(replica.pid, signal.SIGSTOP)
    try:
        with pytest.raises(ResultNotReplicated):
            _verifier_finishes(failover, monkeypatch, run)
        assert _published(failover, run) is None
    finally:
        os.killpg(replica.pid, signal.SIGCONT)
    assert metrics.RESULTS_UNREPLICATED._value.get() == before + 1
    stored = failover.primary_client().get(streams.final_key(run))
    assert _verifier_finishes(failover, monkeypatch, run)
    assert _published(failover, run).model_dump_json() == stored.decode()
