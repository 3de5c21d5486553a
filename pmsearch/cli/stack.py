"""Start and stop the embedded stack: Redis (with the ACL file and append-only
persistence), optionally the local model server, and every service as its own process.

Used by ``pmsearch up`` and by the end-to-end tests, so both run the same processes.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Callable

import httpx
import redis

from pmsearch.cli.acl import ACCOUNTS, render
from pmsearch.cli.private import write_private

if TYPE_CHECKING:
    from pmsearch.cli.failover import FailoverSet

ROOT = Path(__file__).resolve().parents[2]
# How the operator wants the processes' logs (JSON lines, or text to read by eye).
LOG_SETTINGS = ("PM_LOG_FORMAT", "PM_LOG_LEVEL")
# Passed to every service from the shell: how long finished runs stay readable, who
# picks citations and how answers are made (so `pmsearch eval` can compare each on the
# local stack).
RUN_SETTINGS = ("PM_RUN_RETENTION_DAYS", "PM_CITATION_SOURCE", "PM_ANSWER_STYLE", "PM_EXTRACT_MIN_COVERAGE")
WORKERS = {
    "searcher": "pmsearch.services.searcher.worker",
    "planner": "pmsearch.services.planner.worker",
    "answerer": "pmsearch.services.answerer.worker",
    "verifier": "pmsearch.services.verifier.worker",
    "sync": "pmsearch.services.sync.worker",
}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class Secrets:
    passwords: dict[str, str]
    scope_key: str
    admin_token: str

    @classmethod
    def load_or_create(cls, path: Path) -> Secrets:
        if path.exists():
            kept = cls(**json.loads(path.read_text()))
            missing = [u for u in ACCOUNTS if u not in kept.passwords]
            if missing:  # a user added since the file was written (an upgrade)
                kept.passwords.update({u: secrets.token_urlsafe(24) for u in missing})
                write_private(path, json.dumps(kept.__dict__))
            return kept
        made = cls(
            passwords={u: secrets.token_urlsafe(24) for u in ACCOUNTS},
            scope_key=secrets.token_urlsafe(32),
            admin_token="adm_" + secrets.token_urlsafe(24),
        )
        write_private(path, json.dumps(made.__dict__))
        return made


@dataclass
class Stack:
    var_dir: Path
    redis_port: int = 0
    gateway_port: int = 0
    services: tuple[str, ...] = ("searcher", "verifier", "planner", "answerer")
    local_model: bool = False  # start llama.cpp's server with the embedded default model
    extra_env: dict[str, str] = field(default_factory=dict)
    log_dir: Path | None = None
    redis_maxmemory: str = "1gb"
    # A primary, its replica and three sentinels instead of one Redis (docs/scale.md,
    # "Redis Sentinel"); the services find the primary through the sentinels.
    sentinel: bool = False
    # Three Redis Cluster primaries instead of one Redis (docs/scale.md, "Redis Cluster");
    # the services are cluster clients (PM_REDIS_CLUSTER).
    cluster: bool = False
    procs: dict[str, subprocess.Popen] = field(default_factory=dict)
    # How to start each process again (the supervisor of `pmsearch up` restarts the dead).
    launchers: dict[str, Callable[[], subprocess.Popen]] = field(default_factory=dict)
    # Each worker's operator port (/metrics, /healthz, /readyz), kept across restarts.
    metrics_ports: dict[str, int] = field(default_factory=dict)
    # The local model's measured prompt tokens a second (None: not measured) and the run
    # budget and model time limit taken from it (see start_local_model).
    model_speed: float | None = None
    run_seconds: float | None = None

    def __post_init__(self) -> None:
        self.var_dir = Path(self.var_dir).resolve()
        self.redis_port = self.redis_port or free_port()
        self.gateway_port = self.gateway_port or free_port()
        self.secrets = Secrets.load_or_create(self.var_dir / "secrets.json")
        self.failover: FailoverSet | None = None
        self.log_dir = Path(self.log_dir or self.var_dir / "log")
        self.log_dir.mkdir(parents=True, exist_ok=True)

    # ------------------------------------------------------------ addresses

    @property
    def redis_url(self) -> str:
        return f"redis://127.0.0.1:{self.redis_port}/0"

    @property
    def gateway_url(self) -> str:
        return f"http://127.0.0.1:{self.gateway_port}"

    def redis_client(self, user: str = "admin") -> redis.Redis:
        """A client of the primary as ``user`` (with Sentinel, the primary named now)."""
        if self.failover is not None:
            return self.failover.primary_client(user)
        if self.cluster:
            from redis.cluster import RedisCluster

            return RedisCluster(  # type: ignore[return-value] - the same commands, routed by slot
                host="127.0.0.1", port=self.redis_port, username=user, password=self.secrets.passwords[user]
            )
        return redis.Redis.from_url(self.redis_url, username=user, password=self.secrets.passwords[user])

    def env_for(self, user: str) -> dict[str, str]:
        """The environment of one service: its own Redis user and only its secrets."""
        env = {k: v for k, v in os.environ.items() if not k.startswith("PM_") or k in LOG_SETTINGS + RUN_SETTINGS}
        env.update(
            PM_REDIS_URL=self.redis_url,
            PM_REDIS_USERNAME=user,
            PM_REDIS_PASSWORD=self.secrets.passwords[user],
            PYTHONUNBUFFERED="1",
        )
        if self.failover is not None:
            env.update(self.failover.service_env(user))
        if self.cluster:
            env["PM_REDIS_CLUSTER"] = "1"
        if user in ("gateway", "searcher"):
            env["PM_SCOPE_KEY"] = self.secrets.scope_key
        if user == "searcher":
            env["PM_DATA_DIR"] = str(self.var_dir / "data")
        if user == "gateway":
            env.update(PM_ADMIN_TOKEN=self.secrets.admin_token, PM_PORT=str(self.gateway_port))
        for key, value in self.extra_env.items():
            # Model settings go to the two stages that call a model, never to the others.
            if key.startswith(("PM_MODEL_", "PM_AGENT_MODEL")) and user not in ("planner", "answerer"):
                continue
            if key.startswith(("PM_SYNC_", "PM_LMTP_")) and user != "sync":
                continue
            env[key] = value
        return env

    # ------------------------------------------------------------ processes

    def _spawn(self, name: str, argv: list[str], env: dict[str, str]) -> subprocess.Popen:
        # Its own session: a terminal's Ctrl-C reaches only `pmsearch up`, which stops
        # every process in order, and stop() can signal a process's whole group.
        with open(self.log_dir / f"{name}.log", "ab") as log:
            proc = subprocess.Popen(argv, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        self.procs[name] = proc
        self.launchers[name] = partial(self._spawn, name, argv, env)
        return proc

    def restart(self, name: str) -> subprocess.Popen:
        """Start ``name`` again as it was started (without waiting for it to be ready)."""
        return self.launchers[name]()

    def start_redis(self) -> None:
        if self.sentinel:
            from pmsearch.cli.failover import FailoverSet

            # Its processes are the stack's: stopped last, restarted by the supervisor.
            self.failover = FailoverSet(self.var_dir / "failover", self.secrets, log_dir=self.log_dir, procs=self.procs)
            self.failover.start()
            self.launchers.update({name: partial(self.failover.restart, name) for name in self.failover.names})
            return
        if self.cluster:
            from pmsearch.testing.cluster import LoopbackCluster

            nodes = LoopbackCluster(self.var_dir / "cluster", self.secrets).start()
            self.redis_port = nodes.ports[0]  # any primary: the clients learn the others from it
            # The nodes are the stack's processes, stopped last as its one Redis is.
            self.procs.update({f"redis-{i}": proc for i, proc in enumerate(nodes.procs)})
            return
        redis_dir = self.var_dir / "redis"
        redis_dir.mkdir(parents=True, exist_ok=True)
        acl = redis_dir / "users.acl"
        write_private(acl, render(self.secrets.passwords))
        binary = shutil.which("redis-server") or "/usr/bin/redis-server"
        argv = [
            binary, "--port", str(self.redis_port), "--bind", "127.0.0.1", "--dir", str(redis_dir),
            "--aclfile", str(acl), "--appendonly", "yes", "--save", "", "--daemonize", "no",
            # Full means refused writes, never evicted queue entries or run records.
            "--maxmemory", self.redis_maxmemory, "--maxmemory-policy", "noeviction",
        ]
        self._spawn("redis", argv, dict(os.environ))
        self._wait(lambda: self.redis_client().ping(), "redis", 20)

    def start_worker(self, name: str) -> None:
        port = self.metrics_ports.setdefault(name, free_port())
        env = self.env_for(name) | {"PM_METRICS_PORT": str(port)}
        self._spawn(name, [sys.executable, "-m", WORKERS[name]], env)
        self.write_scrape_targets()

    @property
    def scrape_targets_path(self) -> Path:
        return self.var_dir / "prometheus" / "targets.json"

    def scrape_targets(self) -> list[dict]:
        """Prometheus file-based service discovery: one group per process, its stage as
        ``job`` (as the compose configuration names them)."""
        ports = dict(self.metrics_ports)
        if "gateway" in self.procs:
            ports["gateway"] = self.gateway_port
        return [{"targets": [f"127.0.0.1:{port}"], "labels": {"job": name}} for name, port in ports.items()]

    def write_scrape_targets(self) -> None:
        """Write :meth:`scrape_targets` whole (renamed into place: Prometheus re-reads the
        file whenever it changes and must never see half of it)."""
        path = self.scrape_targets_path
        path.parent.mkdir(parents=True, exist_ok=True)
        partial_path = path.with_suffix(".json.tmp")
        partial_path.write_text(json.dumps(self.scrape_targets(), indent=2))
        os.replace(partial_path, path)

    def start_gateway(self) -> None:
        self._spawn("gateway", [sys.executable, "-m", "pmsearch.services.gateway.app"], self.env_for("gateway"))
        self._wait(lambda: httpx.get(f"{self.gateway_url}/healthz", timeout=2).raise_for_status(), "gateway", 60)
        self.write_scrape_targets()

    def start_local_model(self) -> None:
        from pmsearch.shared.llm.local_server import (
            DEFAULT_MODEL,
            MODEL_ALIAS,
            prompt_speed,
            run_seconds,
            server_command,
            start_local_model,
        )
        from pmsearch.shared.prompts import prompt_settings, system

        port = free_port()
        with open(self.log_dir / "model.log", "ab") as log:
            self.procs["model"] = start_local_model(port, ROOT / DEFAULT_MODEL, log=log, ready_timeout=300)
        self.launchers["model"] = partial(self._spawn, "model", server_command(port, ROOT / DEFAULT_MODEL), dict(os.environ))
        base_url = f"http://127.0.0.1:{port}/v1"
        # CPUs differ fivefold in how fast they read a prompt (11-90 tokens a second
        # measured on two cores): the model's time limit and the demo's run budget
        # come from this machine's speed, not a guess.
        try:
            self.model_speed = prompt_speed(base_url, MODEL_ALIAS, system(prompt_settings()))
        except (httpx.HTTPError, KeyError, ValueError):
            self.model_speed = None  # the budgets stay at their floor; `pmsearch up` says so
        self.run_seconds = run_seconds(self.model_speed or 0)
        self.extra_env.update(
            PM_MODEL_BASE_URL=base_url,
            PM_MODEL_OUTPUT="json_object_schema",
            PM_AGENT_MODEL=MODEL_ALIAS,
            PM_MODEL_TIMEOUT_SECONDS=str(self.run_seconds),
        )

    def start(self) -> Stack:
        if self.local_model:
            self.start_local_model()
        self.start_redis()
        for name in self.services:
            self.start_worker(name)
        self.start_gateway()
        if "searcher" in self.services:
            self.wait_for_log("searcher", "searcher ready", 180)
        return self

    def wait_for_log(self, name: str, needle: str, timeout: float) -> None:
        path = self.log_dir / f"{name}.log"
        self._wait(lambda: needle in path.read_text(errors="replace") or (_ for _ in ()).throw(RuntimeError()), name, timeout)

    def _wait(self, probe, what: str, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while True:
            for name, proc in self.procs.items():
                if proc.poll() is not None:
                    tail = (self.log_dir / f"{name}.log").read_text(errors="replace")[-3000:]
                    raise RuntimeError(f"{name} exited with {proc.returncode} while waiting for {what}:\n{tail}")
            try:
                probe()
                return
            except Exception:
                if time.monotonic() > deadline:
                    raise TimeoutError(f"{what} not ready after {timeout:g} s") from None
                time.sleep(0.2)

    def stop(self) -> None:
        """Stop the services, then Redis and the model server (the services finish and
        acknowledge their work through Redis): SIGTERM to each process's group, SIGKILL
        to what lingers past 10 s."""
        last = ("redis", "model", *(self.failover.names if self.failover is not None else ()),
                *(n for n in self.procs if n.startswith("redis-")))
        self._stop([p for n, p in self.procs.items() if n not in last])
        self._stop([p for n, p in self.procs.items() if n in last])
        self.procs.clear()

    @staticmethod
    def _stop(procs: list[subprocess.Popen]) -> None:
        for proc in reversed(procs):
            if proc.poll() is None:
                _signal_group(proc, signal.SIGTERM)
        for proc in procs:
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                _signal_group(proc, signal.SIGKILL)
                proc.wait()


def _signal_group(proc: subprocess.Popen, sig: signal.Signals) -> None:
    try:
        os.killpg(proc.pid, sig)
    except ProcessLookupError:
        pass  # exited meanwhile
