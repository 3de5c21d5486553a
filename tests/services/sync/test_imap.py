"""Connecting to a real Dovecot: TLS checked by default, a refused login is one clear
line without the secret."""

from __future__ import annotations

import pytest

from pmsearch.services.sync.errors import ServerError
from pmsearch.services.sync.imap import Connection

from .conftest import PASSWORD, mail, source


@pytest.mark.parametrize("tls", ["implicit", "starttls"])
def test_a_server_whose_certificate_is_trusted_by_configuration_is_read(dovecot, tls):
    dovecot.deliver(mail(1))
    conn = Connection.open(source(dovecot, tls=tls))
    try:
        assert conn.select("INBOX").exists == 1 and conn.can_idle
    finally:
        conn.close()


@pytest.mark.parametrize("tls", ["implicit", "starttls"])
def test_a_self_signed_certificate_is_refused_unless_trusted(dovecot, tls):
    with pytest.raises(ServerError) as caught:
        Connection.open(source(dovecot, tls=tls, trusted=False))
    assert caught.value.kind == "tls"
    assert "certificate" in caught.value.detail and "acme/alice" in caught.value.detail


def test_a_wrong_password_is_one_line_that_names_the_source_not_the_secret(dovecot, monkeypatch):
    monkeypatch.setenv("TEST_IMAP_PASSWORD", "not the password")
    with pytest.raises(ServerError) as caught:
        Connection.open(source(dovecot))
    assert caught.value.kind == "auth"
    assert caught.value.detail == "acme/alice: the server refused the login"
    assert "not the password" not in str(caught.value) and PASSWORD not in str(caught.value)


def test_an_unreachable_server_is_a_connect_failure(dovecot):
    src = source(dovecot).model_copy(update={"port": 1})
    with pytest.raises(ServerError) as caught:
        Connection.open(src)
    assert caught.value.kind == "connect"
