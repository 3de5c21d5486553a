"""The checked-in demo mailbox: size, layout, every message parses, and it imports."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from pmsearch.services.searcher.index.base import IndexFilter
from pmsearch.services.searcher.ingest.parser import parse_message
from pmsearch.services.searcher.ingest.readers import demo_mailboxes, read_path
from pmsearch.services.searcher.ingest.service import Ingester

DEMO = Path(__file__).resolve().parents[4] / "data" / "demo"


@pytest.fixture(scope="module")
def parsed():
    out = []
    for tenant, mailbox, path in demo_mailboxes(DEMO):
        for raw, folder, label, _ in read_path(path):
            out.append((tenant, mailbox, label, parse_message(raw, folder=folder)))
    return out


def test_layout_and_size(parsed):
    boxes = {(t, m) for t, m, _ in demo_mailboxes(DEMO)}
    assert boxes == {("acme", "alice"), ("acme", "bob"), ("acme", "shared-claims"), ("globex", "carol")}
    assert len(parsed) >= 150
    assert len({t for t, *_ in parsed}) >= 2
    assert (DEMO / "README.md").is_file()


def test_demo_covers_the_cases_tests_and_demos_rely_on(parsed):
    msgs = [m for *_, m in parsed]
    assert sum(m.quarantined for m in msgs) >= 3
    assert any(m.quarantined and m.folder == "INBOX" for m in msgs)  # by X-Spam-Flag header
    pdfs = [a for m in msgs for a in m.attachments if a.content_type == "application/pdf"]
    assert pdfs and all(a.text for a in pdfs)
    assert any(a.content_type == "text/html" and a.text for m in msgs for a in m.attachments)
    assert any(a.content_type.startswith("image/") for m in msgs for a in m.attachments)
    assert any("Forwarded message" in m.body_text and m.attachments for m in msgs)
    assert any("Grüße" in m.body_text for m in msgs) and any("réunion" in m.body_text for m in msgs)
    assert any("<<<END_UNTRUSTED>>>" in m.body_text for m in msgs)
    with_number = [m for m in msgs if "INV-2024-0173" in m.body_text + "".join(a.text or "" for a in m.attachments)]
    assert len(with_number) == 1
    golf = [m for t, box, _, m in parsed if box == "shared-claims" and "CLM-2024-55817" in m.body_text]
    assert any("accepted" in m.body_text for m in golf)


def test_demo_imports_without_errors(tmp_path, embedder):
    from pmsearch.services.searcher.index.edge import EdgeIndex

    index = EdgeIndex(tmp_path / "index", embedder.dim)
    try:
        boxes = demo_mailboxes(DEMO)
        mailboxes: dict[str, list[str]] = {}
        for tenant, mailbox, _ in boxes:
            mailboxes.setdefault(tenant, []).append(mailbox)
        ing = Ingester(index, embedder, chunk_chars=1000, tenant_mailboxes=lambda t: mailboxes[t])
        totals = Counter()
        for tenant, mailbox, path in boxes:
            report = ing.ingest(tenant, mailbox, read_path(path))
            assert report.error == 0, report.errors
            totals.update(indexed=report.indexed, duplicate=report.duplicate)
        assert totals["duplicate"] == 1  # the message filed in both INBOX and Archive
        assert totals["indexed"] >= 150
        claims = index.scroll(IndexFilter(tenant_id="acme", mailboxes=("shared-claims",), kind="body"))
        golf_threads = {p.thread_id for p in claims if p.subject.startswith(("Claim report: VW Golf", "Re: Claim report"))}
        decision = [p for p in claims if p.subject.startswith("Decision on claim CLM-2024-55817")]
        assert len(golf_threads) == 1 and decision and decision[0].thread_id in golf_threads
    finally:
        index.close()
