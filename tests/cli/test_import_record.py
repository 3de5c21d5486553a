"""The record of what `pmsearch ingest` imported: per index, append-only, cut lines ignored."""

from __future__ import annotations

from pathlib import Path

from pmsearch.cli.import_record import ImportRecord


def test_what_was_recorded_is_known_to_the_next_import_of_the_same_index(tmp_path):
    source = tmp_path / "Maildir"
    first = ImportRecord.open(tmp_path, "index-a", "acme", "bob", source)
    first.add(["maildir:INBOX/1", "maildir:INBOX/2", ""])
    first.close()
    again = ImportRecord.open(tmp_path, "index-a", "acme", "bob", source)
    assert again.has("maildir:INBOX/1") and again.has("maildir:INBOX/2") and not again.has("maildir:INBOX/3")
    assert not again.has("")  # a message without an identity is always sent


def test_a_rebuilt_index_or_another_mailbox_starts_from_nothing(tmp_path):
    source = tmp_path / "Maildir"
    first = ImportRecord.open(tmp_path, "index-a", "acme", "bob", source)
    first.add(["maildir:INBOX/1"])
    first.close()
    assert not ImportRecord.open(tmp_path, "index-b", "acme", "bob", source).has("maildir:INBOX/1")
    assert not ImportRecord.open(tmp_path, "index-a", "acme", "alice", source).has("maildir:INBOX/1")


def test_a_line_cut_short_by_a_kill_is_not_taken_as_imported(tmp_path):
    source = Path("mail.mbox")
    record = ImportRecord.open(tmp_path, "index-a", "acme", "bob", source)
    record.add(["sha256:aa"])
    record.close()
    with record.file.open("a") as fh:
        fh.write("sha256:b")  # the kill came mid-line
    again = ImportRecord.open(tmp_path, "index-a", "acme", "bob", source)
    assert again.has("sha256:aa") and not again.has("sha256:b")
    again.add(["sha256:cc"])
    again.close()
    assert ImportRecord.open(tmp_path, "index-a", "acme", "bob", source).has("sha256:cc")
