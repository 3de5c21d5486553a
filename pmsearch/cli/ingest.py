"""`pmsearch ingest`: send a mail source to the admin API in bounded batches.

Messages are read as they are sent, never all at once, so memory stays bounded by a
batch whatever the mailbox's size. What an earlier import of the same source into the
same index was confirmed for is passed over before it is read (Maildir, .eml) or sent
(mbox): :mod:`pmsearch.cli.import_record`.
"""

from __future__ import annotations

import base64
from itertools import groupby
from pathlib import Path
from typing import Iterator

from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

from pmsearch.cli.client import Admin, err, fail
from pmsearch.cli.import_record import ImportRecord
from pmsearch.cli.untrusted import line
from pmsearch.shared.settings import cli_settings

BATCH = 50


def ingest_path(admin: Admin, path: Path, tenant: str, mailbox: str, folder: str | None, quiet: bool = False,
                full: bool = False) -> dict[str, int]:
    """Send every message under ``path`` not imported before (all of them with ``full``)
    in batches of bounded count and size; report failures and what an ingest limit cut,
    one line each. Totals: indexed, duplicate (sent, already in the index), unchanged
    (passed over unsent), errors."""
    from pmsearch.services.searcher.errors import UnreadableSource
    from pmsearch.services.searcher.ingest.readers import RawMessage, batches, count_messages, read_path

    settings = cli_settings()
    totals = {"indexed": 0, "duplicate": 0, "unchanged": 0, "errors": 0}
    try:
        total = count_messages(path)
    except UnreadableSource as exc:
        fail(exc.detail)
    # An empty batch imports nothing and names the index the record belongs to.
    probe = admin.call("POST", "/v1/admin/ingest", expect="indexed",
                       json={"tenant_id": tenant, "mailbox": mailbox, "raw": []})
    index_id = probe.get("index_id") or "unknown"
    record = ImportRecord.open(settings.var_dir, index_id, tenant, mailbox, path)
    if full:
        record.done.clear()

    def skip(source_id: str) -> bool:
        if record.has(source_id):
            totals["unchanged"] += 1
            progress.advance(task)
            return True
        return False

    cap = settings.ingest_max_message_bytes

    def sendable(raws: Iterator[RawMessage]) -> Iterator[RawMessage]:
        from pmsearch.services.searcher.ingest.limits import megabytes

        for r in raws:
            if len(r.raw) > cap:  # the searcher refuses these too; skipping them saves the upload
                reason = f"message is {megabytes(len(r.raw))}, over the {megabytes(cap)} limit (PM_INGEST_MAX_MESSAGE_BYTES)"
                err.print(line(f"skipped {r.label}: {reason}"), highlight=False)
                totals["errors"] += 1
                progress.advance(task)
            else:
                yield r

    with Progress(
        TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(),
        console=err, disable=quiet or total < BATCH,
    ) as progress:
        task = progress.add_task(f"{tenant}/{mailbox}", total=total)
        try:
            raws = sendable(read_path(path, folder=folder, skip=skip))
            for fold, group in groupby(raws, key=lambda r: r.folder):
                for batch in batches(group, BATCH, settings.ingest_batch_bytes):
                    _send(admin, tenant, mailbox, fold, batch, totals, record)
                    progress.advance(task, len(batch))
        finally:
            record.close()
    return totals


def _send(admin: Admin, tenant: str, mailbox: str, folder: str, batch: list, totals: dict[str, int],
          record: ImportRecord) -> None:
    result = admin.call(
        "POST",
        "/v1/admin/ingest",
        expect="indexed",
        json={"tenant_id": tenant, "mailbox": mailbox, "folder": folder,
              "raw": [base64.b64encode(r.raw).decode() for r in batch]},
    )
    totals["indexed"] += result["indexed"]
    totals["duplicate"] += result["duplicate"]
    failed: set[int] = set()
    for error in result["errors"]:
        n, reason = _numbered(error)
        failed.add(n)
        err.print(line(f"skipped {batch[n].label}: {reason}"), highlight=False)
        totals["errors"] += 1
    for note in result.get("notes", []):
        n, text = _numbered(note)
        err.print(line(f"note {batch[n].label}: {text}"), highlight=False)
    # A failed message is tried again next time: a fixed parser, a raised limit.
    record.add(r.source_id for n, r in enumerate(batch) if n not in failed)


def _numbered(entry: str) -> tuple[int, str]:
    """"message N: text" -> (N, text); N is the message's position in its batch."""
    head, _, text = entry.partition(": ")
    word = head.split()[-1] if head.split() else ""
    return (int(word) if word.isdigit() else 0), text
