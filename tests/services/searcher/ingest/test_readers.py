"""Readers: a single .eml, mbox, Maildir (with subfolders), a directory tree of .eml."""

from __future__ import annotations

import mailbox

import pytest

from pmsearch.services.searcher.errors import UnreadableSource
from pmsearch.services.searcher.ingest.parser import parse_message
from pmsearch.services.searcher.ingest.readers import count_messages, demo_mailboxes, read_path

from .mails import mail, raw


def _ids(items):
    return [parse_message(r, folder=f).rfc_message_id for r, f, *_ in items]


def test_single_eml(tmp_path):
    path = tmp_path / "one.eml"
    path.write_bytes(raw(mail(msgid="one@x")))
    items = list(read_path(path))
    assert [(f, label) for _, f, label, _ in items] == [("INBOX", str(path))]
    assert _ids(items) == ["one@x"]
    assert [f for _, f, *_ in read_path(path, folder="Sent")] == ["Sent"]


def test_mbox(tmp_path):
    path = tmp_path / "archive"  # no suffix: recognised by its "From " line
    box = mailbox.mbox(str(path))
    for i in range(3):
        # A body line starting "From " is the classic mbox trap; it must not split messages.
        box.add(mail(msgid=f"mb{i}@x", body=f"Message {i}\nFrom the desk of Alice\n"))
    box.close()
    items = list(read_path(path))
    assert _ids(items) == ["mb0@x", "mb1@x", "mb2@x"]
    assert [label for _, _, label, _ in items] == [f"{path}:1", f"{path}:2", f"{path}:3"]
    assert all(not r.startswith(b"From ") for r, *_ in items)
    assert "From the desk of Alice" in parse_message(items[0][0]).body_text


def test_maildir_with_subfolders(tmp_path):
    box = mailbox.Maildir(str(tmp_path / "md"))
    box.add(mail(msgid="in@x"))
    sent = box.add_folder("Sent")
    sent.add(mail(msgid="sent@x"))
    junk = box.add_folder("Junk")
    junk.add(mail(msgid="junk@x"))
    items = list(read_path(tmp_path / "md"))
    by_id = {parse_message(r, folder=f).rfc_message_id: f for r, f, *_ in items}
    assert by_id == {"in@x": "INBOX", "sent@x": "Sent", "junk@x": "Junk"}
    junk_raw = next(r for r, f, *_ in items if f == "Junk")
    assert parse_message(junk_raw, folder="Junk").quarantined
    assert all(label.startswith(f"{tmp_path / 'md'}:") for _, _, label, _ in items)


def test_directory_of_eml_files(tmp_path):
    (tmp_path / "INBOX").mkdir()
    (tmp_path / "Archive" / "2023").mkdir(parents=True)
    (tmp_path / "top.eml").write_bytes(raw(mail(msgid="top@x")))
    (tmp_path / "INBOX" / "001.eml").write_bytes(raw(mail(msgid="a@x")))
    (tmp_path / "INBOX" / "notes.txt").write_text("not mail, ignored")
    (tmp_path / "Archive" / "2023" / "002.EML").write_bytes(raw(mail(msgid="b@x")))
    items = list(read_path(tmp_path))
    assert sorted((parse_message(r).rfc_message_id, f) for r, f, *_ in items) == [
        ("a@x", "INBOX"), ("b@x", "Archive/2023"), ("top@x", "INBOX")]


def test_missing_path(tmp_path):
    with pytest.raises(UnreadableSource):
        list(read_path(tmp_path / "nope"))


def test_demo_mailboxes_layout(tmp_path):
    for tenant, box in [("acme", "alice"), ("acme", "bob"), ("globex", "carol")]:
        (tmp_path / tenant / box / "INBOX").mkdir(parents=True)
    (tmp_path / "_source").mkdir()
    (tmp_path / "README.md").write_text("x")
    assert [(t, m) for t, m, _ in demo_mailboxes(tmp_path)] == [("acme", "alice"), ("acme", "bob"), ("globex", "carol")]


def test_a_skipped_message_is_passed_over_by_its_source_id(tmp_path):
    box = mailbox.Maildir(str(tmp_path / "md"), create=True)
    box.add(mail(msgid="old@x"))
    box.add(mail(msgid="new@x"))
    first = list(read_path(tmp_path / "md"))
    ids = {parse_message(m.raw).rfc_message_id: m.source_id for m in first}
    assert all(sid.startswith("maildir:INBOX/") for sid in ids.values())
    again = list(read_path(tmp_path / "md", skip=lambda sid: sid == ids["old@x"]))
    assert _ids(again) == ["new@x"]
    assert count_messages(tmp_path / "md") == 2


def test_an_mbox_message_is_identified_by_its_bytes(tmp_path):
    path = tmp_path / "box.mbox"
    box = mailbox.mbox(str(path))
    box.add(mail(msgid="a@x"))
    box.add(mail(msgid="b@x"))
    box.close()
    first = list(read_path(path))
    assert len({m.source_id for m in first}) == 2 and count_messages(path) == 2
    assert list(read_path(path, skip=lambda sid: sid == first[0].source_id))[0].source_id == first[1].source_id
