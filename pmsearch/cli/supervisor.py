"""Keep the local stack's processes running: `pmsearch up` is the embedded default's
supervisor.

A process that exits is started again after a delay that doubles with each exit in a
row (1 s, 2 s, 4 s, ... at most 60 s) and drops back to 1 s once the process has run
for a minute: a stage that crashed once is back at once, one that cannot start does not
spin. The rest keep serving meanwhile; work sent to a dead stage waits in its consumer
group, and the restarted stage reclaims what its predecessor had in hand.
"""

from __future__ import annotations

import signal
import time
from dataclasses import dataclass, field
from typing import Callable

from pmsearch.cli.stack import Stack


def describe_exit(code: int) -> str:
    if code < 0:
        try:
            return f"was killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"was killed by signal {-code}"
    return f"exited with code {code}"


@dataclass
class Supervisor:
    stack: Stack
    report: Callable[[str], None]
    first_delay: float = 1.0
    max_delay: float = 60.0
    stable_after: float = 60.0
    clock: Callable[[], float] = time.monotonic
    _exits: dict[str, int] = field(default_factory=dict)  # exits in a row, per process
    _due: dict[str, float] = field(default_factory=dict)  # when a dead process starts again
    _since: dict[str, float] = field(default_factory=dict)  # when each was last (re)started

    def check(self) -> None:
        """Restart what is due; schedule the restart of what died since the last check."""
        now = self.clock()
        for name, proc in list(self.stack.procs.items()):
            if name in self._due:
                if now >= self._due[name]:
                    self._restart(name, now)
                continue
            code = proc.poll()
            if code is None:
                if now - self._since.setdefault(name, now) >= self.stable_after:
                    self._exits[name] = 0
                continue
            self._schedule(name, now, describe_exit(code))

    def run(self, interval: float = 0.5) -> None:
        """Supervise until interrupted (KeyboardInterrupt: Ctrl-C, or SIGTERM in `pmsearch up`)."""
        while True:
            self.check()
            time.sleep(interval)

    def _schedule(self, name: str, now: float, why: str) -> None:
        exits = self._exits[name] = self._exits.get(name, 0) + 1
        delay = min(self.first_delay * 2 ** (exits - 1), self.max_delay)
        self._due[name] = now + delay
        self.report(f"{name} {why}; restarting it in {delay:g} s (exit {exits} in a row, logs in {self.stack.log_dir}/{name}.log)")

    def _restart(self, name: str, now: float) -> None:
        del self._due[name]
        try:
            proc = self.stack.restart(name)
        except OSError as exc:  # e.g. the interpreter or redis-server gone: try again later
            self._schedule(name, now, f"could not be started ({exc})")
            return
        self._since[name] = now
        self.report(f"{name} restarted (pid {proc.pid})")
