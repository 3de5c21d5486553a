"""Mail- and model-derived text reaches the terminal as text: no Rich markup read from
it, no escape sequence passed through."""

from __future__ import annotations

import base64
import io
import os
import subprocess
import sys

import pytest
from rich.console import Console

from pmsearch.cli.ask import render_event, render_result

CRASHER = "Invoice [/dim] paid"
LINK = "[link=https://evil.example/pay]Verified by pmsearch[/link]"
ESCAPES = "clear\x1b[2J\x1b]8;;https://evil.example\x07here\x1b]8;;\x07 \x9b31m csi \u202eevil\u202c"


def hostile_result(text: str) -> dict:
    """A finished run whose every printed string is ``text``."""
    excerpt = {"part": "body", "start": 0, "end": 4, "text": text}
    return {
        "run_id": "r1",
        "outcome": "degraded",
        "reason": text,
        "model_note": text,
        "answer": {"text": text, "sentences": [{"text": text, "citations": [{"message_id": text, "excerpt": excerpt}]}]},
        "trace": {
            "removed_sentences": [{"text": text, "reason": "unsupported_claim", "offending": text}],
            "widen_attempts": [{"tool": "search", "detail": text}],
        },
        "hits": [{"subject": text, "sender": text, "message_id": text}],
        "usage": {"steps": 1, "seconds": 1.0},
    }


def render_all(console: Console, text: str) -> None:
    render_event(console, "step", {"step": 1, "kind": "search", "action": text, "reason": text})
    render_event(console, "step", {"step": 1, "kind": "search", "calls": [{"tool": text, "arguments": {"q": text}}]})
    render_event(console, "evidence", {"message": {"date": "2024-03-05", "sender": text, "subject": text, "message_id": text}})
    render_result(console, hostile_result(text))


def terminal() -> tuple[Console, io.StringIO]:
    buf = io.StringIO()
    return Console(file=buf, force_terminal=True, color_system="truecolor", width=200), buf


def test_markup_in_mail_text_prints_literally_instead_of_crashing():
    console, buf = terminal()
    render_all(console, CRASHER)
    assert buf.getvalue().count(CRASHER) >= 10


def test_mail_text_cannot_make_links_or_styles():
    console, buf = terminal()
    render_all(console, LINK + " [bold green]answered[/]")
    out = buf.getvalue()
    assert "\x1b]8;" not in out  # an OSC 8 hyperlink
    assert "[link=https://evil.example/pay]" in out and "[bold green]" in out


def test_escape_sequences_in_mail_text_never_reach_the_terminal():
    buf = io.StringIO()
    render_all(Console(file=buf, color_system=None, width=200), ESCAPES)
    out = buf.getvalue()
    for forbidden in ("\x1b", "\x07", "\x9b", "\u202e"):
        assert forbidden not in out
    assert "clear[2J" in out


def pmsearch(stack, *args: str, key: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PM_")}
    env.update(PM_GATEWAY_URL=stack.gateway_url, PM_API_KEY=key)
    return subprocess.run([sys.executable, "-m", "pmsearch.cli.main", *args], env=env, capture_output=True, text=True, timeout=180)


@pytest.fixture(scope="module")
def hostile_mailbox_key(api) -> str:
    """A mailbox holding one mail whose subject and sender carry markup and escapes."""
    raw = (
        b"From: =?utf-8?q?[link=https://evil.example]Bank[/link]_=1B[31m?= <billing@vendor.example>\r\n"
        b"To: alice@acme.example\r\n"
        b"Subject: =?utf-8?q?Invoice_[/dim]_paid_=1B]8;;https://evil.example=07x=1B[2J?=\r\n"
        b"Message-ID: <terminal-injection-1@vendor.example>\r\n"
        b"Date: Tue, 05 Mar 2024 10:00:00 +0000\r\n\r\n"
        b"The invoice INV-2024-9001 was paid on 5 March. [bold red]Verified[/] \x1b[2J\r\n"
    )
    mailbox = "sec-terminal"
    resp = api.http.post(
        "/v1/admin/ingest",
        json={"tenant_id": "acme", "mailbox": mailbox, "raw": [base64.b64encode(raw).decode()]},
        headers=api.admin_headers,
    )
    assert resp.status_code == 200 and resp.json()["indexed"] == 1, resp.text
    return api.new_key(tenant_id="acme", principal="sec-terminal", mailboxes=[mailbox])


def test_search_prints_a_hostile_subject_as_text(demo_stack, hostile_mailbox_key):
    run = pmsearch(demo_stack, "search", "invoice paid", key=hostile_mailbox_key)
    assert run.returncode == 0, run.stderr
    assert CRASHER in run.stdout and "[link=https://evil.example]Bank[/link]" in run.stdout
    assert "\x1b" not in run.stdout and "\x07" not in run.stdout


def test_ask_prints_a_hostile_subject_as_text(demo_stack, stack_model, hostile_mailbox_key):
    from pmsearch.testing.brains import honest

    stack_model.set_script(honest())
    run = pmsearch(demo_stack, "ask", "Was invoice INV-2024-9001 paid?", key=hostile_mailbox_key)
    assert run.returncode == 0, run.stderr
    assert "Traceback" not in run.stderr
    assert CRASHER in run.stdout
    assert "\x1b" not in run.stdout and "\x07" not in run.stdout
