"""Secrets (issue 8, items 7 and 8): no public scope key or admin token, secret files born
private and kept out of git and the image, and a non-ASCII token refused cleanly (not a
crash) at the searcher.
"""

from __future__ import annotations

import os
import re
import secrets
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from typer.testing import CliRunner

from pmsearch.cli.private import write_private
from pmsearch.cli.stack import Secrets, free_port
from pmsearch.shared import streams
from pmsearch.shared.bus import encode
from pmsearch.shared.messages import SearchReplied, SearchRequested, ToolBatchRequested, ToolCall

ROOT = Path(__file__).resolve().parents[2]
OLD_DEFAULT = "pmsearch-dev-scope-key-change-me"
GOOD = secrets.token_urlsafe(32)


def start_service(module: str, **env: str) -> subprocess.CompletedProcess:
    """Start a service as a deployment would; it must refuse at once, not run."""
    base = {k: v for k, v in os.environ.items() if not k.startswith("PM_")}
    base.update(PM_REDIS_URL=f"redis://127.0.0.1:{free_port()}/0", PM_PORT=str(free_port()), **env)
    proc = subprocess.Popen([sys.executable, "-m", module], cwd=ROOT, env=base, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        out, err = proc.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        pytest.fail(f"{module} started without refusing: {err[-500:]}")
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


SCOPE_KEYS = {"missing": None, "short": "x" * 31, "published default": OLD_DEFAULT}


@pytest.mark.parametrize("module", ["pmsearch.services.gateway.app", "pmsearch.services.searcher.worker"])
@pytest.mark.parametrize("case", list(SCOPE_KEYS))
def test_a_service_refuses_to_start_without_a_strong_scope_key(module, case):
    env = {"PM_ADMIN_TOKEN": GOOD}
    if SCOPE_KEYS[case] is not None:
        env["PM_SCOPE_KEY"] = SCOPE_KEYS[case]
    run = start_service(module, **env)
    assert run.returncode != 0
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1 and "PM_SCOPE_KEY" in lines[0] and "Traceback" not in run.stderr, run.stderr


@pytest.mark.parametrize("case,token", [("missing", None), ("short", "adm_" + "x" * 20), ("placeholder", "change-me" * 4)])
def test_the_gateway_refuses_to_start_without_a_strong_admin_token(case, token):
    env = {"PM_SCOPE_KEY": GOOD} | ({"PM_ADMIN_TOKEN": token} if token else {})
    run = start_service("pmsearch.services.gateway.app", **env)
    assert run.returncode != 0
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1 and "PM_ADMIN_TOKEN" in lines[0], run.stderr


def _no_chmod(monkeypatch) -> None:
    def refuse(*_a, **_k):
        raise AssertionError("a secret file was chmod'ed after it was written")

    monkeypatch.setattr(os, "chmod", refuse)
    monkeypatch.setattr(Path, "chmod", refuse)


def test_local_secrets_are_born_owner_only(tmp_path, monkeypatch):
    _no_chmod(monkeypatch)
    old = os.umask(0)  # the file's mode must not depend on a careful umask
    try:
        made = Secrets.load_or_create(tmp_path / "var" / "secrets.json")
    finally:
        os.umask(old)
    assert (tmp_path / "var" / "secrets.json").stat().st_mode & 0o777 == 0o600
    assert len(made.scope_key.encode()) >= 32 and len(made.admin_token.encode()) >= 32
    assert made.scope_key != Secrets.load_or_create(tmp_path / "other.json").scope_key


def test_rewriting_a_world_readable_secret_file_makes_it_owner_only(tmp_path, monkeypatch):
    path = tmp_path / "demo-keys.json"
    path.write_text("{}")
    path.chmod(0o644)
    _no_chmod(monkeypatch)
    write_private(path, '{"k": "secret"}')
    assert path.stat().st_mode & 0o777 == 0o600 and path.read_text() == '{"k": "secret"}'


def _required_compose_variables() -> set[str]:
    return set(re.findall(r"\$\{(\w+):\?", (ROOT / "docker-compose.yml").read_text()))


def test_pmsearch_acl_writes_every_secret_compose_requires_owner_only(tmp_path, monkeypatch):
    from pmsearch.cli.main import app

    env_file, acl_file = tmp_path / ".env", tmp_path / "users.acl"
    env_file.write_text("PM_MODEL_BASE_URL=http://model.internal/v1\nPM_SCOPE_KEY=old\n")
    _no_chmod(monkeypatch)
    old = os.umask(0)
    try:
        result = CliRunner().invoke(app, ["acl", "--out", str(acl_file), "--env", str(env_file)])
    finally:
        os.umask(old)
    assert result.exit_code == 0, result.output
    for path in (env_file, acl_file):
        assert path.stat().st_mode & 0o777 == 0o600
    values = dict(ln.split("=", 1) for ln in env_file.read_text().splitlines())
    assert values["PM_MODEL_BASE_URL"] == "http://model.internal/v1"  # the operator's own line stays
    assert values["PM_SCOPE_KEY"] != "old"
    missing = {v for v in _required_compose_variables() if not values.get(v)} - {"PM_MODEL_BASE_URL"}
    assert missing == set()


@pytest.mark.parametrize("secret", ["PM_SCOPE_KEY", "PM_ADMIN_TOKEN", "PM_QDRANT_API_KEY", "PM_GRAFANA_ADMIN_PASSWORD",
                                    "PM_REDIS_PASSWORD_GATEWAY", "PM_REDIS_PASSWORD_SEARCHER"])
def test_compose_refuses_to_start_without_each_secret(secret):
    text = (ROOT / "docker-compose.yml").read_text()
    uses = re.findall(r"\$\{" + secret + r"([^}]*)\}", text)
    assert uses and all(u.startswith(":?") for u in uses), uses


@pytest.mark.parametrize("path", [".env", ".env.production", "deploy/redis/users.acl"])
def test_secret_files_are_ignored_by_git(path):
    check = subprocess.run(["git", "check-ignore", "-q", path], cwd=ROOT)
    assert check.returncode == 0


def test_secret_files_and_local_state_stay_out_of_the_image():
    ignore = ROOT / ".dockerignore"
    assert ignore.exists()
    patterns = {ln.strip().rstrip("/") for ln in ignore.read_text().splitlines() if ln.strip() and not ln.startswith("#")}
    assert {".env", "deploy/redis/users.acl", "var", ".venv", ".git"} <= patterns


# --------------------------------------------------------------- item 8, the searcher side

NON_ASCII = "ключ.подпись"


def test_a_non_ascii_scope_token_is_a_scope_error_not_a_crash():
    from pmsearch.shared.errors import ScopeError
    from pmsearch.shared.scope import verify_scope

    with pytest.raises(ScopeError):
        verify_scope(NON_ASCII, GOOD)


def test_the_searcher_refuses_a_non_ascii_scope_token_on_a_direct_search(demo_stack):
    request_id = uuid.uuid4().hex
    req = SearchRequested(request_id=request_id, tenant_id="acme", scope_token=NON_ASCII, deadline=time.time() + 30,
                          query="claim", mode="keyword", filters={}, limit=5)
    gateway = demo_stack.redis_client("gateway")  # the only writer of pm:queries
    gateway.xadd(streams.QUERIES, encode(req))
    popped = gateway.blpop([streams.reply_key(request_id)], timeout=10)
    assert popped is not None, "no reply: the searcher crashed on the token"
    reply = SearchReplied.model_validate_json(popped[1])
    assert not reply.ok and reply.status == 403 and "scope" in (reply.error or "")


def test_the_searcher_refuses_a_non_ascii_scope_token_once_without_retries(demo_stack):
    run_id = f"nonascii-{uuid.uuid4().hex[:8]}"
    batch = ToolBatchRequested(run_id=run_id, tenant_id="acme", scope_token=NON_ASCII, deadline=time.time() + 30,
                               step=1, calls=[ToolCall(call_id="c1", tool="search", arguments={"query": "claim"})])
    entry = demo_stack.redis_client("planner").xadd(streams.TOOLS, encode(batch)).decode()
    admin = demo_stack.redis_client()
    deadline = time.time() + 10
    dead: list = []
    while time.time() < deadline and not dead:
        dead = [f for _, f in admin.xrange(streams.dead_letter(streams.TOOLS)) if f.get(b"run_id") == run_id.encode()]
        time.sleep(0.1)
    assert dead and dead[0][b"error"].startswith(b"scope") and dead[0][b"deliveries"] == b"1"
    # Acknowledged right after (no retry of a refused token): nothing left pending.
    pending = lambda: admin.xpending_range(streams.TOOLS, streams.GROUP[streams.TOOLS], entry, entry, 1)  # noqa: E731
    while pending() and time.time() < deadline + 5:
        time.sleep(0.05)
    assert pending() == []
    assert not admin.exists(streams.evidence_key(run_id))
