"""Message identity: the content digest ignores how a copy travelled and sees what it
says; ingest keys messages by Message-ID and digest, records deliveries, reports
collisions, and adopts messages indexed before digests existed only when equal."""

from __future__ import annotations

from pmsearch.services.searcher.index.base import IndexFilter, delivery_key
from pmsearch.services.searcher.ingest.identity import content_digest
from pmsearch.services.searcher.ingest.schemas import legacy_message_key, message_key
from pmsearch.services.searcher.ingest.service import Ingester

from .mails import mail, raw

BASE = raw(mail(msgid="one@x", to="alice@acme.example, bob@acme.example", body="The plan for Monday."))


def test_digest_ignores_delivery_headers_line_endings_and_mbox_quoting():
    delivered = (b"Received: from mx1.acme.example by mx2\r\n\tid 42; Tue, 12 Mar 2024\r\n"
                 b"Delivered-To: bob@acme.example\r\nX-Spam-Flag: YES\r\nBcc: carol@acme.example\r\n"
                 + BASE.replace(b"\n", b"\r\n"))
    assert content_digest(delivered) == content_digest(BASE)
    assert content_digest(b"From MAILER-DAEMON Tue Mar 12 09:30:00 2024\n" + BASE) == content_digest(BASE)
    body_from = raw(mail(msgid="f@x", body="Hi\nFrom here on we meet at ten."))
    assert content_digest(body_from.replace(b"\nFrom here", b"\n>From here")) == content_digest(body_from)
    refolded = BASE.replace(b"To: alice@acme.example, bob@acme.example", b"To: alice@acme.example,\n bob@acme.example")
    assert content_digest(refolded) == content_digest(BASE)


def test_digest_sees_body_shown_headers_and_charset():
    assert content_digest(BASE.replace(b"Monday", b"Friday")) != content_digest(BASE)
    assert content_digest(BASE.replace(b"Subject: Hello", b"Subject: Hello!")) != content_digest(BASE)
    assert content_digest(BASE.replace(b"alice@acme.example, ", b"")) != content_digest(BASE)
    assert content_digest(BASE.replace(b"charset=\"utf-8\"", b"charset=\"koi8-r\"")) != content_digest(BASE)


def scroll(index, *mailboxes, **kw):
    return index.scroll(IndexFilter(tenant_id="acme", mailboxes=mailboxes, **kw))


def test_same_message_id_other_content_is_indexed_apart_and_reported(index, embedder, caplog):
    ing = Ingester(index, embedder)
    genuine, edited = mail(msgid="c@x", body="Accepted."), mail(msgid="c@x", body="Rejected.")
    first = ing.ingest("acme", "alice", [(raw(genuine), "INBOX", "a")])
    second = ing.ingest("acme", "bob", [(raw(edited), "INBOX", "b")])
    assert (first.collisions, second.collisions, second.indexed) == (0, 1, 1)
    [item] = second.items
    assert item.collision and item.message_id == message_key("acme", "c@x", content_digest(raw(edited)))
    assert item.message_id != first.items[0].message_id
    assert "message id collision in tenant acme" in caplog.text and "c@x" not in caplog.text
    assert [p.text for p in scroll(index, "alice")] == ["Accepted."]
    assert [p.text for p in scroll(index, "bob")] == ["Rejected."]
    # Both in one batch: still apart, still one collision.
    both = ing.ingest("acme", "carol", [(raw(mail(msgid="d@x", body="One.")), "INBOX", "1"),
                                        (raw(mail(msgid="d@x", body="Two.")), "INBOX", "2")])
    assert (both.indexed, both.collisions) == (2, 1)


def test_deliveries_in_one_batch_and_clean_copies_lift_quarantined_ones(index, embedder):
    ing = Ingester(index, embedder)
    flagged = BASE.replace(b"From:", b"X-Spam-Flag: YES\nFrom:", 1)
    report = ing.ingest("acme", "bob", [(flagged, "INBOX", "1"), (BASE, "Archive", "2"), (BASE, "Archive", "3")])
    assert (report.indexed, report.duplicate, report.deliveries) == (1, 2, 1)
    [p] = scroll(index, "bob")
    assert p.deliveries == [delivery_key("bob", "Archive")]
    assert p.quarantined_deliveries == [delivery_key("bob", "INBOX")]
    assert scroll(index, "bob", folders=("INBOX",)) == []
    again = ing.ingest("acme", "bob", [(BASE, "INBOX", "4")])  # a clean copy in the same place
    assert again.deliveries == 1
    [p] = scroll(index, "bob", folders=("INBOX",))
    assert p.quarantined_deliveries == [] and not p.quarantined
    assert ing.ingest("acme", "bob", [(flagged, "INBOX", "5")]).deliveries == 0  # never hides it again
    assert len(scroll(index, "bob", folders=("INBOX",))) == 1


def _as_schema_1(index, message_id: str) -> None:
    """What migration leaves of a message indexed by schema 1: no digest."""
    index.set_message_fields("acme", message_id, {"content_digest": None})


def test_a_message_from_a_schema_1_index_is_adopted_only_when_its_content_is_equal(index, embedder):
    ing = Ingester(index, embedder)
    [old] = ing.ingest("acme", "alice", [(BASE, "INBOX", "a")]).items
    _as_schema_1(index, old.message_id)
    same = ing.ingest("acme", "bob", [(BASE, "INBOX", "b")])
    assert (same.duplicate, same.collisions, same.items[0].message_id) == (1, 0, old.message_id)
    [p] = scroll(index, "bob")
    assert p.content_digest == content_digest(BASE) and p.mailboxes == ["alice", "bob"]
    # Same headers, other body: not adopted, whatever the Message-ID says.
    _as_schema_1(index, old.message_id)
    other = ing.ingest("acme", "carol", [(BASE.replace(b"Monday", b"Friday"), "INBOX", "c")])
    assert (other.indexed, other.collisions) == (1, 1)
    assert [p.message_id for p in scroll(index, "alice")] == [old.message_id]


def test_legacy_key_is_the_schema_1_id():
    assert legacy_message_key("acme", "a@b") != message_key("acme", "a@b", content_digest(BASE))
    assert legacy_message_key("acme", "a@b")[0] == "m" and len(legacy_message_key("acme", "a@b")) == 13
