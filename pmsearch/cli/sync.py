"""``pmsearch sync status|once``: the IMAP sync's state per folder, and one pass over
every configured source now. Both use the local stack's Redis as its admin (the
``var/`` folder ``pmsearch up`` writes); the sync stage itself runs under ``pmsearch up``
when ``PM_SYNC_CONFIG`` names a sources file."""

from __future__ import annotations

import asyncio
import time
from urllib.parse import unquote

import redis
import redis.asyncio as aioredis
import typer
from rich.table import Table

from pmsearch.cli.client import fail, out
from pmsearch.cli.evaluation.drafts import admin_client, admin_password
from pmsearch.services.sync.state import PREFIX
from pmsearch.shared.settings import CliSettings, cli_settings

sync_app = typer.Typer(no_args_is_help=True, help="The IMAP sync: status per folder, or one pass now.")


def _admin(settings: CliSettings) -> redis.Redis:
    client = admin_client(settings.var_dir, settings.redis_port)
    if client is None:
        fail(f"no stack secrets in {settings.var_dir}/: run where `pmsearch up` ran, or set PM_VAR_DIR")
    return client


def _ago(stamp: str | None) -> str:
    if not stamp:
        return "never"
    seconds = max(0.0, time.time() - float(stamp))
    return f"{seconds:.0f} s ago" if seconds < 120 else f"{seconds / 60:.0f} min ago"


@sync_app.command("status")
def status() -> None:
    """One row per synced folder: UIDVALIDITY, highest UID, messages known, last good
    pass, and the last failure if the folder is failing now."""
    client = _admin(cli_settings())
    try:
        keys = sorted(k.decode() for k in client.scan_iter(PREFIX + "*") if not k.endswith(b":uids"))
        table = Table("tenant", "mailbox", "folder", "uidvalidity", "last uid", "messages", "last sync", "failing")
        for key in keys:
            head = {k.decode(): v.decode() for k, v in client.hgetall(key).items()}
            tenant, mailbox, folder = (unquote(p) for p in key.removeprefix(PREFIX).split(":"))
            table.add_row(tenant, mailbox, folder, head.get("uidvalidity", "-"), head.get("last_uid", "0"),
                          str(client.hlen(key + ":uids")), _ago(head.get("synced_at")), head.get("error") or "")
    except redis.RedisError as exc:
        fail(f"cannot read the sync's state: {type(exc).__name__}: {exc}")
    if not keys:
        out.print("no folder synced yet (PM_SYNC_CONFIG names the sources; `pmsearch up` runs the sync)")
        return
    out.print(table)


@sync_app.command("once")
def once() -> None:
    """One pass over every folder of every source in PM_SYNC_CONFIG, now (the running
    stack's searcher indexes what it fetches); prints what each folder brought."""
    from pmsearch.services.sync.config import load_config
    from pmsearch.services.sync.errors import SyncError
    from pmsearch.services.sync.imap import Connection
    from pmsearch.services.sync.repository import StreamIngest
    from pmsearch.services.sync.service import sync_folder
    from pmsearch.services.sync.state import FolderStore
    from pmsearch.shared.settings import SyncSettings

    settings = cli_settings()
    try:
        config = load_config(settings.sync_config)
    except SyncError as exc:
        fail(exc.detail)
    if not config.sources:
        fail("no IMAP sources: set PM_SYNC_CONFIG to a sources file")
    limits = SyncSettings()
    password = admin_password(settings.var_dir)
    if password is None:
        fail(f"no stack secrets in {settings.var_dir}/: run where `pmsearch up` ran, or set PM_VAR_DIR")

    async def run() -> None:
        client = aioredis.Redis(port=settings.redis_port, username="admin", password=password)
        ingest = StreamIngest(client, limits.sync_ingest_timeout_seconds)
        try:
            for source in config.sources:
                conn = await asyncio.to_thread(Connection.open, source)
                try:
                    for fmap in source.folders:
                        store = FolderStore(client, source.tenant, source.mailbox, fmap.server)
                        started = time.monotonic()
                        r = await sync_folder(conn, store, ingest, source, fmap, max_bytes=limits.sync_max_message_bytes,
                                              batch=limits.sync_batch)
                        took = time.monotonic() - started
                        out.print(f"{source.name} {fmap.server}: {r.indexed} new, {r.duplicate} known, {r.failed} failed, "
                                  f"{r.too_large} too large, {r.withdrawn} withdrawn in {took:.1f} s"
                                  f" ({r.fetched / took if took else 0:.1f} messages/s)", markup=False, highlight=False)
                finally:
                    conn.close()
        finally:
            await client.aclose()

    try:
        asyncio.run(run())
    except SyncError as exc:
        fail(exc.detail)
