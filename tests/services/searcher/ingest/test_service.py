"""Ingester against the real Qdrant Edge adapter: idempotency, threads, chunks, payload,
batching, and malformed input that is reported while the rest is imported."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from pmsearch.services.searcher.index.base import IndexFilter, delivery_key
from pmsearch.services.searcher.ingest.identity import content_digest
from pmsearch.services.searcher.ingest.schemas import message_key, thread_key
from pmsearch.services.searcher.ingest.service import Ingester

from .mails import mail, make_pdf, raw

T0 = datetime(2024, 3, 1, 9, 0, tzinfo=UTC)


def items(*msgs, folder="INBOX"):
    return [(raw(m) if not isinstance(m, bytes) else m, folder, f"src:{i}") for i, m in enumerate(msgs)]


def flt(tenant="acme", mailboxes=("alice",), **kw):
    return IndexFilter(tenant_id=tenant, mailboxes=mailboxes, **kw)


def payloads(index, tenant="acme", mailboxes=("alice",), **kw):
    return index.scroll(flt(tenant, mailboxes, **kw))


def key_of(tenant, msg) -> str:
    return message_key(tenant, msg["Message-ID"].strip("<>"), content_digest(raw(msg)))


def thread_of(index, rfc_id, tenant="acme", mailboxes=("alice",)):
    found = {p.thread_id for p in payloads(index, tenant, mailboxes, rfc_message_ids=(rfc_id,))}
    assert len(found) == 1, (rfc_id, found)
    return found.pop()


def test_ingest_then_reimport_is_idempotent(index, embedder):
    ing = Ingester(index, embedder, chunk_chars=500)
    msgs = [mail(msgid=f"a{i}@x", subject=f"Topic {i}", body=f"Body number {i}.", date=T0 + timedelta(hours=i))
            for i in range(3)]
    first = ing.ingest("acme", "alice", items(*msgs))
    assert (first.indexed, first.duplicate, first.error) == (3, 0, 0)
    assert [(it.index, it.status, it.message_id) for it in first.items] == [
        (i, "indexed", key_of("acme", m)) for i, m in enumerate(msgs)]
    points = index.count(flt())
    again = Ingester(index, embedder, chunk_chars=500).ingest("acme", "alice", items(*msgs))
    assert (again.indexed, again.duplicate, again.error, again.chunks) == (0, 3, 0, 0)
    assert {it.status for it in again.items} == {"duplicate"}
    assert index.count(flt()) == points
    # The same bytes twice in one import: the second is a duplicate too.
    dup = ing.ingest("acme", "alice", items(mail(msgid="b@x"), mail(msgid="b@x")))
    assert (dup.indexed, dup.duplicate) == (1, 1)


def test_a_copy_in_another_mailbox_is_one_message_delivered_to_both_but_tenants_stay_apart(index, embedder):
    ing = Ingester(index, embedder, tenant_mailboxes=lambda t: ["alice", "bob"] if t == "acme" else ["carol"])
    same = mail(msgid="same@x")
    assert ing.ingest("acme", "alice", items(same)).indexed == 1
    # A fresh ingester (e.g. after a restart) finds the stored copy all the same.
    fresh = Ingester(index, embedder, tenant_mailboxes=lambda t: ["alice", "bob"])
    second = fresh.ingest("acme", "bob", items(same, folder="Archive"))
    assert (second.indexed, second.duplicate, second.deliveries, second.chunks) == (0, 1, 1, 0)
    (p,) = payloads(index, mailboxes=("bob",))
    assert p.deliveries == [delivery_key("alice", "INBOX"), delivery_key("bob", "Archive")]
    assert p.message_id == key_of("acme", same) == second.items[0].message_id
    assert index.count(flt(mailboxes=("alice", "bob"))) == 1  # one message, not two
    other = ing.ingest("globex", "carol", items(same))
    assert other.indexed == 1
    (g,) = payloads(index, "globex", ("carol",))
    assert g.message_id == key_of("globex", same) != key_of("acme", same) and g.tenant_id == "globex"


def test_malformed_input_is_reported_and_the_rest_imported(index, embedder):
    report = Ingester(index, embedder).ingest("acme", "alice", items(
        mail(msgid="ok1@x"), b"", bytes(range(256)) * 4, b"no headers here\n\njust text", mail(msgid="ok2@x")))
    assert (report.indexed, report.duplicate, report.error) == (2, 0, 3)
    assert report.errors == [
        "src:1: empty message",
        "src:2: binary data, not a mail message",
        "src:3: no header section: not an RFC 822 message",
    ]
    assert [(it.index, it.status) for it in report.items] == [
        (0, "indexed"), (1, "error"), (2, "error"), (3, "error"), (4, "indexed")]
    assert index.count(flt()) == 2


def test_payload_fields_and_attachment_chunks(index, embedder):
    msg = mail(msgid="inv@x", subject="Invoice INV-2024-0173", sender="Initech Billing <Billing@Initech.example>",
               to="Bob Keller <BOB@acme.example>", cc="alice@acme.example", body="Invoice attached.")
    msg.add_attachment(make_pdf(["Invoice INV-2024-0173", "Total EUR 4,870.00"]), maintype="application",
                       subtype="pdf", filename="INV-2024-0173.pdf")
    msg.add_attachment("first notes", filename="notes.txt")
    msg.add_attachment("second notes", filename="notes.txt")  # same name: must not overwrite
    msg.add_attachment(b"\xff\xd8jpeg", maintype="image", subtype="jpeg", filename="photo.jpg")
    report = Ingester(index, embedder).ingest("acme", "alice", items(msg))
    assert report.indexed == 1 and report.chunks == 4
    got = {(p.kind, p.attachment_name): p for p in payloads(index)}
    assert set(got) == {("body", None), ("attachment", "INV-2024-0173.pdf"), ("attachment", "notes.txt"),
                        ("attachment", "notes (2).txt")}
    body = got[("body", None)]
    assert body.text == "Invoice attached."
    assert body.sender == "Initech Billing <billing@initech.example>" and body.sender_email == "billing@initech.example"
    assert body.recipients == ["bob@acme.example", "alice@acme.example"]
    assert body.recipient_names == ["Bob Keller <bob@acme.example>", "alice@acme.example"]
    assert body.has_attachments and body.attachment_names == ["INV-2024-0173.pdf", "notes.txt", "notes (2).txt", "photo.jpg"]
    assert body.date == datetime(2024, 3, 12, 9, 30, tzinfo=UTC) and body.date_ts == body.date.timestamp()
    assert body.source_text == "Invoice attached."
    assert body.deliveries == [delivery_key("alice", "INBOX")] and not body.quarantined and body.mailboxes == ["alice"]
    assert body.message_id == key_of("acme", msg) and body.rfc_message_id == "inv@x"
    assert body.content_digest == content_digest(raw(msg))
    assert "4,870.00" in got[("attachment", "INV-2024-0173.pdf")].text
    assert got[("attachment", "notes (2).txt")].text == "second notes"
    assert got[("attachment", "notes (2).txt")].source_text == "second notes"


def test_quarantined_mail_is_stored_flagged_and_invisible_to_queries(index, embedder):
    report = Ingester(index, embedder).ingest("acme", "alice", items(mail(msgid="q@x"), folder="Junk"))
    assert report.indexed == 1 and report.chunks == 1
    assert index.count(flt()) == 0  # the adapter excludes quarantined points from every read


def test_long_text_is_chunked_and_embeddings_are_batched_across_messages(index, embedder):
    paragraph = " ".join(["The insurer asked for photos of the damage. The garage sent an estimate."] * 3)
    long_body = "\n\n".join(f"Paragraph {i}. {paragraph}" for i in range(12))
    msgs = [mail(msgid="long@x", subject="Golf claim", body=long_body)]
    msgs += [mail(msgid=f"s{i}@x", subject=f"Short {i}", body="Short note.") for i in range(150)]
    ing = Ingester(index, embedder, chunk_chars=400, embed_batch=64, message_batch=64)
    report = ing.ingest("acme", "alice", items(*msgs))
    assert report.indexed == 151
    long_chunks = sorted(payloads(index, rfc_message_ids=("long@x",)), key=lambda p: p.chunk_no)
    assert len(long_chunks) >= 5 and all(len(p.text) <= 400 for p in long_chunks)
    assert [p.chunk_no for p in long_chunks] == list(range(len(long_chunks)))
    assert all(p.text.endswith(".") for p in long_chunks)  # cut at sentence ends
    assert long_chunks[0].source_text == long_body and all(p.source_text is None for p in long_chunks[1:])
    assert sum(embedder.calls) == report.chunks  # every text distinct here
    assert max(embedder.calls) <= 64 and len(embedder.calls) <= report.chunks // 64 + 3  # not one call per message


def test_threads_from_references(index, embedder):
    ing = Ingester(index, embedder)
    root = mail(msgid="root@x", subject="Golf claim", date=T0)
    reply = mail(msgid="r1@x", subject="Re: Golf claim", in_reply_to="root@x", references="<root@x>",
                 date=T0 + timedelta(hours=1))
    reply2 = mail(msgid="r2@x", subject="Re: Golf claim", in_reply_to="r1@x", references="<root@x> <r1@x>",
                  date=T0 + timedelta(hours=2))
    other = mail(msgid="other@x", subject="Lunch", date=T0)
    ing.ingest("acme", "alice", items(reply2, root, other, reply))  # order in the source must not matter
    t = thread_of(index, "root@x")
    assert t == thread_key("acme", "root@x")
    assert thread_of(index, "r1@x") == t and thread_of(index, "r2@x") == t
    assert thread_of(index, "other@x") != t


def test_threads_from_in_reply_to_only_and_across_imports(index, embedder):
    ing = Ingester(index, embedder)
    ing.ingest("acme", "alice", items(mail(msgid="p@x", subject="Budget", date=T0)))
    ing.ingest("acme", "alice", items(mail(msgid="c@x", subject="Budget approved", in_reply_to="p@x",
                                           date=T0 + timedelta(days=1))))
    assert thread_of(index, "c@x") == thread_of(index, "p@x")
    # A reply imported before its parent still lands in the parent's thread.
    ing.ingest("acme", "alice", items(mail(msgid="late-child@x", subject="Re: Plan", in_reply_to="late-root@x",
                                           references="<late-root@x>", date=T0 + timedelta(days=2))))
    ing.ingest("acme", "alice", items(mail(msgid="late-root@x", subject="Plan", date=T0)))
    assert thread_of(index, "late-child@x") == thread_of(index, "late-root@x")


def test_threads_by_subject_fallback(index, embedder):
    ing = Ingester(index, embedder)
    ing.ingest("acme", "alice", items(mail(msgid="s1@x", subject="Lunch plans Friday", date=T0)))
    ing.ingest("acme", "alice", items(
        mail(msgid="s2@x", subject="RE: AW:  lunch plans   friday", date=T0 + timedelta(hours=1)),
        mail(msgid="s3@x", subject="Lunch plans Friday", date=T0 + timedelta(hours=2)),  # no prefix: new thread
    ))
    assert thread_of(index, "s2@x") == thread_of(index, "s1@x")
    assert thread_of(index, "s3@x") != thread_of(index, "s1@x")
    # A later reply that references the fallback-threaded message follows it.
    ing.ingest("acme", "alice", items(mail(msgid="s4@x", subject="Re: Lunch", in_reply_to="s2@x",
                                           date=T0 + timedelta(hours=3))))
    assert thread_of(index, "s4@x") == thread_of(index, "s1@x")
    # Subject fallback never crosses tenants.
    ing.ingest("globex", "carol", items(mail(msgid="g1@x", subject="Re: Lunch plans Friday")))
    assert thread_of(index, "g1@x", "globex", ("carol",)) == thread_key("globex", "g1@x")


def test_a_re_subject_from_another_organisation_joins_no_thread(index, embedder):
    ing = Ingester(index, embedder)
    ing.ingest("acme", "alice", items(mail(msgid="o1@x", subject="Invoice INV-2024-0201", date=T0,
                                           sender="Bob <bob@acme.example>", to="vendor@fabrikam.example")))
    ing.ingest("acme", "alice", items(
        # A stranger's forged reply, with no References: a thread of its own.
        mail(msgid="o2@x", subject="Re: Invoice INV-2024-0201", date=T0 + timedelta(hours=1),
             sender="Billing <billing@fabrikam-payments.example>", to="bob@acme.example"),
        # The vendor the invoice went to replies without References: it joins.
        mail(msgid="o3@x", subject="Re: Invoice INV-2024-0201", date=T0 + timedelta(hours=2),
             sender="Vendor <vendor@fabrikam.example>", to="bob@acme.example"),
    ))
    assert thread_of(index, "o2@x") == thread_key("acme", "o2@x")
    assert thread_of(index, "o3@x") == thread_of(index, "o1@x")


def test_identical_texts_are_embedded_once_and_quotes_are_not_embedded(index, embedder):
    pdf = make_pdf(["Repair estimate 24-1187", "Total EUR 2,340.50"])
    first = mail(msgid="e1@x", subject="Estimate", body="Estimate attached.")
    first.add_attachment(pdf, maintype="application", subtype="pdf", filename="estimate.pdf")
    second = mail(msgid="e2@x", subject="Estimate", body="Estimate attached.")  # a resend
    second.add_attachment(pdf, maintype="application", subtype="pdf", filename="estimate.pdf")
    reply = mail(msgid="e3@x", subject="Re: Estimate", in_reply_to="e1@x",
                 body="Looks fine.\n\nOn Mon, 18 Mar 2024 at 09:00, Dana wrote:\n> Estimate attached.")
    seen: list[str] = []
    original = embedder.embed
    embedder.embed = lambda texts: (seen.extend(texts), original(texts))[1]
    report = Ingester(index, embedder).ingest("acme", "alice", items(first, second, reply))
    assert report.chunks == 5 and len(seen) == 3
    assert "Re: Estimate\n\nLooks fine." in seen  # the quote is stored, not embedded
    (stored,) = payloads(index, rfc_message_ids=("e3@x",))
    assert "> Estimate attached." in stored.text


def test_the_senders_authentication_by_the_trusted_mta_is_stored_with_the_message(index, embedder):
    mta = "mx.acme.example"
    signed = mail(msgid="auth-1@northwind.example", sender="Sabine <sabine@northwind.example>",
                  headers={"Authentication-Results": f"{mta}; dkim=pass header.d=northwind.example"})
    forged = mail(msgid="auth-2@northwind.example", sender="Sabine <sabine@northwind.example>",
                  headers={"Authentication-Results": f"{mta}; dmarc=fail header.from=northwind.example"})
    Ingester(index, embedder, trusted_authserv=[mta]).ingest("acme", "alice", items(signed, forged))
    by_id = {p.rfc_message_id: p.sender_auth for p in payloads(index)}
    assert (by_id["auth-1@northwind.example"], by_id["auth-2@northwind.example"]) == ("pass", "fail")
