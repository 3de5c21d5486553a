"""The pmsearch command against a running stack, as a user runs it."""

from __future__ import annotations

import os
import subprocess
import sys
from email.message import EmailMessage

import pytest


def pmsearch(stack, *args: str, key: str | None = None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PM_")}
    env.update(PM_GATEWAY_URL=stack.gateway_url, PM_ADMIN_TOKEN=stack.secrets.admin_token, PM_VAR_DIR=str(stack.var_dir))
    if key:
        env["PM_API_KEY"] = key
    return subprocess.run([sys.executable, "-m", "pmsearch.cli.main", *args], env=env, capture_output=True, text=True, timeout=120)


def _eml(n: int) -> bytes:
    msg = EmailMessage()
    msg["From"] = "Ida Quist <ida@acme.example>"
    msg["To"] = "alice@acme.example"
    msg["Subject"] = f"CLI import check {n}"
    msg["Message-ID"] = f"<cli-import-{n}@acme.example>"
    msg["Date"] = "Mon, 06 May 2024 09:00:00 +0200"
    msg.set_content(f"Zebra crossing repaint number {n} is booked.")
    return bytes(msg)


def test_ingest_reports_each_malformed_message_on_one_line_and_imports_the_rest(demo_stack, tmp_path):
    folder = tmp_path / "mail"
    folder.mkdir()
    for n in range(3):
        (folder / f"{n}.eml").write_bytes(_eml(n))
    (folder / "broken.eml").write_bytes(b"\x00\x01\x02 not mail at all \xff\xfe")
    run = pmsearch(demo_stack, "ingest", str(folder), "-t", "acme", "-m", "alice")
    assert run.returncode == 1
    skipped = [line for line in run.stderr.splitlines() if line.startswith("skipped")]
    assert len(skipped) == 1 and "broken.eml" in skipped[0]
    assert "Traceback" not in run.stderr
    assert "indexed 3" in run.stdout
    again = pmsearch(demo_stack, "ingest", str(folder / "0.eml"), "-t", "acme", "-m", "alice")
    assert again.returncode == 0 and "already present 1" in again.stdout


def test_a_re_import_sends_only_the_messages_a_maildir_gained(demo_stack, tmp_path):
    import mailbox

    box = mailbox.Maildir(str(tmp_path / "Maildir"), create=True)
    for n in range(100, 130):
        box.add(_eml(n))
    first = pmsearch(demo_stack, "ingest", str(tmp_path / "Maildir"), "-t", "acme", "-m", "bob")
    assert first.returncode == 0 and "indexed 30," in first.stdout, first.stderr
    for n in range(130, 135):
        box.add(_eml(n))
    again = pmsearch(demo_stack, "ingest", str(tmp_path / "Maildir"), "-t", "acme", "-m", "bob")
    assert again.returncode == 0, again.stderr
    assert "indexed 5, already present 0, unchanged since the last import 30" in again.stdout
    full = pmsearch(demo_stack, "ingest", str(tmp_path / "Maildir"), "-t", "acme", "-m", "bob", "--full")
    assert "indexed 0, already present 35, unchanged since the last import 0" in full.stdout


def test_search_prints_hits(demo_stack):
    run = pmsearch(demo_stack, "search", "INV-2024-0173", "--mode", "keyword", key=demo_stack.demo_keys["acme/bob"])
    assert run.returncode == 0, run.stderr
    assert "INV-2024-0173" in run.stdout


@pytest.mark.parametrize(
    "args,message",
    [
        (("ingest", "/no/such/path", "-t", "acme", "-m", "alice"), "no such file"),
        (("search", "x"), "no API key"),
        (("search", "x", "--key", "pk_wrong"), "401"),
    ],
)
def test_errors_are_one_readable_line_and_a_non_zero_exit(demo_stack, args, message):
    run = pmsearch(demo_stack, *args)
    assert run.returncode != 0
    lines = [line for line in run.stderr.splitlines() if line.strip()]
    assert message in run.stderr and "Traceback" not in run.stderr
    assert len(lines) == 1


def test_keys_create_prints_a_working_key(demo_stack):
    run = pmsearch(demo_stack, "keys", "create", "-t", "acme", "-p", "cli@acme.example", "-m", "alice")
    assert run.returncode == 0, run.stderr
    key = run.stdout.strip()
    assert key.startswith("pk_")
    assert pmsearch(demo_stack, "search", "invoice", key=key).returncode == 0


def test_ask_streams_a_run_and_prints_the_verified_answer(demo_stack, stack_model):
    from pmsearch.testing.brains import honest

    stack_model.set_script(honest())
    run = pmsearch(demo_stack, "ask", "Did the insurer accept the Golf claim?", key=demo_stack.demo_keys["acme/alice"])
    assert run.returncode == 0, run.stderr
    assert "step 0 first_search" in run.stdout
    assert "evidence" in run.stdout
    assert "answered" in run.stdout


def test_ask_json_prints_only_the_finished_verified_run(demo_stack, stack_model):
    import json

    from pmsearch.testing.brains import honest

    stack_model.set_script(honest())
    run = pmsearch(demo_stack, "ask", "Did the insurer accept the Golf claim?", "--json",
                   key=demo_stack.demo_keys["acme/alice"])
    assert run.returncode == 0, run.stderr
    result = json.loads(run.stdout)  # nothing but the run on stdout
    assert result["outcome"] == "answered" and result["answer"]["sentences"]
    stored = demo_stack_run(demo_stack, result["run_id"], demo_stack.demo_keys["acme/alice"])
    assert result == stored


def demo_stack_run(stack, run_id: str, key: str) -> dict:
    import httpx

    resp = httpx.get(f"{stack.gateway_url}/v1/runs/{run_id}", headers={"Authorization": f"Bearer {key}"}, timeout=30)
    assert resp.status_code == 200, resp.text
    return resp.json()


def test_tenants_set_prints_the_tenant_s_new_settings(demo_stack):
    run = pmsearch(demo_stack, "tenants", "set", "cli-tenant", "--daily-cap", "7")
    assert run.returncode == 0, run.stderr
    assert '"search.agentic_daily_cap": 7' in run.stdout


def test_ingest_summary_stays_on_one_line_however_narrow_the_terminal(monkeypatch):
    # Scripts (bench.ingest among them) read the last line; five-digit counts once
    # wrapped it at 80 columns.
    from typer.testing import CliRunner

    from pmsearch import cli
    from pmsearch.cli import ingest, main  # noqa: F401 (loaded for monkeypatch through ``cli``)

    totals = {"indexed": 34350, "duplicate": 12150, "unchanged": 103175, "errors": 0}
    monkeypatch.setattr(cli.ingest, "ingest_path", lambda *a, **k: totals)
    monkeypatch.setattr(cli.main, "Admin", lambda *a, **k: None)  # no stack, no admin token needed
    monkeypatch.setenv("COLUMNS", "40")
    result = CliRunner().invoke(cli.main.app, ["ingest", "/nonexistent", "-t", "acme", "-m", "alice"])
    assert result.exit_code == 0, result.output
    assert result.output.strip().splitlines()[-1] == (
        "indexed 34350, already present 12150, unchanged since the last import 103175, skipped 0"
    )
