"""A Redis primary, its replica and three sentinels as real processes on loopback, with
pmsearch's ACL users: what ``pmsearch up --sentinel``, the fault tests and the soak
benchmark run Sentinel mode on (docs/scale.md, "Redis Sentinel").

Every data server runs with the shipped ACL (``deploy/redis/users.acl.in``) and logs in
to its primary as the ``replica`` user; each sentinel watches the primary as the
``sentinel`` user, and lets clients ask who the primary is as ``discovery``
(:func:`pmsearch.cli.acl.sentinel_users`). A sentinel rewrites its own file, so each
has one of its own.
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

from pmsearch.cli.acl import render, sentinel_users
from pmsearch.cli.private import write_private
from pmsearch.cli.stack import Secrets, free_port

MASTER = "pmsearch"
# A primary silent this long is down to a sentinel; two must agree. One second failed
# over live primaries that a loaded two-core machine kept busy for a second, and each
# such failover loses what the old primary took until it is demoted.
DOWN_AFTER_MS = 2000
FAILOVER_TIMEOUT_MS = 5000
QUORUM = 2


@dataclass
class FailoverSet:
    """``start()`` brings up a primary, a replica and three sentinels under ``root``."""

    root: Path
    secrets: Secrets | None = None  # made and kept under root when not given
    log_dir: Path | None = None  # root when not given
    data_ports: list[int] = field(default_factory=list)
    sentinel_ports: list[int] = field(default_factory=list)
    procs: dict[str, subprocess.Popen] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.root = Path(self.root).resolve()
        self.root.mkdir(parents=True, exist_ok=True)
        self.log_dir = Path(self.log_dir or self.root)
        self.log_dir.mkdir(parents=True, exist_ok=True)
        self.secrets = self.secrets or Secrets.load_or_create(self.root / "secrets.json")
        self.data_ports = self.data_ports or [free_port(), free_port()]
        self.sentinel_ports = self.sentinel_ports or [free_port() for _ in range(3)]

    # ------------------------------------------------------------ addresses

    @property
    def sentinels(self) -> str:
        """``PM_REDIS_SENTINELS`` for this set."""
        return ",".join(f"127.0.0.1:{p}" for p in self.sentinel_ports)

    def service_env(self, user: str) -> dict[str, str]:
        """The Redis settings of a service logging in as ``user`` through the sentinels."""
        return {
            "PM_REDIS_URL": "redis://127.0.0.1/0",
            "PM_REDIS_USERNAME": user,
            "PM_REDIS_PASSWORD": self.secrets.passwords[user],
            "PM_REDIS_SENTINELS": self.sentinels,
            "PM_REDIS_SENTINEL_MASTER": MASTER,
            "PM_REDIS_SENTINEL_USERNAME": "discovery",
            "PM_REDIS_SENTINEL_PASSWORD": self.secrets.passwords["discovery"],
        }

    def data_client(self, port: int, user: str = "admin") -> redis.Redis:
        return redis.Redis(port=port, username=user, password=self.secrets.passwords[user], socket_timeout=5)

    def sentinel_client(self, port: int) -> redis.Redis:
        return redis.Redis(port=port, username="discovery", password=self.secrets.passwords["discovery"],
                           socket_timeout=5, decode_responses=True)

    def primary_port(self) -> int | None:
        """The port of the primary a majority of the sentinels name now; None while they
        name none or disagree."""
        named: list[int] = []
        for port in self.sentinel_ports:
            try:
                addr = self.sentinel_client(port).sentinel_get_master_addr_by_name(MASTER)
            except redis.RedisError:
                continue
            if addr:
                named.append(int(addr[1]))
        best = max(set(named), key=named.count, default=None)
        return best if best is not None and named.count(best) >= QUORUM else None

    def primary_client(self, user: str = "admin") -> redis.Redis:
        """A client of the primary the sentinels name now, as ``user``."""
        port = self.primary_port()
        if port is None:
            raise redis.ConnectionError("the sentinels name no primary")
        return self.data_client(port, user)

    def ready_to_fail_over(self, primary: int) -> bool:
        """Whether losing the primary on ``primary`` now is a failure this set survives:
        it has a replica past its first full copy (``state=online``) at most a second
        behind, and a quorum of sentinels know that replica as healthy. Killed sooner, the
        sentinels promote an empty replica, or find none and wait out their failover
        timeout twice over: one replica survives one failure at a time."""
        try:
            info = self.data_client(primary).info("replication")
        except redis.RedisError:
            return False
        replicas = (info.get(f"slave{i}") for i in range(int(info.get("connected_slaves", 0))))
        synced = {int(r["port"]) for r in replicas
                  if isinstance(r, dict) and r.get("state") == "online" and int(r.get("lag", 99)) <= 1}
        knowing = 0
        for port in self.sentinel_ports:
            try:
                known = self.sentinel_client(port).sentinel_slaves(MASTER)
            except redis.RedisError:
                continue
            knowing += any(int(r.get("port", 0)) in synced and r.get("master-port") == primary
                           and r.get("master-link-status") == "ok" and not (r.get("is_sdown") or r.get("is_odown"))
                           and not r.get("is_disconnected") for r in known)
        return knowing >= QUORUM

    def role(self, port: int) -> str:
        return self.data_client(port).execute_command("ROLE")[0].decode()

    # ------------------------------------------------------------ processes

    def _spawn(self, name: str, argv: list[str]) -> subprocess.Popen:
        with open(self.log_dir / f"{name}.log", "ab") as log:
            proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        self.procs[name] = proc
        return proc

    def start_data(self, index: int, replica_of: int | None = None) -> None:
        """Data server ``index`` (0 the first primary), following ``replica_of`` if given."""
        port = self.data_ports[index]
        data_dir = self.root / f"redis-{index}"
        data_dir.mkdir(exist_ok=True)
        acl = data_dir / "users.acl"
        write_private(acl, render(self.secrets.passwords))
        argv = [
            shutil.which("redis-server") or "/usr/bin/redis-server",
            "--port", str(port), "--bind", "127.0.0.1", "--dir", str(data_dir), "--aclfile", str(acl),
            "--appendonly", "yes", "--save", "", "--daemonize", "no",
            "--maxmemory", "256mb", "--maxmemory-policy", "noeviction",
            "--masteruser", "replica", "--masterauth", self.secrets.passwords["replica"],
            # A replica's first copy now, not after the five seconds Redis waits by
            # default for more replicas to share one diskless transfer.
            "--repl-diskless-sync-delay", "0",
        ]
        if replica_of is not None:
            argv += ["--replicaof", "127.0.0.1", str(replica_of)]
        self._spawn(f"redis-{index}", argv)
        self._wait(lambda: self.data_client(port).ping(), f"redis-{index}")

    def start_sentinel(self, index: int) -> None:
        port, primary = self.sentinel_ports[index], self.data_ports[0]
        conf = self.root / f"sentinel-{index}.conf"
        if conf.exists():
            # A sentinel started again reads the state it wrote (which server is the
            # primary now); a new file would point it at the first primary.
            self._spawn(f"sentinel-{index}", [shutil.which("redis-server") or "/usr/bin/redis-server", str(conf), "--sentinel"])
            self._wait(lambda: self.sentinel_client(port).ping(), f"sentinel-{index}")
            return
        lines = [
            f"port {port}", "bind 127.0.0.1", f"dir {self.root}",
            f"sentinel monitor {MASTER} 127.0.0.1 {primary} {QUORUM}",
            f"sentinel down-after-milliseconds {MASTER} {DOWN_AFTER_MS}",
            f"sentinel failover-timeout {MASTER} {FAILOVER_TIMEOUT_MS}",
            f"sentinel parallel-syncs {MASTER} 1",
            f"sentinel auth-user {MASTER} sentinel",
            f"sentinel auth-pass {MASTER} {self.secrets.passwords['sentinel']}",
            "sentinel sentinel-user sentinel",
            f"sentinel sentinel-pass {self.secrets.passwords['sentinel']}",
            *sentinel_users(self.secrets.passwords),
        ]
        write_private(conf, "\n".join(lines) + "\n")
        self._spawn(f"sentinel-{index}", [shutil.which("redis-server") or "/usr/bin/redis-server", str(conf), "--sentinel"])
        self._wait(lambda: self.sentinel_client(port).ping(), f"sentinel-{index}")

    def start(self) -> FailoverSet:
        # A new set: the first data server is the primary, and the sentinels' files of
        # an earlier one (other ports, another primary) are not read.
        for conf in self.root.glob("sentinel-*.conf"):
            conf.unlink()
        self.start_data(0)
        self.start_data(1, replica_of=self.data_ports[0])
        for index in range(len(self.sentinel_ports)):
            self.start_sentinel(index)
        self._wait(self._watched, "the sentinels to find the replica and each other", timeout=30)
        return self

    def _watched(self) -> bool:
        for port in self.sentinel_ports:
            client = self.sentinel_client(port)
            master = client.sentinel_master(MASTER)
            if int(master.get("num-slaves", 0)) < 1 or int(master.get("num-other-sentinels", 0)) < 2:
                return False
        return self.data_client(self.data_ports[1]).info("replication").get("master_link_status") == "up"

    @property
    def names(self) -> list[str]:
        return [f"redis-{i}" for i in range(len(self.data_ports))] + [f"sentinel-{i}" for i in range(len(self.sentinel_ports))]

    def restart(self, name: str) -> subprocess.Popen:
        """Start ``name`` again (the supervisor's launcher): a data server as a replica of
        the primary the sentinels name now, never as a second primary beside it."""
        kind, _, index = name.partition("-")
        if kind == "sentinel":
            self.start_sentinel(int(index))
        else:
            own = self.data_ports[int(index)]
            self.start_data(int(index), replica_of=self._successor(own))
        return self.procs[name]

    def _successor(self, own: int) -> int | None:
        """The primary a data server that died must follow: the one the sentinels name
        once they have failed over from it. While they still name the dead one, wait: come
        back as a primary it would take writes that the failover then throws away. None
        when they name none other within a failover's time (nothing left to follow)."""
        deadline = time.monotonic() + (DOWN_AFTER_MS + FAILOVER_TIMEOUT_MS) / 1000 + 5
        while time.monotonic() < deadline:
            port = self.primary_port()
            if port not in (None, own):
                return port
            time.sleep(0.1)
        return None

    def kill(self, name: str, sig: signal.Signals = signal.SIGKILL) -> None:
        proc = self.procs.pop(name)
        os.killpg(proc.pid, sig)
        proc.wait(10)

    def wait_for_primary(self, not_port: int, timeout: float = 30) -> int:
        """The new primary's port once the sentinels name one other than ``not_port``
        and it says it is one."""
        found: list[int] = []

        def promoted() -> bool:
            port = self.primary_port()
            if port is None or port == not_port or self.role(port) != "master":
                return False
            found.append(port)
            return True

        self._wait(promoted, "a new primary", timeout)
        return found[-1]

    def stop(self) -> None:
        for name in list(self.procs):
            proc = self.procs.pop(name)
            try:
                os.killpg(proc.pid, signal.SIGTERM)
                proc.wait(10)
            except (ProcessLookupError, subprocess.TimeoutExpired):
                os.killpg(proc.pid, signal.SIGKILL)

    @staticmethod
    def _wait(probe, what: str, timeout: float = 20) -> None:
        deadline = time.monotonic() + timeout
        while True:
            try:
                if probe():
                    return
            except (redis.RedisError, OSError):
                pass
            if time.monotonic() > deadline:
                raise TimeoutError(f"timed out waiting for {what}")
            time.sleep(0.1)
