"""Mail arrives by itself, end to end: a real Dovecot, Redis with the shipped ACL file,
the searcher and the sync stage as processes, the gateway over HTTP. A message
delivered to the IMAP server is found by ``/v1/search`` (IDLE), one expunged there is
no longer found, and the sync's logs, metrics and Redis never hold the password."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
import yaml
from typer.testing import CliRunner

from pmsearch.cli.main import app
from pmsearch.cli.stack import Stack
from pmsearch.testing.dovecot import dovecot_server
from tests.fixtures.stack import new_key
from tests.fixtures.waiting import wait_for
from tests.services.sync.conftest import mail

PASSWORD = "sync-e2e-password-7f3c"


def _search(stack: Stack, key: str, query: str) -> list[str]:
    resp = httpx.post(f"{stack.gateway_url}/v1/search", json={"query": query, "mode": "keyword"},
                      headers={"Authorization": f"Bearer {key}"}, timeout=30)
    assert resp.status_code == 200, resp.text
    return [hit["subject"] for hit in resp.json()["hits"]]


@pytest.fixture
def synced(tmp_path: Path, monkeypatch):
    with dovecot_server(tmp_path / "dovecot", {"alice": PASSWORD}) as dovecot:
        config = tmp_path / "sync.yaml"
        config.write_text(yaml.safe_dump({"sources": [{
            "tenant": "acme", "mailbox": "alice", "host": "127.0.0.1", "port": dovecot.imap_port,
            "tls": "starttls", "ca_file": str(dovecot.cert), "user": "alice", "password_env": "ACME_ALICE_IMAP",
            "poll_seconds": 30,
        }]}))
        monkeypatch.setenv("ACME_ALICE_IMAP", PASSWORD)
        dovecot.deliver(mail(1, subject="Forklift order confirmed"))
        stack = Stack(tmp_path / "var", services=("searcher", "sync"), extra_env={"PM_SYNC_CONFIG": str(config)})
        try:
            stack.start()
            stack.wait_for_log("sync", "sync ready", 60)
            yield stack, dovecot
        finally:
            stack.stop()


def test_mail_delivered_to_imap_is_searchable_and_expunged_mail_is_not(synced):
    stack, dovecot = synced
    key = new_key(stack, permissions=("search",))
    wait_for(lambda: _search(stack, key, "forklift"), "the first sync's message is found", 60, step=0.3)
    dovecot.deliver(mail(2, subject="Pallet invoice arrived", body="The pallet invoice INV-2024-0999 arrived."))
    wait_for(lambda: _search(stack, key, "pallet"), "a message delivered later is found (IDLE)", 20, step=0.3)
    with dovecot.client() as c:
        c.select_folder("INBOX")
        c.delete_messages(c.search(["SUBJECT", "Forklift"]))
        c.expunge()
    dovecot.deliver(mail(3, subject="Nudge", body="Any news?"))  # IDLE wakes the sync, which sees the expunge
    wait_for(lambda: not _search(stack, key, "forklift"), "the expunged message is no longer found", 20, step=0.3)
    assert _search(stack, key, "pallet") == ["Pallet invoice arrived"]
    # The password is nowhere: not in the sync's log, its metrics, or Redis.
    assert PASSWORD not in (stack.log_dir / "sync.log").read_text()
    metrics = httpx.get(f"http://127.0.0.1:{stack.metrics_ports['sync']}/metrics").text
    assert "pm_sync_messages_total" in metrics and PASSWORD not in metrics
    admin = stack.redis_client()
    assert not any(PASSWORD.encode() in (admin.dump(k) or b"") for k in admin.scan_iter("*"))


def test_sync_status_is_a_table_of_each_folders_state(synced, monkeypatch):
    stack, _ = synced
    monkeypatch.setenv("PM_VAR_DIR", str(stack.var_dir))
    monkeypatch.setenv("PM_REDIS_PORT", str(stack.redis_port))
    wait_for(lambda: stack.redis_client().hget("pm:sync:acme:alice:INBOX", "synced_at"), "a first pass", 30, step=0.3)
    result = CliRunner().invoke(app, ["sync", "status"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    row = next(line for line in result.output.splitlines() if "acme" in line)
    assert "alice" in row and "INBOX" in row and "ago" in row


def test_sync_once_passes_over_every_folder_now(synced, monkeypatch, tmp_path):
    stack, dovecot = synced
    monkeypatch.setenv("PM_VAR_DIR", str(stack.var_dir))
    monkeypatch.setenv("PM_REDIS_PORT", str(stack.redis_port))
    monkeypatch.setenv("PM_SYNC_CONFIG", stack.extra_env["PM_SYNC_CONFIG"])
    wait_for(lambda: stack.redis_client().hget("pm:sync:acme:alice:INBOX", "synced_at"), "a first pass", 30, step=0.3)
    result = CliRunner().invoke(app, ["sync", "once"])
    assert result.exit_code == 0, result.output
    assert "acme/alice INBOX: 0 new, 0 known, 0 failed" in result.output
