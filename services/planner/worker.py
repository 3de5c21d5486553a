"""The planner worker. Run with ``python -m services.planner.worker``."""

from __future__ import annotations

import asyncio
import logging

from faststream import FastStream

from services.planner.repository import PlannerRepository
from services.planner.service import Planner
from shared import streams
from shared.bus import connect
from shared.llm import ModelClient
from shared.messages import RunRequested, ToolBatchCompleted
from shared.settings import planner_settings
from shared.telemetry import report_streams, serve_metrics, setup_logging
from shared.worker import make_broker, subscribe

log = logging.getLogger("pmsearch.planner")

settings = planner_settings()
broker = make_broker(settings)
redis = connect(settings)
app = FastStream(broker)
planner = Planner(PlannerRepository(redis), ModelClient(settings))


async def on_run(req: RunRequested) -> None:
    await planner.start(req)


async def on_observation(batch: ToolBatchCompleted) -> None:
    await planner.observe(batch)


# Runs wait on the model for seconds at a time: take several at once.
subscribe(broker, redis, streams.RUNS, RunRequested, on_run, concurrency=settings.worker_concurrency)
subscribe(broker, redis, streams.OBSERVATIONS, ToolBatchCompleted, on_observation, concurrency=settings.worker_concurrency)


@app.on_startup
async def _startup() -> None:
    setup_logging(settings.log_level)
    if settings.metrics_port:
        serve_metrics(settings.metrics_port)
        asyncio.get_running_loop().create_task(report_streams(redis, [streams.RUNS, streams.OBSERVATIONS], streams.GROUP))
    log.info("planner ready")


if __name__ == "__main__":
    asyncio.run(app.run())
