"""The sync stage's metrics. Labels are bounded by the configuration: tenant, mailbox
and folder come from the sources file, never from mail."""

from __future__ import annotations

from prometheus_client import Counter, Gauge

MESSAGES = Counter(
    "pm_sync_messages_total", "Messages the sync handled, by result.", ["tenant", "mailbox", "result"]
)
ERRORS = Counter("pm_sync_errors_total", "Failed sync passes, by how the server failed.", ["tenant", "mailbox", "kind"])
LAST_SUCCESS = Gauge(
    "pm_sync_last_success_timestamp_seconds", "When a folder's last sync pass ended well (Unix time).",
    ["tenant", "mailbox", "folder"],
)
LAG = Gauge(
    "pm_sync_lag_messages", "Messages on the server a folder's sync has not handed to ingest yet (during a pass).",
    ["tenant", "mailbox", "folder"],
)
CONNECTIONS = Gauge("pm_sync_connections", "IMAP connections open now.")
LMTP = Counter("pm_lmtp_messages_total", "Messages offered to the LMTP listener, by result.", ["result"])
