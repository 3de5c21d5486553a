"""A tool call that fails in an unexpected way (a bug, an index fault) fails that call
only: the batch's other calls keep their results. Real Qdrant Edge index; the embedder
is the part that breaks."""

from __future__ import annotations

import time
from collections.abc import Sequence

from pmsearch.services.searcher.index.edge import EdgeIndex
from pmsearch.services.searcher.ingest.service import Ingester
from pmsearch.services.searcher.repository import ScopedMailRepository
from pmsearch.services.searcher.service import ToolRunner
from pmsearch.shared.messages import ToolCall
from pmsearch.shared.scope import Scope
from tests.services.searcher.ingest.conftest import HashEmbedder
from tests.services.searcher.ingest.mails import mail, raw

ALICE = Scope(tenant_id="acme", principal="alice", mailboxes=("alice",), expires_at=time.time() + 3600)


class BrokenEmbedder(HashEmbedder):
    """Embeds for ingest, then fails every query embedding as a crashed model would."""

    broken = False

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        if self.broken:
            raise RuntimeError("embedding model crashed")
        return super().embed(texts)


def test_an_unexpected_error_fails_only_its_own_call(tmp_path):
    embedder = BrokenEmbedder()
    index = EdgeIndex(tmp_path / "index", embedder.dim)
    try:
        message = raw(mail("The insurer accepts the Golf claim.", subject="Golf claim"))
        report = Ingester(index, embedder).ingest("acme", "alice", [(message, "INBOX", "message")])
        assert report.indexed == 1
        embedder.broken = True
        runner = ToolRunner(ScopedMailRepository(index, embedder))
        calls = [
            ToolCall(call_id="s1-1", tool="search", arguments={"query": "Golf claim", "mode": "semantic"}),
            ToolCall(call_id="s1-2", tool="search", arguments={"query": "Golf claim", "mode": "keyword"}),
        ]
        semantic, keyword = (runner.run(ALICE, c) for c in calls)
    finally:
        index.close()
    assert (semantic.outcome.ok, semantic.outcome.error_code) == (False, "internal")
    assert "crashed" not in (semantic.outcome.error or "")  # internals stay in the log
    assert semantic.outcome.call_id == "s1-1" and semantic.evidence == []
    assert keyword.outcome.ok and [m.subject for m in keyword.evidence] == ["Golf claim"]
