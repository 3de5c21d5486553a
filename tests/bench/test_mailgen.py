"""The generated benchmark mailbox is mail the ingester takes, with what real mailboxes have."""

from __future__ import annotations

from collections import Counter

from bench.mailgen import MAILBOXES, write_maildirs
from pmsearch.services.searcher.ingest.parser import parse_message
from pmsearch.services.searcher.ingest.readers import read_path


def test_generated_maildirs_parse_and_hold_threads_attachments_and_copies(tmp_path):
    written = write_maildirs(tmp_path, 400, seed=3)
    assert set(written) == set(MAILBOXES) and sum(written.values()) > 400  # copies on top
    seen: Counter[str] = Counter()
    ids: Counter[str] = Counter()
    for box in MAILBOXES:
        for m in read_path(tmp_path / box):
            msg = parse_message(m.raw, folder=m.folder)
            ids[msg.rfc_message_id] += 1
            seen[m.folder] += 1
            seen["reply"] += bool(msg.in_reply_to)
            seen["attachment"] += bool(msg.attachments)
            seen["pdf text"] += any(a.filename.endswith(".pdf") and a.text for a in msg.attachments)
    assert seen["INBOX"] and seen["Sent"] and seen["Archive"]
    assert seen["reply"] > 50 and seen["attachment"] > 20 and seen["pdf text"] > 0
    assert any(n > 1 for n in ids.values())  # the same message in two places


def test_another_seed_makes_new_messages(tmp_path):
    write_maildirs(tmp_path / "a", 50, seed=1)
    write_maildirs(tmp_path / "b", 50, seed=2)

    def message_ids(root):
        return {parse_message(m.raw).rfc_message_id for box in MAILBOXES if (root / box).exists()
                for m in read_path(root / box)}

    assert not message_ids(tmp_path / "a") & message_ids(tmp_path / "b")
