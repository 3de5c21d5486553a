"""Which IMAP mailboxes a deployment keeps current, and which LMTP recipients it accepts:
one YAML file (``PM_SYNC_CONFIG``), read once at start.

Credentials are never in the file: each source names an environment variable or a file
to read its password or OAuth2 bearer token from, so the file can be kept in version
control and the secret in the deployment's secret store.

.. code-block:: yaml

    sources:
      - tenant: acme
        mailbox: alice
        host: imap.example.org          # implicit TLS on 993 by default
        user: alice@example.org
        password_env: ACME_ALICE_IMAP   # or password_file, or auth: xoauth2 with token_env/token_file
        folders:
          - {server: INBOX}
          - {server: Archive/2024, folder: archive}
          - {server: Junk, quarantine: true}
    lmtp:
      - {address: archive@acme.example, tenant: acme, mailbox: archive}
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Literal

import yaml
from pydantic import Field, SecretStr, ValidationError, model_validator

from pmsearch.services.sync.errors import ConfigError
from pmsearch.shared.messages import Contract


class FolderMap(Contract):
    """A server folder and the pmsearch folder its messages are delivered to."""

    server: str = Field(min_length=1)
    folder: str | None = None  # the server's name, when not given
    # A spam folder: delivered to pmsearch's "quarantine" folder (unless ``folder`` names
    # another quarantine folder: "junk", "spam"), which no search shows.
    quarantine: bool = False

    @property
    def target(self) -> str:
        return self.folder or ("quarantine" if self.quarantine else self.server)


class Source(Contract):
    """One IMAP account synced into one tenant's mailbox."""

    tenant: str = Field(min_length=1)
    mailbox: str = Field(min_length=1)
    host: str = Field(min_length=1)
    port: int | None = None  # 993 for implicit TLS, 143 for STARTTLS
    tls: Literal["implicit", "starttls"] = "implicit"
    # A CA bundle to trust instead of the system's (a server with its own certificate).
    ca_file: Path | None = None
    user: str = Field(min_length=1)
    auth: Literal["password", "xoauth2"] = "password"
    password_env: str | None = None
    password_file: Path | None = None
    token_env: str | None = None
    token_file: Path | None = None
    folders: list[FolderMap] = Field(default_factory=lambda: [FolderMap(server="INBOX")], min_length=1)
    # IDLE where the server offers it; else (or with idle off) a poll at this interval.
    idle: bool = True
    poll_seconds: float = Field(default=60.0, gt=0)

    @model_validator(mode="after")
    def _one_secret(self) -> Source:
        env, file = (self.password_env, self.password_file) if self.auth == "password" else (
            self.token_env, self.token_file)
        if (env is None) == (file is None):
            what = "password_env or password_file" if self.auth == "password" else "token_env or token_file"
            raise ValueError(f"source {self.tenant}/{self.mailbox}: give exactly one of {what}")
        return self

    @property
    def name(self) -> str:
        """How logs and metrics name the source: never its user or host."""
        return f"{self.tenant}/{self.mailbox}"

    @property
    def address(self) -> tuple[str, int]:
        return self.host, self.port or (993 if self.tls == "implicit" else 143)

    def secret(self) -> SecretStr:
        """The password or bearer token, read now (a rotated secret is picked up at the
        next connection)."""
        env, file = (self.password_env, self.password_file) if self.auth == "password" else (
            self.token_env, self.token_file)
        if env is not None:
            value = os.environ.get(env)
            if not value:
                raise ConfigError(f"source {self.name}: the environment variable {env} is not set")
            return SecretStr(value)
        assert file is not None
        try:
            return SecretStr(file.read_text().strip())
        except OSError as exc:
            raise ConfigError(f"source {self.name}: cannot read its secret file: {exc.strerror}") from None


class Recipient(Contract):
    """An address the LMTP listener accepts, and the mailbox its mail is delivered to."""

    address: str = Field(min_length=3)
    tenant: str = Field(min_length=1)
    mailbox: str = Field(min_length=1)
    folder: str = "INBOX"


class SyncConfig(Contract):
    sources: list[Source] = Field(default_factory=list)
    lmtp: list[Recipient] = Field(default_factory=list)
    # IMAP connections one tenant's sources may hold open at once.
    max_connections_per_tenant: int = Field(default=2, ge=1)

    @model_validator(mode="after")
    def _distinct(self) -> SyncConfig:
        names = [s.name for s in self.sources]
        if len(names) != len(set(names)):
            raise ValueError("two sources feed the same tenant and mailbox")
        return self

    def recipient(self, address: str) -> Recipient | None:
        wanted = address.strip().strip("<>").casefold()
        return next((r for r in self.lmtp if r.address.casefold() == wanted), None)


def load_config(path: Path | None) -> SyncConfig:
    """The file's sources and recipients; an empty configuration without a file."""
    if path is None:
        return SyncConfig()
    try:
        data = yaml.safe_load(path.read_text()) or {}
        return SyncConfig.model_validate(data)
    except OSError as exc:
        raise ConfigError(f"cannot read {path}: {exc.strerror}") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(exc, "problem", None) or type(exc).__name__
        raise ConfigError(f"{path} is not YAML{where}: {problem}") from None
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise ConfigError(f"{path}: {where + ': ' if where else ''}{first['msg'].removeprefix('Value error, ')}") from None
