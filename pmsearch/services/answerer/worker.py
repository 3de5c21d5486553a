"""The answerer worker. Run with ``python -m pmsearch.services.answerer.worker``.

:func:`build_app` wires the answerer to its own Redis and model client from settings, so
tests build it against their own Redis and model server.
"""

from __future__ import annotations

import logging

from pmsearch.services.answerer.service import Answerer
from pmsearch.shared import streams
from pmsearch.shared.bus import connect
from pmsearch.shared.health import serve
from pmsearch.shared.llm import ModelClient
from pmsearch.shared.llm.health import model_check
from pmsearch.shared.messages import AnswerRequested
from pmsearch.shared.settings import AnswererSettings, answerer_settings
from pmsearch.shared.telemetry import setup_logging
from pmsearch.shared.worker import Delivery, Policy, Worker

log = logging.getLogger("pmsearch.answerer")


def build_app(
    settings: AnswererSettings | None = None,
    *,
    consumer: str | None = None,
    policy: Policy | None = None,
    model: ModelClient | None = None,
) -> Worker:
    """The answerer's worker; connects as the answerer's own Redis user."""
    settings = settings or answerer_settings()
    worker = Worker(settings, consumer=consumer, policy=policy)
    redis = connect(settings)
    model = model or ModelClient(settings)
    answerer = Answerer(redis, model, settings.citation_source)

    async def on_answer(req: AnswerRequested, delivery: Delivery) -> None:
        await answerer.answer(req)

    # A late request is still handled: the answer the planner's model wrote before the
    # deadline is cited and verified; one still to be written ends budget_exhausted at once.
    worker.subscribe(
        streams.ANSWERS, AnswerRequested, on_answer, concurrency=settings.worker_concurrency, skip_late=False,
        on_dead_letter=answerer.give_up,
    )

    async def ready() -> None:
        log.info("answerer ready")

    worker.on_start(ready)
    worker.check_ready("model", model_check(settings))
    worker.on_stop(model.aclose)
    worker.on_stop(redis.aclose)
    return worker


def main() -> None:
    settings = answerer_settings()
    setup_logging(settings, "answerer")
    serve(build_app(settings), settings)


if __name__ == "__main__":
    main()
