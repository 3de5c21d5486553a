"""API keys (issue 8, items 8 and 9): listed without secrets, revoked, expiring; no
"admin" permission; a non-ASCII token is a clean 401. Against the real stack over HTTP
and the ``pmsearch keys`` command.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
import uuid
from datetime import UTC, datetime, timedelta

import pytest

PROBLEM = "application/problem+json"


def spec(**extra) -> dict:
    return {"tenant_id": "acme", "principal": f"keys-{uuid.uuid4().hex[:8]}@acme.example", "mailboxes": ["alice"], **extra}


def create(api, **extra) -> dict:
    resp = api.http.post("/v1/admin/keys", json=spec(**extra), headers=api.admin_headers)
    assert resp.status_code == 201, resp.text
    return resp.json()


def probe(api, key: str):
    """Any call that authenticates: 404 for a known key (no such run), 401 otherwise."""
    return api.http.get("/v1/runs/no-such-run", headers={"Authorization": f"Bearer {key}"})


def unauthorized(resp, detail: str) -> None:
    assert resp.status_code == 401, resp.text
    assert resp.headers["content-type"].startswith(PROBLEM)
    assert detail in resp.json()["detail"]


def test_keys_are_listed_with_their_state_and_without_any_secret(api):
    created = create(api)
    resp = api.http.get("/v1/admin/keys", params={"tenant_id": "acme"}, headers=api.admin_headers)
    assert resp.status_code == 200
    listed = {k["key_id"]: k for k in resp.json()["keys"]}
    mine = listed[created["record"]["key_id"]]
    assert mine["status"] == "active" and mine["principal"] == created["record"]["principal"]
    assert {k["tenant_id"] for k in listed.values()} == {"acme"}
    assert created["key"] not in resp.text and "key" not in mine


def test_listing_keys_needs_the_admin_token(api):
    key = create(api)["key"]
    assert api.http.get("/v1/admin/keys", headers={"Authorization": f"Bearer {key}"}).status_code == 401


def test_a_revoked_key_gets_401(api):
    created = create(api)
    assert probe(api, created["key"]).status_code == 404
    resp = api.http.delete(f"/v1/admin/keys/{created['record']['key_id']}", headers=api.admin_headers)
    assert resp.status_code == 200 and resp.json()["status"] == "revoked"
    unauthorized(probe(api, created["key"]), "revoked")
    again = api.http.delete(f"/v1/admin/keys/{created['record']['key_id']}", headers=api.admin_headers)
    assert again.json()["revoked_at"] == resp.json()["revoked_at"]


def test_revoking_an_unknown_key_is_404(api):
    resp = api.http.delete("/v1/admin/keys/nosuchkey", headers=api.admin_headers)
    assert resp.status_code == 404 and resp.headers["content-type"].startswith(PROBLEM)
    assert resp.json()["detail"] == "no API key nosuchkey"


def test_an_expired_key_gets_401(api):
    soon = datetime.now(UTC) + timedelta(seconds=2)
    created = create(api, expires_at=soon.isoformat())
    assert probe(api, created["key"]).status_code == 404
    time.sleep(max(0.0, (soon - datetime.now(UTC)).total_seconds()) + 0.2)
    unauthorized(probe(api, created["key"]), "expired")
    listed = api.http.get("/v1/admin/keys", headers=api.admin_headers).json()["keys"]
    assert next(k for k in listed if k["key_id"] == created["record"]["key_id"])["status"] == "expired"


@pytest.mark.parametrize("expires_at,why", [((datetime.now(UTC) - timedelta(days=1)).isoformat(), "future"),
                                            ("2030-01-01T00:00:00", "timezone")], ids=["past", "zoneless"])
def test_a_key_cannot_be_created_already_expired_or_with_a_zoneless_expiry(api, expires_at, why):
    resp = api.http.post("/v1/admin/keys", json=spec(expires_at=expires_at), headers=api.admin_headers)
    assert resp.status_code == 422 and resp.headers["content-type"].startswith(PROBLEM)
    assert why in resp.json()["detail"], resp.text


def test_no_key_can_be_given_an_admin_permission(api):
    resp = api.http.post("/v1/admin/keys", json=spec(permissions=["search", "admin"]), headers=api.admin_headers)
    assert resp.status_code == 422, resp.text


@pytest.mark.parametrize("path,method", [("/v1/admin/keys", "GET"), ("/v1/runs/no-such-run", "GET")])
def test_a_non_ascii_token_is_a_clean_401(api, path, method):
    resp = api.http.request(method, path, headers={"Authorization": "Bearer ключ-доступа".encode()})
    assert resp.status_code == 401, resp.text
    assert resp.headers["content-type"].startswith(PROBLEM)


def pmsearch(stack, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PM_")}
    env.update(PM_GATEWAY_URL=stack.gateway_url, PM_ADMIN_TOKEN=stack.secrets.admin_token)
    return subprocess.run([sys.executable, "-m", "pmsearch.cli.main", *args], env=env, capture_output=True, text=True, timeout=120)


def test_pmsearch_keys_creates_lists_and_revokes(api, demo_stack):
    principal = f"cli-{uuid.uuid4().hex[:8]}@acme.example"
    made = pmsearch(demo_stack, "keys", "create", "-t", "acme", "-p", principal, "-m", "alice", "--expires-in-days", "30")
    assert made.returncode == 0, made.stderr
    key = made.stdout.strip()
    listed = pmsearch(demo_stack, "keys", "list", "--tenant", "acme")
    assert listed.returncode == 0 and key not in listed.stdout
    (line,) = [ln for ln in listed.stdout.splitlines() if principal in ln]
    key_id, status = line.split()[:2]
    assert status == "active" and "expires 20" in line
    revoked = pmsearch(demo_stack, "keys", "revoke", key_id)
    assert revoked.returncode == 0, revoked.stderr
    unauthorized(probe(api, key), "revoked")
    unknown = pmsearch(demo_stack, "keys", "revoke", "nosuchkey")
    assert unknown.returncode == 1 and len(unknown.stderr.strip().splitlines()) == 1 and "404" in unknown.stderr


def test_a_stored_key_with_the_retired_admin_permission_loads_without_it():
    from pmsearch.services.gateway.schemas import ApiKeyRecord

    stored = ('{"key_id": "k1", "tenant_id": "acme", "principal": "p", "permissions": ["search", "admin"],'
              ' "mailboxes": ["alice"], "created_at": "2024-05-06T09:00:00Z"}')
    assert ApiKeyRecord.model_validate_json(stored).permissions == ["search"]
