"""parse_message: headers, charsets, HTML, attachments, forwards, quarantine, bad input."""

from __future__ import annotations

import base64
from datetime import UTC, datetime, timedelta

import pytest

from pmsearch.services.searcher.errors import IngestError, MalformedMessage
from pmsearch.services.searcher.ingest.limits import IngestLimits
from pmsearch.services.searcher.ingest.parser import parse_message
from pmsearch.services.searcher.ingest.schemas import message_key, normalize_subject, thread_key

from .mails import mail, make_pdf, raw


def test_headers_are_decoded_and_normalised():
    msg = mail(subject="Re: AW: Grüße aus München", msgid="abc.123@acme.example",
               sender='"Müller, Jürgen" <Juergen.Mueller@Acme.example>',
               to="Bob Keller <BOB@acme.example>, carol@globex.example", cc="Dana <dana@acme.example>",
               in_reply_to="root@acme.example", references="<root@acme.example> <mid@acme.example>")
    data = raw(msg)
    assert b"=?utf-8?" in data  # the subject really went over the wire RFC 2047-encoded
    m = parse_message(data, folder="Archive")
    assert m.rfc_message_id == "abc.123@acme.example"
    assert m.in_reply_to == "root@acme.example"
    assert m.references == ["root@acme.example", "mid@acme.example"]
    assert m.subject == "Re: AW: Grüße aus München"
    assert m.normalized_subject == "grüße aus münchen".casefold()
    assert (m.sender.name, m.sender.email) == ("Müller, Jürgen", "juergen.mueller@acme.example")
    assert [a.email for a in m.to] == ["bob@acme.example", "carol@globex.example"]
    assert m.to[0].display == "Bob Keller <bob@acme.example>"
    assert [a.email for a in m.cc] == ["dana@acme.example"]
    assert m.date is not None and m.date.tzinfo is not None
    assert m.folder == "Archive" and not m.quarantined


@pytest.mark.parametrize(
    "subject, expected",
    [("Re: Fwd:  Hello   World ", "hello world"), ("AW: WG: Angebot", "angebot"),
     ("RE[2]: re: Budget", "budget"), ("Fw: TR: Note", "note"), ("Quarterly review", "quarterly review")],
)
def test_normalized_subject(subject, expected):
    assert normalize_subject(subject) == expected


def test_missing_message_id_gets_a_stable_synthetic_id():
    data = raw(mail(msgid=None))
    a, b = parse_message(data), parse_message(data)
    assert a.rfc_message_id == b.rfc_message_id and a.rfc_message_id.startswith("sha256-")
    assert parse_message(raw(mail(msgid=None, body="other"))).rfc_message_id != a.rfc_message_id


def test_dates_without_zone_or_broken():
    base = b"From: a@x.example\nSubject: s\nMessage-ID: <d@x>\n"
    naive = parse_message(base + b"Date: Tue, 12 Mar 2024 10:00:00 -0000\n\nhi\n")
    assert naive.date is not None and naive.date.tzinfo == UTC
    assert parse_message(base + b"Date: not a date at all\n\nhi\n").date is None
    assert parse_message(base + b"\nhi\n").date is None


def test_a_date_far_in_the_future_is_taken_as_the_time_of_import_and_noted():
    before = datetime.now(UTC)
    forged = parse_message(raw(mail(date=datetime(2029, 1, 1, tzinfo=UTC))))
    assert forged.date is not None and before <= forged.date <= datetime.now(UTC)
    assert forged.notes == ["date 2029-01-01T00:00:00+00:00 is in the future: taken as the time of import"]
    # A clock a few hours ahead is within the skew allowed.
    ahead = datetime.now(UTC) + timedelta(hours=3)
    assert parse_message(raw(mail(date=ahead))).date == ahead.replace(microsecond=0)
    strict = parse_message(raw(mail(date=ahead)), limits=IngestLimits(max_date_skew_seconds=60))
    assert strict.date is not None and strict.date < ahead.replace(microsecond=0)


def test_ids_and_keys():
    assert message_key("acme", "a@b", "d1") == message_key("acme", "a@b", "d1")
    assert message_key("acme", "a@b", "d1") != message_key("globex", "a@b", "d1")
    assert message_key("acme", "a@b", "d1") != message_key("acme", "a@b", "d2")
    key = message_key("acme", "a@b", "d1")
    assert key[0] == "m" and len(key) == 13 and int(key[1:], 16) >= 0
    assert thread_key("acme", "a@b")[0] == "t" and len(thread_key("acme", "a@b")) == 13


_HEAD = b"From: Jurgen <j@x.example>\nTo: b@x.example\nSubject: s\nMessage-ID: <c@x>\nMIME-Version: 1.0\n"


@pytest.mark.parametrize(
    "charset, cte, text",
    [
        ("iso-8859-1", "8bit", "Grüße aus München, Änderung der Lieferadresse."),
        ("windows-1252", "quoted-printable", "Réunion déplacée – coût estimé 1 200 € « urgent »"),
        ("iso-8859-1", "quoted-printable", "Très bien, à jeudi. Ça marche."),
        ("koi8-r", "base64", "Счёт за март оплачен, спасибо."),
        ("shift_jis", "base64", "会議は木曜日に変更されました。"),
        ("utf-8", "8bit", "Zürich → Genève, naïve café"),
    ],
)
def test_charsets_and_transfer_encodings(charset, cte, text):
    encoded = text.encode(charset)
    if cte == "base64":
        payload = base64.encodebytes(encoded)
    elif cte == "quoted-printable":
        import quopri

        payload = quopri.encodestring(encoded)
    else:
        payload = encoded + b"\n"
    data = _HEAD + f"Content-Type: text/plain; charset={charset}\nContent-Transfer-Encoding: {cte}\n\n".encode() + payload
    assert parse_message(data).body_text == text


def test_iso_8859_1_label_with_windows_1252_bytes_and_broken_utf8():
    data = _HEAD + b"Content-Type: text/plain; charset=iso-8859-1\n\nPrice \x80 12 \x93quoted\x94\n"
    assert parse_message(data).body_text == "Price € 12 “quoted”"
    bad = _HEAD + b"Content-Type: text/plain; charset=utf-8\n\nok \xff\xfe still\n"
    assert parse_message(bad).body_text == "ok \ufffd\ufffd still"
    unlabelled = _HEAD + b"\nGr\xfc\xdfe\n"  # 8-bit bytes, no charset at all
    assert parse_message(unlabelled).body_text == "Grüße"


def test_raw_8bit_header_is_decoded():
    data = b"From: J\xfcrgen <j@x.example>\nSubject: Gr\xc3\xbc\xc3\x9fe\nMessage-ID: <h@x>\n\nbody\n"
    m = parse_message(data)
    assert m.subject == "Grüße" and m.sender.name == "Jürgen"


HTML = """<html><head><title>Newsletter</title><style>p {color: red}</style>
<script>alert('x')</script></head><body>
<h1>Your invoice is ready</h1><p>Invoice <b>HC-2291</b> for &euro;49.00 is due on 1&nbsp;April.</p>
<p><a href="https://billing.hooli.example/invoices/HC-2291">View invoice</a></p>
<table><tr><th>Item</th><th>Amount</th></tr><tr><td>Storage</td><td>49.00</td></tr></table>
<ul><li>First</li><li>Second</li></ul></body></html>"""


def test_html_only_mail_becomes_readable_text():
    m = parse_message(raw(mail(body=None, html=HTML)))
    text = m.body_text
    assert "<" not in text and ">" not in text and "alert" not in text and "color" not in text
    assert "Your invoice is ready" in text
    assert "Invoice HC-2291 for €49.00 is due on 1 April." in text
    assert "View invoice (https://billing.hooli.example/invoices/HC-2291)" in text
    assert "Storage | 49.00" in text and "- First\n- Second" in text


def test_alternative_prefers_plain_text():
    m = parse_message(raw(mail(body="Plain version.", html="<p>HTML version.</p>")))
    assert m.body_text == "Plain version."
    assert m.attachments == []


def test_each_page_of_a_longer_pdf_opens_with_its_number():
    msg = mail(body="The contract is attached.")
    msg.add_attachment(make_pdf(["Supply contract 2027", "Delivery within 10 days."], ["Penalty: EUR 400 a day."]),
                       maintype="application", subtype="pdf", filename="contract.pdf")
    msg.add_attachment(make_pdf(["Invoice INV-2024-0173"]), maintype="application", subtype="pdf", filename="one.pdf")
    contract, one = parse_message(raw(msg)).attachments
    assert [line for line in contract.text.splitlines() if line.startswith("Page ")] == ["Page 1 of 2", "Page 2 of 2"]
    assert contract.text.index("Page 2 of 2") < contract.text.index("Penalty")
    assert one.text == "Invoice INV-2024-0173"


def test_a_pdf_of_pages_without_text_has_no_text():
    msg = mail(body="Scanned.")
    msg.add_attachment(make_pdf([], []), maintype="application", subtype="pdf", filename="scan.pdf")
    (scan,) = parse_message(raw(msg)).attachments
    assert scan.text is None


def test_attachments_text_html_pdf_and_binary():
    msg = mail(body="Please find the files attached.")
    msg.add_attachment("Agenda:\n1. Budget\n2. Hiring", filename="notes.txt")
    msg.add_attachment("<html><body><p>Q1 <b>revenue</b> up 4%</p></body></html>", subtype="html",
                       filename="report.html")
    msg.add_attachment(make_pdf(["Initech Office Supplies", "Invoice INV-2024-0173", "Total EUR 4,870.00"]),
                       maintype="application", subtype="pdf", filename="INV-2024-0173.pdf")
    msg.add_attachment(b"\xff\xd8\xff\xe0 not really a jpeg", maintype="image", subtype="jpeg", filename="photo.jpg")
    msg.add_attachment(b"%PDF-1.7\nthis pdf is truncated", maintype="application", subtype="pdf", filename="broken.pdf")
    msg.add_attachment(make_pdf(["Octet labelled PDF"]), maintype="application", subtype="octet-stream",
                       filename="scan.pdf")
    m = parse_message(raw(msg))
    assert m.body_text == "Please find the files attached."
    by_name = {a.filename: a for a in m.attachments}
    assert list(by_name) == ["notes.txt", "report.html", "INV-2024-0173.pdf", "photo.jpg", "broken.pdf", "scan.pdf"]
    assert by_name["notes.txt"].text == "Agenda:\n1. Budget\n2. Hiring"
    assert by_name["report.html"].text == "Q1 revenue up 4%" and by_name["report.html"].content_type == "text/html"
    pdf = by_name["INV-2024-0173.pdf"]
    assert pdf.content_type == "application/pdf" and pdf.size > 100
    assert "INV-2024-0173" in pdf.text and "4,870.00" in pdf.text
    assert by_name["photo.jpg"].text is None and by_name["photo.jpg"].size == 22
    assert by_name["broken.pdf"].text is None
    assert "Octet labelled PDF" in by_name["scan.pdf"].text


def test_attachment_without_filename_gets_a_name():
    msg = mail(body="see attached")
    msg.add_attachment(b"\x00\x01", maintype="application", subtype="zip")
    del msg.get_payload()[1]["Content-Disposition"]
    msg.get_payload()[1]["Content-Disposition"] = "attachment"
    (att,) = parse_message(raw(msg)).attachments
    assert att.filename == "attachment-1.zip" and att.text is None


def test_forwarded_message_text_is_in_the_body():
    original = mail(body="The insurer accepted claim CLM-2024-55817: EUR 2,115.50.",
                    subject="Decision on your claim", sender="Northwind Claims <claims@northwind.example>",
                    msgid="orig@northwind.example")
    original.add_attachment("decision letter text", filename="decision.txt")
    fwd = mail(body="FYI, see below.", subject="Fwd: Decision on your claim", msgid="fwd@acme.example")
    fwd.add_attachment(original)
    m = parse_message(raw(fwd))
    assert m.body_text.startswith("FYI, see below.")
    assert "---------- Forwarded message ----------" in m.body_text
    assert "From: Northwind Claims <claims@northwind.example>" in m.body_text
    assert "Subject: Decision on your claim" in m.body_text
    assert "accepted claim CLM-2024-55817: EUR 2,115.50." in m.body_text
    assert [a.filename for a in m.attachments] == ["decision.txt"]
    assert m.normalized_subject == "decision on your claim"


@pytest.mark.parametrize("folder", ["Quarantine", "junk", "SPAM", "INBOX/Junk", "INBOX.Spam"])
def test_quarantine_by_folder(folder):
    assert parse_message(raw(mail()), folder=folder).quarantined


@pytest.mark.parametrize("header", [{"X-Spam-Flag": "YES"}, {"X-Quarantine": "yes"}])
def test_quarantine_by_header(header):
    assert parse_message(raw(mail(headers=header))).quarantined


def test_not_quarantined():
    assert not parse_message(raw(mail(headers={"X-Spam-Flag": "NO"})), folder="Junkyard").quarantined


def test_mbox_from_line_is_ignored():
    m = parse_message(b"From alice@acme.example Tue Mar 12 10:00:00 2024\n" + raw(mail()))
    assert m.rfc_message_id == "m1@test.example"


@pytest.mark.parametrize(
    "data, reason",
    [
        (b"", "empty"),
        (b"  \r\n\n ", "empty"),
        (bytes(range(256)) * 8, "binary"),
        (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", "binary"),
        (b"just some words, not a message\nat all\n", "header"),
        (b"Note: buy milk\nTodo: call mum\n\nbody\n", "no mail headers"),
    ],
)
def test_malformed_input_raises(data, reason):
    with pytest.raises(MalformedMessage, match=reason) as info:
        parse_message(data)
    assert isinstance(info.value, IngestError)


def test_inline_named_text_part_is_an_attachment():
    data = (_HEAD + b'Content-Type: multipart/mixed; boundary="b"\n\n--b\nContent-Type: text/plain\n\nSee the list.\n'
            b'--b\nContent-Type: text/plain; name="list.txt"\nContent-Disposition: inline; filename="list.txt"\n\n'
            b"milk\neggs\n--b--\n")
    m = parse_message(data)
    assert m.body_text == "See the list."
    assert [(a.filename, a.text) for a in m.attachments] == [("list.txt", "milk\neggs")]
