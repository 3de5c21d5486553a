"""The answerer worker. Run with ``python -m pmsearch.services.answerer.worker``.

:func:`build_app` wires the answerer to its own Redis and model client from settings, so
tests build it against their own Redis and model server.
"""

from __future__ import annotations

from pmsearch.services.answerer.service import Answerer
from pmsearch.shared import streams
from pmsearch.shared.health import serve
from pmsearch.shared.llm import ModelClient
from pmsearch.shared.llm.stage import model_stage
from pmsearch.shared.messages import AnswerRequested
from pmsearch.shared.settings import AnswererSettings, answerer_settings
from pmsearch.shared.telemetry import setup_logging
from pmsearch.shared.worker import Delivery, Policy, Worker


def build_app(
    settings: AnswererSettings | None = None,
    *,
    consumer: str | None = None,
    policy: Policy | None = None,
    model: ModelClient | None = None,
) -> Worker:
    """The answerer's worker; connects as the answerer's own Redis user."""
    settings = settings or answerer_settings()
    stage = model_stage("answerer", settings, consumer=consumer, policy=policy, model=model)
    worker, redis, model = stage.worker, stage.redis, stage.model
    answerer = Answerer(redis, model, settings.citation_source)

    async def on_answer(req: AnswerRequested, delivery: Delivery) -> None:
        await answerer.answer(req)

    # A late request is still handled: the answer the planner's model wrote before the
    # deadline is cited and verified; one still to be written ends budget_exhausted at once.
    worker.subscribe(
        streams.ANSWERS, AnswerRequested, on_answer, concurrency=settings.worker_concurrency, skip_late=False,
        on_dead_letter=answerer.give_up,
    )
    return worker


def main() -> None:
    settings = answerer_settings()
    setup_logging(settings, "answerer")
    serve(build_app(settings), settings)


if __name__ == "__main__":
    main()
