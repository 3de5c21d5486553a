"""The sync stage's process: each configured source kept current (connect, sync every
folder, wait in IDLE or sleep, again), with backoff after a failure, a per-tenant
limit on open connections, and the LMTP listener when it has a port.

Wiring only: what one pass does is :mod:`.service`, the IMAP calls :mod:`.imap`.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import defaultdict
from contextlib import asynccontextmanager

import uvloop
from redis.asyncio import Redis
from redis.exceptions import RedisError

from pmsearch.services.sync import metrics
from pmsearch.services.sync.config import Source, SyncConfig, load_config
from pmsearch.services.sync.errors import ConfigError, ServerError
from pmsearch.services.sync.imap import Connection
from pmsearch.services.sync.lmtp import serve_lmtp
from pmsearch.services.sync.repository import StreamIngest
from pmsearch.services.sync.service import sync_folder
from pmsearch.services.sync.state import FolderStore
from pmsearch.shared.bus import connect
from pmsearch.shared.health import LoopProbes, start_server
from pmsearch.shared.logging_setup import configure, secret_values
from pmsearch.shared.settings import SyncSettings, sync_settings
from pmsearch.shared.telemetry import setup_logging

log = logging.getLogger("pmsearch.sync")

# IDLE is renewed at least this often (RFC 2177: servers may drop it after 30 minutes).
IDLE_RENEW_SECONDS = 25 * 60


class TenantSlots:
    """At most ``limit`` open connections per tenant. A source holding one gives it up
    after a pass when another of its tenant's sources waits for one."""

    def __init__(self, limit: int) -> None:
        self._slots: dict[str, asyncio.Semaphore] = defaultdict(lambda: asyncio.Semaphore(limit))
        self._waiting: dict[str, int] = defaultdict(int)

    @asynccontextmanager
    async def hold(self, tenant: str):
        self._waiting[tenant] += 1
        try:
            await self._slots[tenant].acquire()
        finally:
            self._waiting[tenant] -= 1
        try:
            yield
        finally:
            self._slots[tenant].release()

    def wanted(self, tenant: str) -> bool:
        return self._waiting[tenant] > 0


class Syncer:
    def __init__(self, settings: SyncSettings, config: SyncConfig, redis: Redis) -> None:
        self.settings = settings
        self.config = config
        self.redis = redis
        self.ingest = StreamIngest(redis, settings.sync_ingest_timeout_seconds)
        self.slots = TenantSlots(config.max_connections_per_tenant)
        self.failing: dict[str, str] = {}  # source name -> its last failure's line

    async def keep_current(self, source: Source) -> None:
        """Sync ``source`` for as long as the process runs; a failure waits, doubling."""
        wait = self.settings.sync_backoff_first_seconds
        while True:
            try:
                async with self.slots.hold(source.tenant):
                    await self._session(source)
                wait = self.settings.sync_backoff_first_seconds
            except (ServerError, ConfigError) as exc:
                await self._failed(source, getattr(exc, "kind", "config"), exc.detail)
            except RedisError as exc:  # the sync's own state or the ingest stream
                await self._failed(source, "redis", f"{source.name}: Redis failed: {type(exc).__name__}")
            except Exception as exc:  # a bug must cost one source a wait, never its task
                log.exception("sync %s: unexpected failure", source.name)
                await self._failed(source, "internal", f"{source.name}: unexpected {type(exc).__name__}")
            else:
                continue
            await asyncio.sleep(wait)
            wait = min(wait * 2, self.settings.sync_backoff_max_seconds)

    async def _failed(self, source: Source, kind: str, line: str) -> None:
        metrics.ERRORS.labels(source.tenant, source.mailbox, kind).inc()
        if self.failing.get(source.name) != line and kind != "internal":  # internal: logged with its trace
            log.error("sync %s", line)  # once per distinct failure, not per retry
        self.failing[source.name] = line
        try:
            for fmap in source.folders:
                await FolderStore(self.redis, source.tenant, source.mailbox, fmap.server).failed(kind, line)
        except RedisError:
            pass  # the line is in the log and the metric; the state waits for Redis

    async def _session(self, source: Source) -> None:
        conn = await asyncio.to_thread(Connection.open, source)
        metrics.CONNECTIONS.inc()
        try:
            while True:
                await self.pass_over(conn, source)
                if self.failing.pop(source.name, None):
                    log.info("sync %s: syncing again", source.name)
                if self.slots.wanted(source.tenant):
                    return  # another source of the tenant waits for a connection
                await self._wait(conn, source)
        finally:
            metrics.CONNECTIONS.dec()
            await asyncio.to_thread(conn.close)

    async def pass_over(self, conn: Connection, source: Source) -> None:
        for fmap in source.folders:
            store = FolderStore(self.redis, source.tenant, source.mailbox, fmap.server)
            lag = metrics.LAG.labels(source.tenant, source.mailbox, fmap.server)
            report = await sync_folder(conn, store, self.ingest, source, fmap, progress=lag.set,
                                       max_bytes=self.settings.sync_max_message_bytes, batch=self.settings.sync_batch)
            for result in ("indexed", "duplicate", "failed", "too_large", "withdrawn"):
                if count := getattr(report, result):
                    metrics.MESSAGES.labels(source.tenant, source.mailbox, result).inc(count)
            metrics.LAST_SUCCESS.labels(source.tenant, source.mailbox, fmap.server).set(time.time())
            if report.fetched or report.withdrawn:
                log.info("sync %s %s: %d new, %d known, %d failed, %d too large, %d withdrawn%s", source.name,
                         fmap.server, report.indexed, report.duplicate, report.failed, report.too_large,
                         report.withdrawn, " (UIDVALIDITY changed)" if report.reset else "")

    async def _wait(self, conn: Connection, source: Source) -> None:
        """Until the first folder changes (IDLE) or the poll interval has passed."""
        if source.idle and conn.can_idle:
            await asyncio.to_thread(conn.select, source.folders[0].server)
            await asyncio.to_thread(conn.wait, min(source.poll_seconds, IDLE_RENEW_SECONDS))
        else:
            await asyncio.sleep(source.poll_seconds)


class SyncProbes(LoopProbes):
    def __init__(self, syncer: Syncer, loop: asyncio.AbstractEventLoop) -> None:
        super().__init__(loop)
        self.syncer = syncer
        self.lmtp = False  # set once the LMTP listener listens

    async def live(self) -> dict[str, str]:
        return {"loop": "ok"}

    async def ready(self) -> dict[str, str]:
        """Redis answers, and the stage does its job: some source syncs (or none is
        configured), or the LMTP listener listens. One failing source among others
        leaves it ready (its alert and `pmsearch sync status` say which)."""
        checks = await self.run_checks({"redis": self._redis})
        sources = self.syncer.config.sources
        failing = self.syncer.failing
        if sources and len(failing) == len(sources) and not self.lmtp:
            checks["sources"] = "every source is failing: " + "; ".join(failing.values())
        else:
            checks["sources"] = "ok"
        return checks

    async def _redis(self) -> None:
        await self.syncer.redis.ping()


def _redact_sources(settings: SyncSettings, config: SyncConfig) -> None:
    """Log with every source's password and token redacted, as the settings' secrets are;
    IMAPClient's own command log stays off (it would show the conversation)."""
    found = []
    for source in config.sources:
        try:
            found.append(source.secret().get_secret_value())
        except ConfigError:
            pass  # reported when the source connects
    configure(settings.log_level, settings.log_format, "sync", [*secret_values(settings), *found])
    logging.getLogger("imapclient").setLevel(logging.WARNING)


async def run(settings: SyncSettings) -> None:
    config = load_config(settings.sync_config)
    _redact_sources(settings, config)
    redis = connect(settings)
    syncer = Syncer(settings, config, redis)
    server = None
    probes = SyncProbes(syncer, asyncio.get_running_loop())
    if settings.metrics_port:
        server = start_server(settings.metrics_host, settings.metrics_port, probes)
    started = time.time()
    for source in config.sources:
        for fmap in source.folders:
            # A folder not synced since the stage started is as stale as the start: the
            # not-synced alert fires for a source that never connects, too.
            metrics.LAST_SUCCESS.labels(source.tenant, source.mailbox, fmap.server).set(started)
    tasks = [asyncio.create_task(syncer.keep_current(source), name=source.name) for source in config.sources]
    lmtp = None
    if settings.lmtp_port:
        lmtp = await serve_lmtp(settings, config, redis)
        probes.lmtp = True
    if not tasks and lmtp is None:
        log.warning("sync: nothing to do (no sources and no LMTP port; see PM_SYNC_CONFIG)")
    log.info("sync ready: %d sources, LMTP %s", len(tasks), f"on port {settings.lmtp_port}" if lmtp else "off")
    try:
        await asyncio.Event().wait()
    finally:
        for task in tasks:
            task.cancel()
        if lmtp is not None:
            lmtp.stop()
        if server is not None:
            server.shutdown()
        await redis.aclose()


def main() -> None:
    settings = sync_settings()
    setup_logging(settings, "sync")
    try:
        uvloop.run(run(settings))
    except ConfigError as exc:
        raise SystemExit(f"pmsearch sync: cannot start: {exc.detail}") from None
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
