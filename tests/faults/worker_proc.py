"""A worker process for the fault tests: the shared runtime (pmsearch/shared/worker.py) with a
handler that dies, or runs long, as its message says.

``python -m tests.faults.worker_proc <redis-url> <stream>``. Every handler run is logged
to the list ``<stream>:calls`` as ``start|end <entry id> <delivery count> <pid>``; the
process logs ``ready - 0 <pid>`` once it reads and ``stopped - 0 <pid>`` from its stop
hook."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from typing import Literal

import redis.asyncio as aioredis
from pydantic import BaseModel

from pmsearch.shared.settings import ServiceSettings
from pmsearch.shared.worker import Delivery, Policy, Worker

GROUP = "g"
POLICY = Policy(reclaim_idle_ms=600, heartbeat_ms=100, reclaim_poll_ms=100, max_deliveries=3, block_ms=200)


class Task(BaseModel):
    kind: Literal["ok", "exit", "sigkill", "long"]
    seconds: float = 0.0


async def main(url: str, stream: str) -> None:
    worker = Worker(ServiceSettings(redis_url=url), policy=POLICY)
    log = aioredis.from_url(url)
    calls = f"{stream}:calls"

    async def handle(task: Task, delivery: Delivery) -> None:
        await log.rpush(calls, f"start {delivery.entry_id} {delivery.count} {os.getpid()}")
        if task.kind == "exit":
            os._exit(137)  # as an OOM kill or a native crash: no exception, no cleanup
        if task.kind == "sigkill":
            os.kill(os.getpid(), signal.SIGKILL)
        await asyncio.sleep(task.seconds)
        await log.rpush(calls, f"end {delivery.entry_id} {delivery.count} {os.getpid()}")

    async def ready() -> None:
        await log.rpush(calls, f"ready - 0 {os.getpid()}")

    async def stopped() -> None:  # where a stage closes what it holds (the searcher: its index)
        await log.rpush(calls, f"stopped - 0 {os.getpid()}")

    worker.subscribe(stream, Task, handle, group=GROUP, concurrency=4)
    worker.on_start(ready)
    worker.on_stop(stopped)
    await worker.run()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2]))
