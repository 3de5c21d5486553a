"""IMAP sync benchmark: ``python -m bench.sync [--messages 10000]``.

A real Dovecot (started here, as the tests start it) holding generated mail
(``bench.mailgen``), Redis, the searcher and the gateway on free ports, then, in one run:

- **first sync**: a folder of N messages through the sync (``pmsearch.services.sync``: fetch,
  ``pm:ingest``, the searcher), against ``pmsearch ingest`` of the same N messages as a
  Maildir into another tenant (the baseline): messages a second each, and their ratio.
  Target: the sync bounded by the embedder, not by IMAP (ratio near 1);
- **IDLE latency**: the sync stage running as a process; messages delivered one at a
  time to a watched INBOX, each timed until ``/v1/search`` finds its unique word.
  Target: p95 <= 10 s;
- **kill -9**: the sync stage killed at random points while it syncs another folder,
  started again each time; then every message of that folder must be in the index
  exactly once.

Prints a table, then one JSON object as the last line.
"""

from __future__ import annotations

import argparse
import mailbox
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

import httpx
import yaml

from bench._util import emit_json, format_table, latency_ms
from bench.mailgen import Generator
from pmsearch.cli.stack import ROOT, Stack
from pmsearch.testing.dovecot import Dovecot, dovecot_server

PASSWORD = "bench-imap-password"
IDLE_TARGET_P95_S = 10.0


def generate(count: int, seed: int = 7) -> list[bytes]:
    gen = Generator(seed)
    return [gen.message(n, count)[0] for n in range(count)]


def append_all(server: Dovecot, user: str, folder: str, raws: list[bytes]) -> float:
    start = time.perf_counter()
    with server.client(user) as c:
        if not c.folder_exists(folder):
            c.create_folder(folder)
        for raw in raws:
            c.append(folder, raw)
    return time.perf_counter() - start


def baseline_ingest(stack: Stack, raws: list[bytes], work: Path) -> float:
    """``pmsearch ingest`` of the messages as a Maildir, tenant "files"."""
    box = mailbox.Maildir(str(work / "maildir"), create=True)
    for raw in raws:
        box.add(raw)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PM_")}
    env.update(PM_GATEWAY_URL=stack.gateway_url, PM_ADMIN_TOKEN=stack.secrets.admin_token, PM_VAR_DIR=str(stack.var_dir))
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "pmsearch.cli.main", "ingest", str(work / "maildir"), "-t", "files", "-m", "alice"],
                   cwd=ROOT, env=env, check=True, capture_output=True, timeout=6 * 3600)
    return time.perf_counter() - start


def first_sync(stack: Stack, config: Path) -> float:
    """``pmsearch sync once`` over the sources file's first source."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PM_")}
    env.update(PM_VAR_DIR=str(stack.var_dir), PM_REDIS_PORT=str(stack.redis_port), PM_SYNC_CONFIG=str(config))
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "pmsearch.cli.main", "sync", "once"], cwd=ROOT, env=env, check=True,
                   capture_output=True, timeout=6 * 3600)
    return time.perf_counter() - start


def idle_latency(stack: Stack, server: Dovecot, deliveries: int) -> list[float]:
    admin = {"Authorization": f"Bearer {stack.secrets.admin_token}"}
    key = httpx.post(f"{stack.gateway_url}/v1/admin/keys", headers=admin, timeout=30, json={
        "tenant_id": "imap", "principal": "bench", "mailboxes": ["live"], "permissions": ["search"]}).json()["key"]
    samples = []
    with httpx.Client(base_url=stack.gateway_url, headers={"Authorization": f"Bearer {key}"}, timeout=30) as client:
        for n in range(deliveries):
            word = f"zqx{n:04d}marker"
            raw = (f"From: Bob <bob@example.org>\r\nTo: live@example.org\r\nSubject: Delivery {word}\r\n"
                   f"Message-ID: <live-{n}-{time.time_ns()}@example.org>\r\n"
                   f"Date: Mon, 1 Apr 2024 10:00:00 +0000\r\n\r\nThe parcel {word} was delivered.\r\n").encode()
            start = time.perf_counter()
            with server.client("bob") as c:
                c.append("INBOX", raw)
            while time.perf_counter() - start < 60:
                hits = client.post("/v1/search", json={"query": word, "mode": "keyword"}).json().get("hits", [])
                if hits:
                    break
                time.sleep(0.1)
            samples.append(time.perf_counter() - start)
            time.sleep(0.5)
    return samples


def kill_soak(stack: Stack, expected: int, kills: int, rng: random.Random) -> list[float]:
    """Kill -9 the sync stage ``kills`` times while it syncs the soak folder; wait for it to finish."""
    admin = stack.redis_client()
    uids = "pm:sync:imap:soak:Soak:uids"
    when = []
    for _ in range(kills):
        time.sleep(rng.uniform(1.0, 4.0))
        when.append(admin.hlen(uids))
        os.kill(stack.procs["sync"].pid, signal.SIGKILL)
        stack.procs["sync"].wait()
        stack.restart("sync")
    deadline = time.monotonic() + 3600
    while admin.hlen(uids) < expected and time.monotonic() < deadline:
        time.sleep(1)
    return when


def exactly_once(data_dir: Path, raws: list[bytes]) -> dict[str, int]:
    """Each message by its content digest (its identity at ingest; a generated message
    may have no Message-ID): present, and under one message id only."""
    from pmsearch.services.searcher.index.base import IndexFilter
    from pmsearch.services.searcher.index.edge import EdgeIndex
    from pmsearch.services.searcher.ingest.identity import content_digest

    index = EdgeIndex(data_dir, 384, optimize_after=0)
    heads: dict[str, set[str]] = defaultdict(set)
    for p in index.scroll(IndexFilter(tenant_id="imap", mailboxes=("soak",)), limit=10_000_000):
        if p.kind == "body" and p.chunk_no == 0 and p.content_digest:
            heads[p.content_digest].add(p.message_id)
    index.close()
    wanted = {content_digest(raw) for raw in raws}
    return {"missing": sum(1 for d in wanted if d not in heads), "twice": sum(1 for d in wanted if len(heads[d]) > 1)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=10_000)
    parser.add_argument("--soak-messages", type=int, default=600)
    parser.add_argument("--idle-deliveries", type=int, default=20)
    parser.add_argument("--kills", type=int, default=3)
    args = parser.parse_args()
    rng = random.Random(11)
    raws = generate(args.messages)
    soak = generate(args.soak_messages, seed=23)
    with tempfile.TemporaryDirectory(prefix="pm-bench-sync-") as tmp:
        work = Path(tmp)
        with dovecot_server(work / "dovecot", {"alice": PASSWORD, "bob": PASSWORD}) as server:
            append_s = append_all(server, "alice", "INBOX", raws)
            append_all(server, "alice", "Soak", soak)
            os.environ["BENCH_IMAP_PASSWORD"] = PASSWORD
            base = {"host": "127.0.0.1", "port": server.imap_port, "tls": "starttls", "ca_file": str(server.cert),
                    "password_env": "BENCH_IMAP_PASSWORD"}
            first = work / "first.yaml"
            first.write_text(yaml.safe_dump({"sources": [
                {**base, "tenant": "imap", "mailbox": "alice", "user": "alice"}]}))
            running = work / "running.yaml"
            running.write_text(yaml.safe_dump({"sources": [
                {**base, "tenant": "imap", "mailbox": "live", "user": "bob", "poll_seconds": 600},
                {**base, "tenant": "imap", "mailbox": "soak", "user": "alice", "folders": [{"server": "Soak"}],
                 "idle": False, "poll_seconds": 1},
            ]}))
            stack = Stack(work / "stack", services=("searcher",), extra_env={
                "PM_SYNC_CONFIG": str(running), "PM_SEARCH_RATE_PER_MINUTE": "0",
                "PM_EMBEDDING_CACHE_DIR": str(ROOT / "var" / "models")})
            try:
                stack.start()
                files_s = baseline_ingest(stack, raws, work)
                sync_s = first_sync(stack, first)
                stack.start_worker("sync")
                stack.wait_for_log("sync", "sync ready", 60)
                killed_at = kill_soak(stack, len(soak), args.kills, rng)
                latency = idle_latency(stack, server, args.idle_deliveries)
            finally:
                stack.stop()
            once = exactly_once(stack.var_dir / "data" / "qdrant-edge", soak)
    files_rate, sync_rate = len(raws) / files_s, len(raws) / sync_s
    idle = latency_ms(latency)
    rows = [
        {"measure": "pmsearch ingest of N messages as files (baseline)", "value": f"{files_rate:.1f} messages/s",
         "detail": f"{files_s:.1f} s"},
        {"measure": "first IMAP sync of the same N messages", "value": f"{sync_rate:.1f} messages/s",
         "detail": f"{sync_s:.1f} s; ratio to the baseline {sync_rate / files_rate:.2f}"},
        {"measure": "IMAP APPEND of N messages (set-up, not a target)", "value": f"{len(raws) / append_s:.0f} messages/s",
         "detail": ""},
        {"measure": "new message to /v1/search through IDLE", "value": f"p50 {idle['p50_ms'] / 1000:.2f} s, "
         f"p95 {idle['p95_ms'] / 1000:.2f} s", "detail": f"target p95 <= {IDLE_TARGET_P95_S:.0f} s"},
        {"measure": f"kill -9 of the sync stage x{args.kills} while syncing {len(soak)} messages",
         "value": f"missing {once['missing']}, twice {once['twice']}", "detail": f"killed with {killed_at} UIDs done"},
    ]
    print(f"N = {len(raws)} messages\n" + format_table(rows, ["measure", "value", "detail"]))
    emit_json({
        "messages": len(raws), "baseline_messages_per_s": round(files_rate, 2), "sync_messages_per_s": round(sync_rate, 2),
        "sync_to_baseline": round(sync_rate / files_rate, 3), "idle_latency_ms": idle,
        "idle_p95_target_met": idle["p95_ms"] / 1000 <= IDLE_TARGET_P95_S, "soak": {**once, "killed_at": killed_at},
    })


if __name__ == "__main__":
    main()
