"""How long `pmsearch ask` follows a run through cut streams (pmsearch/cli/ask.py), on a clock of
its own: the gateway's part is played by a stand-in for one stream attempt."""

from __future__ import annotations

import httpx
import pytest
import typer

from pmsearch.cli import ask as ask_cli


@pytest.fixture
def clock(monkeypatch) -> list[float]:
    now = [0.0]
    monkeypatch.setattr(ask_cli.time, "monotonic", lambda: now[0])
    monkeypatch.setattr(ask_cli.time, "sleep", lambda s: now.__setitem__(0, now[0] + s))
    return now


def attempts(monkeypatch, clock: list[float], script: list[str]) -> list[str]:
    """Each attempt: "stream N" (opens, runs N s, is cut), "down" (connection refused),
    "retry" (409 with Retry-After), "done"."""
    seen: list[str] = []

    def stream(self, console):
        step = script[len(seen)] if len(seen) < len(script) else script[-1]
        seen.append(step)
        if step == "done":
            return {"outcome": "answered"}
        if step == "retry":
            raise ask_cli.Retry(1.0)
        if step == "down":
            raise httpx.ConnectError("refused")
        self.started = self._streaming = True
        clock[0] += float(step.split()[1])
        raise httpx.ReadError("cut")

    monkeypatch.setattr(ask_cli.Follow, "stream", stream)
    return seen


def test_each_cut_after_a_reconnect_gets_its_own_window(monkeypatch, clock):
    attempts(monkeypatch, clock, ["stream 5", "down", "stream 40", "stream 40", "done"])
    assert ask_cli.ask(None, "http://gw", "k", "q") == {"outcome": "answered"}


def test_a_gateway_down_past_the_window_ends_the_command(monkeypatch, clock):
    seen = attempts(monkeypatch, clock, ["stream 5", "down"])
    with pytest.raises(typer.Exit) as ended:
        ask_cli.ask(None, "http://gw", "k", "q")
    assert ended.value.exit_code == 3
    assert clock[0] >= 5 + ask_cli.RECONNECT_SECONDS and len(seen) < 100


def test_retries_asked_for_by_the_gateway_are_bounded_too(monkeypatch, clock):
    attempts(monkeypatch, clock, ["stream 5", "retry"])
    with pytest.raises(typer.Exit) as ended:
        ask_cli.ask(None, "http://gw", "k", "q")
    assert ended.value.exit_code == 1
