"""The answerer worker. Run with ``python -m services.answerer.worker``."""

from __future__ import annotations

import asyncio
import logging

from faststream import FastStream

from services.answerer.service import Answerer
from shared import streams
from shared.bus import connect
from shared.llm import ModelClient
from shared.messages import AnswerRequested
from shared.settings import answerer_settings
from shared.telemetry import report_streams, serve_metrics, setup_logging
from shared.worker import make_broker, subscribe

log = logging.getLogger("pmsearch.answerer")

settings = answerer_settings()
broker = make_broker(settings)
redis = connect(settings)
app = FastStream(broker)
answerer = Answerer(redis, ModelClient(settings), settings.citation_source)


async def on_answer(req: AnswerRequested) -> None:
    await answerer.answer(req)


subscribe(broker, redis, streams.ANSWERS, AnswerRequested, on_answer, concurrency=settings.worker_concurrency)


@app.on_startup
async def _startup() -> None:
    setup_logging(settings.log_level)
    if settings.metrics_port:
        serve_metrics(settings.metrics_port)
        asyncio.get_running_loop().create_task(report_streams(redis, [streams.ANSWERS], streams.GROUP))
    log.info("answerer ready")


if __name__ == "__main__":
    asyncio.run(app.run())
