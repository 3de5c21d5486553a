"""A searcher killed while it writes one message's points: the next import of that
message completes it instead of taking it for a duplicate.

A real child process ingests one long message into a real Qdrant Edge shard, writing
four points per upsert batch, and stops after the first batch; the test kills it with
SIGKILL there, reopens the shard (Edge replays its write-ahead log) and imports the
message again, as a client whose import got no reply does.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from pmsearch.services.searcher.index.base import IndexFilter
from pmsearch.services.searcher.index.edge import EdgeIndex
from pmsearch.services.searcher.ingest.identity import content_digest
from pmsearch.services.searcher.ingest.schemas import message_key
from pmsearch.services.searcher.ingest.service import Ingester
from pmsearch.services.searcher.repository import ScopedMailRepository
from pmsearch.shared.scope import Scope
from tests.services.searcher.ingest.conftest import DIM, HashEmbedder
from tests.services.searcher.ingest.mails import mail, raw

ROOT = Path(__file__).resolve().parents[2]
CHUNK_CHARS = 300
BODY = "\n\n".join(
    f"Paragraph {n}: the surveyor inspected the VW Golf again and noted damage item {n} on the claim." * 2
    for n in range(12)
)

CHILD = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    from pmsearch.services.searcher.index import layout
    from pmsearch.services.searcher.index.edge import EdgeIndex
    from pmsearch.services.searcher.ingest.service import Ingester
    from tests.services.searcher.ingest.conftest import DIM, HashEmbedder

    layout.UPSERT_BATCH = 4  # one message spans several batches


    class Stalling:
        # The shard, except that the first write after arming stalls for the kill.
        def __init__(self, shard):
            self._shard = shard

        def __getattr__(self, name):
            return getattr(self._shard, name)

        def update(self, op):
            self._shard.update(op)
            print("one batch written", flush=True)
            time.sleep(600)


    class Index(EdgeIndex):
        armed = False

        @property
        def shard(self):
            shard = super().shard
            return Stalling(shard) if self.armed else shard


    index = Index(Path(sys.argv[1]), DIM)
    index.armed = True
    data = Path(sys.argv[2]).read_bytes()
    Ingester(index, HashEmbedder(), int(sys.argv[3])).ingest("acme", "alice", [(data, "INBOX", "message")])
    print("import finished", flush=True)
    """
)


def kill_after_first_batch(shard: Path, message: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(shard), str(message), str(CHUNK_CHARS)],
        cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )
    try:
        line = child.stdout.readline().decode().strip()
        assert line == "one batch written", child.stderr.read().decode()[-2000:]
        os.kill(child.pid, signal.SIGKILL)
        assert child.wait(timeout=30) == -signal.SIGKILL
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()


def points_of(index: EdgeIndex, message_id: str) -> int:
    return index.count(IndexFilter(tenant_id="acme", mailboxes=("alice",), message_ids=(message_id,)))


def test_a_message_cut_short_by_a_kill_is_completed_by_the_next_import(tmp_path):
    data = raw(mail(BODY, subject="Survey of the Golf", msgid="survey@northwind.example"))
    (tmp_path / "message.eml").write_bytes(data)
    mid = message_key("acme", "survey@northwind.example", content_digest(data))

    reference = EdgeIndex(tmp_path / "reference", DIM)
    Ingester(reference, HashEmbedder(), CHUNK_CHARS).ingest("acme", "alice", [(data, "INBOX", "message")])
    whole = points_of(reference, mid)
    reference.close()
    assert whole > 8  # more than two batches of four

    kill_after_first_batch(tmp_path / "shard", tmp_path / "message.eml")

    index = EdgeIndex(tmp_path / "shard", DIM)
    try:
        assert 0 < points_of(index, mid) < whole  # the kill left the message in part
        report = Ingester(index, HashEmbedder(), CHUNK_CHARS).ingest("acme", "alice", [(data, "INBOX", "message")])
        assert (report.indexed, report.duplicate, report.collisions) == (1, 0, 0), report
        assert report.items[0].message_id == mid
        assert points_of(index, mid) == whole
        scope = Scope(tenant_id="acme", principal="alice", mailboxes=("alice",), expires_at=time.time() + 60)
        stored = ScopedMailRepository(index, HashEmbedder()).message(scope, mid)
        assert stored.body.strip() == BODY.strip()
        # Whole now: a further import is a duplicate.
        again = Ingester(index, HashEmbedder(), CHUNK_CHARS).ingest("acme", "alice", [(data, "INBOX", "message")])
        assert again.duplicate == 1
    finally:
        index.close()
