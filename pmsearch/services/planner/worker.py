"""The planner worker. Run with ``python -m pmsearch.services.planner.worker``.

:func:`build_app` wires the planner to its own Redis and model client from settings, so
tests build it against their own Redis and model server.
"""

from __future__ import annotations

from pmsearch.services.planner.repository import PlannerRepository
from pmsearch.services.planner.service import Planner
from pmsearch.shared import streams
from pmsearch.shared.health import serve
from pmsearch.shared.llm import ModelClient
from pmsearch.shared.llm.stage import model_stage
from pmsearch.shared.messages import RunRequested, ToolBatchCompleted
from pmsearch.shared.settings import PlannerSettings, planner_settings
from pmsearch.shared.telemetry import setup_logging
from pmsearch.shared.worker import Delivery, Policy, Worker


def build_app(
    settings: PlannerSettings | None = None,
    *,
    consumer: str | None = None,
    policy: Policy | None = None,
    model: ModelClient | None = None,
) -> Worker:
    """The planner's worker; connects as the planner's own Redis user."""
    settings = settings or planner_settings()
    stage = model_stage("planner", settings, consumer=consumer, policy=policy, model=model)
    worker, redis, model = stage.worker, stage.redis, stage.model
    planner = Planner(PlannerRepository(redis), model, min_coverage=settings.extract_min_coverage)

    async def on_run(req: RunRequested, delivery: Delivery) -> None:
        await planner.start(req)

    async def on_observation(batch: ToolBatchCompleted, delivery: Delivery) -> None:
        await planner.observe(batch)

    # Runs wait on the model for seconds at a time: take several at once. A late
    # observation is still handled: the planner then ends the run at once
    # (budget_exhausted, with its trace) instead of leaving it to the watchdog.
    worker.subscribe(streams.RUNS, RunRequested, on_run, concurrency=settings.worker_concurrency)
    worker.subscribe(
        streams.OBSERVATIONS, ToolBatchCompleted, on_observation,
        concurrency=settings.worker_concurrency, skip_late=False,
    )
    return worker


def main() -> None:
    settings = planner_settings()
    setup_logging(settings, "planner")
    serve(build_app(settings), settings)


if __name__ == "__main__":
    main()
