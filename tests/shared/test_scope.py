import time

import pytest

from pmsearch.shared.errors import ScopeError
from pmsearch.shared.scope import Scope, sign_scope, verify_scope

KEY = "test-key"


def _scope(**kw) -> Scope:
    base = dict(tenant_id="acme", principal="alice", mailboxes=("alice",), run_id="r1", expires_at=time.time() + 60)
    return Scope(**(base | kw))


def test_signed_scope_round_trips():
    scope = _scope()
    assert verify_scope(sign_scope(scope, KEY), KEY) == scope


def test_missing_token_is_refused():
    with pytest.raises(ScopeError, match="missing"):
        verify_scope("", KEY)


def test_altered_token_is_refused():
    token = sign_scope(_scope(), KEY)
    forged = sign_scope(_scope(mailboxes=("alice", "bob")), "another-key")
    body, _, mac = token.partition(".")
    with pytest.raises(ScopeError, match="signature"):
        verify_scope(forged.partition(".")[0] + "." + mac, KEY)
    with pytest.raises(ScopeError, match="signature"):
        verify_scope(forged, KEY)


def test_expired_token_is_refused():
    token = sign_scope(_scope(expires_at=time.time() - 1), KEY)
    with pytest.raises(ScopeError, match="expired"):
        verify_scope(token, KEY)


def test_scope_cannot_express_quarantine_or_empty_mailboxes():
    with pytest.raises(ValueError):
        Scope(tenant_id="acme", principal="a", mailboxes=(), expires_at=1)
    with pytest.raises(ValueError):
        Scope(tenant_id="acme", principal="a", mailboxes=("x",), expires_at=1, include_quarantined=True)
