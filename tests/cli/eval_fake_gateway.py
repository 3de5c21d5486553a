"""A stand-in gateway for the eval tests: streams scripted SSE runs and serves them back
from ``GET /v1/runs/{id}``, on a free port, in a thread of the test process."""

from __future__ import annotations

import asyncio
import json
import threading
import time
import uuid

import uvicorn
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse
from sse_starlette.sse import EventSourceResponse

from pmsearch.cli.stack import free_port

EVIDENCE_AFTER = 0.2  # seconds before the first evidence event
DONE_AFTER = 0.5  # seconds before done


def make_app(answers: dict[str, dict], requests: list[dict]) -> FastAPI:
    """``answers`` maps a question to the finished run's fields; "boom" answers 500, "slow" never ends."""
    app = FastAPI()
    runs: dict[str, dict] = {}

    @app.post("/v1/search")
    async def search(request: Request):
        body = await request.json()
        requests.append({"body": body, "auth": request.headers.get("authorization"), "accept": request.headers.get("accept")})
        if body["query"] == "boom":
            return JSONResponse({"title": "Internal Server Error", "status": 500, "detail": "kaputt"}, status_code=500,
                                media_type="application/problem+json")
        run_id = uuid.uuid4().hex
        result = {"run_id": run_id, "tenant_id": "acme", "question": body["query"], "outcome": "insufficient_evidence",
                  "trace": {"steps": [], "removed_sentences": []}, "usage": {"model_calls": 1}}
        result.update(answers.get(body["query"], {}))
        runs[run_id] = result

        async def events():
            yield {"event": "step", "data": json.dumps({"step": 1, "kind": "plan"})}
            if body["query"] == "slow":
                await asyncio.sleep(30)
            await asyncio.sleep(EVIDENCE_AFTER)
            yield {"event": "evidence", "data": json.dumps({"message": {"message_id": "m1"}})}
            yield {"event": "answer", "data": json.dumps({"text": "draft"})}
            await asyncio.sleep(DONE_AFTER - EVIDENCE_AFTER)
            # Deliberately not the full result: the client must take GET /v1/runs/{id}.
            yield {"event": "done", "data": json.dumps({"run_id": run_id, "outcome": "degraded"})}

        return EventSourceResponse(events(), headers={"X-Run-Id": run_id}, ping=5)

    @app.get("/v1/runs/{run_id}")
    async def get_run(run_id: str):
        return JSONResponse(runs[run_id]) if run_id in runs else JSONResponse({"title": "Not Found"}, status_code=404)

    return app


class FakeGateway:
    def __init__(self) -> None:
        self.answers: dict[str, dict] = {}
        self.requests: list[dict] = []
        self.port = free_port()
        app = make_app(self.answers, self.requests)
        config = uvicorn.Config(app, host="127.0.0.1", port=self.port, log_level="warning", timeout_graceful_shutdown=1)
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> FakeGateway:
        self.thread.start()
        deadline = time.monotonic() + 10
        while not self.server.started:
            if time.monotonic() > deadline or not self.thread.is_alive():
                raise RuntimeError("fake gateway did not start")
            time.sleep(0.02)
        return self

    def __exit__(self, *exc) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)
