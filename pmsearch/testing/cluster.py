"""A Redis Cluster of three primaries on loopback, each with pmsearch's ACL users, for
tests and benchmarks: what a cluster needs or refuses that one redis-server does not
(docs/scale.md, "Redis Cluster").

Each node runs the shipped ACL (``deploy/redis/users.acl.in``); the cluster is formed by
``redis-cli --cluster create`` as the admin user, and the nodes talk to each other on a
bus port of their own (``cluster-port``: the default, port + 10000, may not be free).
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

import redis
from redis.cluster import RedisCluster

from pmsearch.cli.acl import render
from pmsearch.cli.private import write_private
from pmsearch.cli.stack import Secrets, free_port

PRIMARIES = 3


@dataclass
class LoopbackCluster:
    """``start()`` brings up :data:`PRIMARIES` primaries under ``root`` and forms the cluster."""

    root: Path
    secrets: Secrets | None = None  # made and kept under root when not given
    ports: list[int] = field(default_factory=list)
    procs: list[subprocess.Popen] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.root = Path(self.root).resolve()
        self.root.mkdir(parents=True, exist_ok=True)
        self.secrets = self.secrets or Secrets.load_or_create(self.root / "secrets.json")
        self.ports = self.ports or [free_port() for _ in range(PRIMARIES)]

    def node(self, port: int, user: str = "admin") -> redis.Redis:
        return redis.Redis(port=port, username=user, password=self.secrets.passwords[user], socket_timeout=5,
                           decode_responses=True)

    def client(self, user: str) -> RedisCluster:
        """A cluster client logging in as ``user``."""
        return RedisCluster(host="127.0.0.1", port=self.ports[0], username=user,
                            password=self.secrets.passwords[user], socket_timeout=5, decode_responses=True)

    def start(self) -> LoopbackCluster:
        server = shutil.which("redis-server") or "/usr/bin/redis-server"
        for port in self.ports:
            data_dir = self.root / f"node-{port}"
            data_dir.mkdir(exist_ok=True)
            acl = data_dir / "users.acl"
            write_private(acl, render(self.secrets.passwords))
            with open(data_dir / "redis.log", "ab") as log:
                self.procs.append(subprocess.Popen([
                    server, "--port", str(port), "--bind", "127.0.0.1", "--dir", str(data_dir), "--aclfile", str(acl),
                    "--cluster-enabled", "yes", "--cluster-config-file", str(data_dir / "nodes.conf"),
                    "--cluster-port", str(free_port()), "--save", "", "--appendonly", "no", "--daemonize", "no",
                    "--maxmemory", "256mb", "--maxmemory-policy", "noeviction",
                ], stdout=log, stderr=subprocess.STDOUT, start_new_session=True))
        for port in self.ports:
            self._wait(lambda port=port: self.node(port).ping(), f"node {port}")
        subprocess.run(
            [shutil.which("redis-cli") or "/usr/bin/redis-cli", "--user", "admin",
             "--pass", self.secrets.passwords["admin"], "--no-auth-warning",
             "--cluster", "create", *[f"127.0.0.1:{p}" for p in self.ports], "--cluster-yes"],
            check=True, capture_output=True, timeout=60,
        )
        self._wait(self._formed, "the cluster to cover every slot on every node")
        return self

    def _formed(self) -> bool:
        return all(self.node(p).cluster("info").get("cluster_state") == "ok" for p in self.ports)

    @staticmethod
    def _wait(ready, what: str, timeout: float = 30) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                if ready():
                    return
            except redis.RedisError:
                pass
            time.sleep(0.1)
        raise TimeoutError(f"waited {timeout:.0f} s for {what}")

    def stop(self) -> None:
        for proc in self.procs:
            try:
                os.killpg(proc.pid, signal.SIGTERM)
                proc.wait(10)
            except (ProcessLookupError, subprocess.TimeoutExpired):
                os.killpg(proc.pid, signal.SIGKILL)
        self.procs.clear()

    def __enter__(self) -> LoopbackCluster:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
