"""The sync stage's errors, rooted in :class:`pmsearch.shared.errors.PmError`.

    PmError
    └── SyncError
        ├── ConfigError        the sources file, or a source's secret, cannot be used
        └── ServerError        an IMAP server refused or failed (``kind`` says how)

Each carries one line that names the source (``tenant/mailbox``), never its user,
password or token: these lines reach logs and ``pmsearch sync status``.
"""

from __future__ import annotations

from typing import Literal

from pmsearch.shared.errors import PmError

# How a server failed, for metrics and backoff: a refused login is not retried like a
# dropped connection.
Kind = Literal["connect", "tls", "auth", "protocol", "ingest"]


class SyncError(PmError):
    code = "sync"
    title = "Sync error"


class ConfigError(SyncError):
    status = 400
    code = "sync_config_invalid"
    title = "Sync configuration cannot be used"


class ServerError(SyncError):
    status = 502
    code = "sync_server_failed"
    title = "Mail server failed"

    def __init__(self, kind: Kind, message: str) -> None:
        super().__init__(message)
        self.kind = kind
