"""Stream names and their partitions (pmsearch/shared/streams.py)."""

from __future__ import annotations

import pytest
from redis.crc import key_slot

from pmsearch.shared import streams
from pmsearch.shared.bus import routing_key
from pmsearch.shared.messages import DeliveryWithdrawn, IngestRequested, SearchRequested, ToolBatchRequested


@pytest.fixture
def partitions_of():
    before = streams.partition_count()

    def use(count: int) -> None:
        streams.set_partitions(count)

    yield use
    streams.set_partitions(before)


def test_one_partition_is_the_stream_itself(partitions_of):
    partitions_of(1)
    assert streams.partitions(streams.RUNS) == (streams.RUNS,)
    assert streams.partition(streams.RUNS, "run-1") == streams.RUNS


def test_three_partitions_lie_in_three_thirds_of_the_slots(partitions_of):
    # A cluster of three primaries made by redis-cli holds the slots in three equal
    # ranges, in order: each partition on its own primary.
    partitions_of(3)
    for stream in (streams.RUNS, streams.TOOLS, streams.DRAFTS_FROM_PLANNER):
        keys = streams.partitions(stream)
        assert [key_slot(k.encode()) * 3 // streams.SLOTS for k in keys] == [0, 1, 2]
        assert all(streams.logical(k) == stream for k in keys)
        assert all(streams.partitions(k) == (k,) for k in keys)  # a partition is not split again


def test_a_routing_key_always_chooses_the_same_partition(partitions_of):
    partitions_of(5)
    chosen = {streams.partition(streams.RUNS, f"run-{n}") for n in range(200)}
    assert chosen == set(streams.partitions(streams.RUNS))  # all used
    assert streams.partition(streams.RUNS, "run-7") == streams.partition(streams.RUNS, "run-7")


def test_dead_letters_and_the_retired_drafts_stream_are_not_partitioned(partitions_of):
    partitions_of(3)
    assert streams.partitions(streams.LEGACY_DRAFTS) == (streams.LEGACY_DRAFTS,)
    assert streams.logical(streams.dead_letter(streams.RUNS)) == streams.dead_letter(streams.RUNS)


def test_a_stream_has_at_least_one_partition():
    with pytest.raises(ValueError):
        streams.set_partitions(0)


def test_a_message_is_routed_by_its_run_else_its_folder_else_its_request():
    assert routing_key(ToolBatchRequested.model_construct(run_id="run-1", tenant_id="t")) == "run-1"
    ingest = IngestRequested(request_id="req-2", tenant_id="t", mailbox="m", folder="INBOX", raw=[])
    assert routing_key(ingest) == "t/m/INBOX"  # one folder's imports and withdrawals in order
    withdrawn = DeliveryWithdrawn(tenant_id="t", mailbox="m", folder="INBOX", message_ids=["a"])
    assert routing_key(withdrawn) == "t/m/INBOX"
    search = SearchRequested.model_construct(request_id="req-1")
    assert routing_key(search) == "req-1"
