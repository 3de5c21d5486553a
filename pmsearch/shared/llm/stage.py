"""What a stage that calls a model starts with: its worker, its own Redis connection and
model client, ready once the model answers, both closed when the worker stops. The
planner and the answerer add their subscriptions to it."""

from __future__ import annotations

import logging
from dataclasses import dataclass

from redis.asyncio import Redis

from pmsearch.shared.bus import connect
from pmsearch.shared.llm.client import ModelClient
from pmsearch.shared.llm.health import model_check
from pmsearch.shared.settings import ModelSettings
from pmsearch.shared.worker import Policy, Worker


@dataclass(frozen=True)
class ModelStage:
    worker: Worker
    redis: Redis
    model: ModelClient


def model_stage(
    name: str, settings: ModelSettings, *, consumer: str | None, policy: Policy | None, model: ModelClient | None,
) -> ModelStage:
    """The stage ``name``'s worker; it connects as the stage's own Redis user and uses
    ``model`` (a test's) or a client of the configured model."""
    worker = Worker(settings, consumer=consumer, policy=policy)
    redis = connect(settings)
    model = model or ModelClient(settings)
    log = logging.getLogger(f"pmsearch.{name}")

    async def ready() -> None:
        log.info("%s ready", name)

    worker.on_start(ready)
    worker.check_ready("model", model_check(settings))
    worker.on_stop(model.aclose)
    worker.on_stop(redis.aclose)
    return ModelStage(worker, redis, model)
