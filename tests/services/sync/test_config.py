"""The sources file: secrets named, never held; every mistake one line."""

from __future__ import annotations

import pytest

from pmsearch.services.sync.config import load_config
from pmsearch.services.sync.errors import ConfigError

SOURCE = "{tenant: acme, mailbox: alice, host: imap.example.org, user: alice@example.org"


def _load(tmp_path, text: str):
    path = tmp_path / "sync.yaml"
    path.write_text(text)
    return load_config(path)


def test_a_source_reads_its_password_from_the_variable_it_names(tmp_path, monkeypatch):
    monkeypatch.setenv("ALICE_IMAP", "s3cret")
    config = _load(tmp_path, f"sources:\n  - {SOURCE}, password_env: ALICE_IMAP}}\n")
    (source,) = config.sources
    assert source.secret().get_secret_value() == "s3cret"
    assert source.address == ("imap.example.org", 993) and source.folders[0].target == "INBOX"
    assert "s3cret" not in repr(config)


def test_a_spam_folder_is_delivered_to_quarantine(tmp_path):
    config = _load(tmp_path, f"sources:\n  - {SOURCE}, password_file: /x, folders: [{{server: Junk, quarantine: true}}]}}\n")
    assert config.sources[0].folders[0].target == "quarantine"


@pytest.mark.parametrize(("text", "message"), [
    ("sources: [", "is not YAML"),
    (f"sources:\n  - {SOURCE}}}\n", "give exactly one of password_env or password_file"),
    (f"sources:\n  - {SOURCE}, password_env: A, password_file: /x}}\n", "give exactly one of"),
    (f"sources:\n  - {SOURCE}, password_env: A, tls: plain}}\n", "sources.0.tls"),
    (f"sources:\n  - {SOURCE}, password_env: A}}\n  - {SOURCE}, password_env: B}}\n", "same tenant and mailbox"),
    (f"sources:\n  - {SOURCE}, password_env: A, colour: red}}\n", "colour"),
])
def test_a_mistake_in_the_file_is_one_line(tmp_path, text, message):
    with pytest.raises(ConfigError) as caught:
        _load(tmp_path, text)
    assert message in caught.value.detail and "\n" not in caught.value.detail


def test_a_missing_secret_is_named_by_its_variable_not_shown(tmp_path, monkeypatch):
    monkeypatch.delenv("NOT_SET_IMAP", raising=False)
    config = _load(tmp_path, f"sources:\n  - {SOURCE}, password_env: NOT_SET_IMAP}}\n")
    with pytest.raises(ConfigError) as caught:
        config.sources[0].secret()
    assert caught.value.detail == "source acme/alice: the environment variable NOT_SET_IMAP is not set"
