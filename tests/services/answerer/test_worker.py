"""The answerer's worker built by its factory against the test's own Redis."""

from __future__ import annotations

import asyncio
import time
import uuid

from pmsearch.services.answerer.worker import build_app
from pmsearch.shared.bus import decode, publish
from pmsearch.shared.messages import AnswerRequested, DraftSentence, Trace, Usage, VerificationRequested
from pmsearch.shared.settings import AnswererSettings
from pmsearch.shared.streams import ANSWERS, DRAFTS_FROM_ANSWERER
from pmsearch.shared.worker import Policy

POLICY = Policy(reclaim_idle_ms=400, heartbeat_ms=100, reclaim_poll_ms=50, block_ms=200)


async def test_the_factory_builds_an_answerer_on_the_given_redis(redis_url, redis):
    settings = AnswererSettings(redis_url=redis_url, model_base_url="http://127.0.0.1:9/v1")
    worker = build_app(settings, consumer="t-answerer", policy=POLICY)
    run = f"run-{uuid.uuid4().hex[:10]}"
    req = AnswerRequested(
        run_id=run, tenant_id="acme", scope_token="token", deadline=time.time() + 60, question="Was it accepted?",
        step=1, trace=Trace(), usage=Usage(), proposed=[DraftSentence(text="It was accepted.", citations=[])],
    )
    await worker.start()
    try:
        await publish(redis, ANSWERS, req)
        drafts: list[VerificationRequested] = []
        for _ in range(200):
            drafts = [d for d in await _drafts(redis) if d.run_id == run]
            if drafts:
                break
            await asyncio.sleep(0.05)
    finally:
        await worker.stop()
    (draft,) = drafts
    assert draft.question == req.question


async def _drafts(redis) -> list[VerificationRequested]:
    found = []
    for _, fields in await redis.xrange(DRAFTS_FROM_ANSWERER):
        try:
            found.append(decode(fields, VerificationRequested))
        except ValueError:
            pass  # other tests' malformed entries on the shared server
    return found
