"""A process's operator port (``PM_METRICS_HOST``:``PM_METRICS_PORT``): its Prometheus
metrics, liveness and readiness (a worker's here; the gateway's probes are its own, on
the same server).

* ``/metrics``: the process's metrics.
* ``/healthz`` (live): the event loop answers within :data:`PROBE_SECONDS` and every
  consume loop of the worker runs. Failing it calls for a restart.
* ``/readyz`` (ready): Redis answers, every input stream has the stage's consumer
  group, and each check the stage added (:meth:`pmsearch.shared.worker.Worker.check_ready`)
  passes: the searcher's index is open, the model endpoint answers for the planner and
  the answerer. Failing it says "running, but cannot do its work now".

Both answer ``200`` or ``503`` with ``{"status": "ok"|"fail", "checks": {...}}``.

The server runs in its own thread (the standard library's WSGI server, as
prometheus_client's own), not on the worker's event loop: a blocked loop then shows as
a failed liveness probe instead of as no answer at all. The checks themselves run on
the worker's loop, where its Redis client lives.
"""

from __future__ import annotations

import asyncio
import json
import socket
import threading
from collections.abc import Awaitable, Callable, Mapping
from concurrent.futures import TimeoutError as FutureTimeout
from socketserver import ThreadingMixIn
from typing import TYPE_CHECKING, Any
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

import uvloop
from prometheus_client import make_wsgi_app

from pmsearch.shared.settings import ServiceSettings

if TYPE_CHECKING:
    from pmsearch.shared.worker import Worker

# One check's time limit; a probe's whole answer waits at most a little longer.
PROBE_SECONDS = 2.0

Check = Callable[[], Awaitable[None]]


class LoopProbes:
    """Liveness and readiness evaluated on a process's event loop, from the operator
    port's thread: a subclass says what each checks."""

    def __init__(self, loop: asyncio.AbstractEventLoop, timeout: float = PROBE_SECONDS) -> None:
        self.loop = loop
        self.timeout = timeout

    async def live(self) -> dict[str, str]:
        raise NotImplementedError

    async def ready(self) -> dict[str, str]:
        raise NotImplementedError

    async def run_checks(self, checks: dict[str, Check]) -> dict[str, str]:
        """Each check's ``ok`` or what went wrong, each within the probe's time limit."""
        results: dict[str, str] = {}
        for name, check in checks.items():
            try:
                await asyncio.wait_for(check(), self.timeout)
                results[name] = "ok"
            except TimeoutError:
                results[name] = f"no answer within {self.timeout:g} s"
            except Exception as exc:  # noqa: BLE001 - reported, not raised: that is the probe's job
                results[name] = f"{type(exc).__name__}: {exc}"[:200]
        return results

    def evaluate(self, probe: Callable[[], Awaitable[dict[str, str]]]) -> tuple[bool, dict[str, Any]]:
        """Run ``probe`` on the process's loop from the server's thread."""
        future = asyncio.run_coroutine_threadsafe(probe(), self.loop)
        try:
            checks = future.result(timeout=self.timeout * 4)
        except FutureTimeout:
            future.cancel()
            checks = {"event_loop": f"no answer within {self.timeout * 4:g} s"}
        ok = all(v == "ok" for v in checks.values())
        return ok, {"status": "ok" if ok else "fail", "checks": checks}


class Probes(LoopProbes):
    """Liveness and readiness of one worker."""

    def __init__(self, worker: Worker, loop: asyncio.AbstractEventLoop, timeout: float = PROBE_SECONDS) -> None:
        super().__init__(loop, timeout)
        self.worker = worker

    async def live(self) -> dict[str, str]:
        return {"consumers": "ok" if self.worker.alive else "a consume loop is not running"}

    async def ready(self) -> dict[str, str]:
        return await self.run_checks({
            "consumers": self._consuming, "redis": self._redis, "groups": self._groups, **self.worker.ready_checks,
        })

    async def _consuming(self) -> None:
        if not self.worker.alive:
            raise RuntimeError("not consuming (starting, stopping, or a consume loop ended)")

    async def _redis(self) -> None:
        await self.worker.redis.ping()

    async def _groups(self) -> None:
        for stream, group in self.worker.groups.items():
            names = {_text(g["name"]) for g in await self.worker.redis.xinfo_groups(stream)}
            if group not in names:
                raise RuntimeError(f"{stream} has no consumer group {group}")


def _text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value


class _QuietHandler(WSGIRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the stdlib's name
        pass  # Prometheus scrapes every few seconds: no access log


# A document the operator port serves besides the probes: its path, content type and body.
Documents = Mapping[str, tuple[str, Callable[[], bytes]]]


def _wsgi(probes: LoopProbes, documents: Documents):
    metrics = make_wsgi_app()

    def app(environ: dict[str, Any], start_response: Callable[..., Any]) -> list[bytes]:
        path = environ.get("PATH_INFO", "")
        if path in documents:
            content_type, body = documents[path]
            start_response("200 OK", [("Content-Type", content_type)])
            return [body()]
        if path not in ("/healthz", "/readyz"):
            return metrics(environ, start_response)
        ok, body = probes.evaluate(probes.live if path == "/healthz" else probes.ready)
        start_response("200 OK" if ok else "503 Service Unavailable", [("Content-Type", "application/json")])
        return [json.dumps(body).encode()]

    return app


def start_server(host: str, port: int, probes: LoopProbes, documents: Documents | None = None) -> WSGIServer:
    """Serve ``/metrics``, ``/healthz``, ``/readyz`` and ``documents`` on ``host:port``
    from a thread."""

    class Server(ThreadingMixIn, WSGIServer):
        daemon_threads = True
        address_family = socket.AF_INET6 if ":" in host else socket.AF_INET

    server = make_server(host, port, _wsgi(probes, documents or {}), Server, handler_class=_QuietHandler)
    threading.Thread(target=server.serve_forever, name="operator port", daemon=True).start()
    return server


async def run_worker(worker: Worker, settings: ServiceSettings) -> None:
    """Run ``worker`` until SIGTERM or SIGINT, with its operator port when
    ``PM_METRICS_PORT`` is set."""
    server = None
    if settings.metrics_port:
        probes = Probes(worker, asyncio.get_running_loop())
        server = start_server(settings.metrics_host, settings.metrics_port, probes)
    try:
        await worker.run()
    finally:
        if server is not None:
            server.shutdown()
            server.server_close()


def serve(worker: Worker, settings: ServiceSettings) -> None:
    """A worker process's main: :func:`run_worker` on uvloop's event loop.

    Under load a stage's CPU goes mostly to the event loop and its socket writes (one
    per Redis command); uvloop does both in C (measured with ``bench.load``, see
    docs/design.md)."""
    uvloop.run(run_worker(worker, settings))


__all__ = ["PROBE_SECONDS", "LoopProbes", "Probes", "run_worker", "serve", "start_server"]
