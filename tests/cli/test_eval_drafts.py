"""pmsearch.cli.evaluation.drafts: a run's draft and evidence kept beside the eval report."""

from __future__ import annotations

import uuid

import pytest
import redis as sync_redis

from pmsearch.cli.evaluation.drafts import DraftKeeper, load
from pmsearch.shared import streams
from pmsearch.shared.bus import encode
from pmsearch.shared.messages import DraftSentence
from pmsearch.shared.runstore import RunStore
from tests.services.verifier.factory import M1, evidence, request


@pytest.fixture
def client(redis_url):
    c = sync_redis.Redis.from_url(redis_url)
    yield c
    c.close()


async def test_a_kept_draft_reads_back_with_its_evidence(client, redis, tmp_path):
    run_id = uuid.uuid4().hex
    req = request(run_id=run_id, sentences=[DraftSentence(text="The insurer accepted the claim.", citations=[M1])])
    await RunStore(redis).add_evidence(run_id, 0, evidence(), req.deadline)
    client.xadd(streams.DRAFTS_FROM_ANSWERER, encode(req))

    assert DraftKeeper(client, tmp_path).keep(run_id)

    kept = load(tmp_path / "report.json")
    draft, ev = kept[run_id]
    assert draft == req
    assert ev == evidence()


def test_a_run_without_a_draft_keeps_nothing(client, tmp_path):
    assert not DraftKeeper(client, tmp_path).keep(uuid.uuid4().hex)
    assert load(tmp_path / "report.json") == {}


def test_without_the_stack_credentials_nothing_is_kept(tmp_path):
    keeper = DraftKeeper.for_local_stack(tmp_path / "no-var", 1, tmp_path)
    assert not keeper.keep("any-run")
