"""The whole stack on a Redis Cluster of three primaries with every stage stream in
three partitions (``PM_REDIS_CLUSTER``, ``PM_STREAM_PARTITIONS``): each service a
cluster client logging in as its own shipped ACL user, runs answered through every
stage, a run's messages kept to one partition of each stream, and the partitions
spread over the primaries."""

from __future__ import annotations

import pytest
from rich.console import Console

from pmsearch.cli.demo import load_demo
from pmsearch.cli.stack import Stack
from pmsearch.shared import streams
from pmsearch.shared.bus import decode
from pmsearch.shared.messages import RunRequested
from pmsearch.testing.brains import knowing
from tests.fixtures.stack import DEMO, Api, scripted_stack_env

QUESTIONS = {
    "Did the insurer accept the Golf claim after we sent the photos?": ("accepted", "2,115.50"),
}


@pytest.fixture(scope="module")
def cluster_api(tmp_path_factory, stack_model):
    before = streams.partition_count()
    stack = Stack(
        tmp_path_factory.mktemp("cluster-stack"),
        extra_env=scripted_stack_env(stack_model.base_url) | {"PM_STREAM_PARTITIONS": "3"},
        cluster=True,
    )
    try:
        stack.start()
        stack.demo_keys = load_demo(stack, DEMO, Console(quiet=True))
        streams.set_partitions(3)  # this process reads the stack's streams
        yield Api(stack)
    finally:
        streams.set_partitions(before)
        stack.stop()


@pytest.mark.timeout(600)
def test_agentic_runs_are_answered_on_a_cluster_with_partitioned_streams(cluster_api, stack_model):
    stack_model.set_script(knowing(QUESTIONS))
    key = cluster_api.key("acme/alice")
    run_ids = []
    for _ in range(6):
        (question,) = QUESTIONS
        resp = cluster_api.search(key, query=question, mode="agentic")
        assert resp.status_code == 200, resp.text
        result = resp.json()
        assert result["outcome"] == "answered" and "accepted" in result["answer"]["text"]
        run_ids.append(result["run_id"])
    admin = cluster_api.stack.redis_client()
    holders: dict[str, set[str]] = {}
    for partition in streams.partitions(streams.RUNS):
        for _, fields in admin.xrange(partition):
            holders.setdefault(decode(fields, RunRequested).run_id, set()).add(partition)
    assert all(holders[run] == {streams.partition(streams.RUNS, run)} for run in run_ids)
    slots = {int(admin.keyslot(p)) * 3 // streams.SLOTS for p in streams.partitions(streams.RUNS)}
    assert slots == {0, 1, 2}  # one partition on each primary's third of the slots


def test_direct_searches_are_answered_on_a_cluster(cluster_api):
    resp = cluster_api.search(cluster_api.key("acme/alice"), query="insurer photos", mode="keyword")
    assert resp.status_code == 200, resp.text
    assert resp.json()["hits"]
