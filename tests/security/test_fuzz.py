"""Fuzz targets for the two places hostile text is parsed by code: the MIME parser
(raw mail from anyone) and the verifier (drafts a steered model wrote, evidence an
attacker's mail supplied).

The parser may refuse input only with an :class:`IngestError`; what it returns must
survive JSON (the parsing sandbox and Redis carry it so). The verifier must never raise,
and what it keeps must cite only the run's evidence with excerpts copied from it.

CI runs a fixed sample of ``DEFAULT_EXAMPLES`` inputs per target. ``FUZZ_EXAMPLES=N``
runs a fresh random sample of N per target instead, e.g. for a long run by hand::

    FUZZ_EXAMPLES=20000 nice .venv/bin/python -m pytest -p no:cacheprovider \\
        tests/security/test_fuzz.py --hypothesis-show-statistics
"""

from __future__ import annotations

import base64
import json
import os
import quopri
import string
from datetime import UTC, datetime
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pmsearch.services.searcher.errors import IngestError
from pmsearch.services.searcher.ingest.limits import IngestLimits
from pmsearch.services.searcher.ingest.parser import parse_message
from pmsearch.services.verifier.decide import decide
from pmsearch.services.verifier.service import verify
from pmsearch.shared.messages import (
    Draft,
    DraftSentence,
    EvidenceAttachment,
    EvidenceMessage,
    Hit,
    VerificationRequested,
)

DEFAULT_EXAMPLES = 300
# A test knob, not a service setting: it sizes this file's sample and nothing else.
_RAW_EXAMPLES = os.environ.get("FUZZ_EXAMPLES", "")
if _RAW_EXAMPLES and not (_RAW_EXAMPLES.isdigit() and int(_RAW_EXAMPLES) > 0):
    raise pytest.UsageError(f"FUZZ_EXAMPLES must be a positive integer, not {_RAW_EXAMPLES!r}")
EXAMPLES = int(_RAW_EXAMPLES or DEFAULT_EXAMPLES)

FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    database=None,  # no .hypothesis folder in the work tree
    derandomize=not _RAW_EXAMPLES,  # CI: the same sample every run
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.large_base_example],
)
# Short extraction limits: a hostile PDF costs the fuzz run seconds, not the default's.
LIMITS = IngestLimits(extract_timeout_seconds=2.0, parse_timeout_seconds=5.0)

ROOT = Path(__file__).resolve().parents[2]


# ------------------------------------------------------------------ MIME parser


def _pdf() -> bytes:
    from tests.services.searcher.ingest.mails import make_pdf

    return make_pdf(["Invoice INV-2024-0173", "Amount due 4,200 EUR"])


PDF = _pdf()
# Real mail to mutate: the demo mailboxes, and a message with a real PDF.
SEEDS = [p.read_bytes() for p in sorted((ROOT / "data" / "demo").rglob("*.eml"))] + [
    b"From: a@b.example\r\nSubject: pdf\r\nMIME-Version: 1.0\r\n"
    b'Content-Type: multipart/mixed; boundary="XX"\r\n\r\n--XX\r\nContent-Type: text/plain\r\n\r\nsee attached\r\n'
    b'--XX\r\nContent-Type: application/pdf; name="i.pdf"\r\nContent-Transfer-Encoding: base64\r\n\r\n'
    + base64.encodebytes(PDF)
    + b"\r\n--XX--\r\n"
]

CTYPES = [
    "text/plain", "text/html", "text/csv", "text/calendar", "application/pdf", "application/octet-stream",
    "image/png", "message/rfc822", "message/global", "message/delivery-status", "multipart/mixed",
    "multipart/alternative", "multipart/related", "multipart/digest", "multipart/signed", "text", "/", "x/y/z", "",
]
# Labels the fuzz run found crashing the parser (a NUL; codecs that are not text
# encodings, refuse errors="replace", or decode to lone surrogates), and ordinary ones.
HOSTILE_CHARSETS = ["\x00utf-8", "base64", "zlib", "rot13", "undefined", "idna", "punycode", "utf-7",
                    "unicode_escape", "raw_unicode_escape"]
CHARSETS = ["utf-8", "us-ascii", "iso-8859-1", "windows-1252", "utf-16", "utf-16-le", "utf-32", "koi8-r",
            "gb2312", "shift_jis", "iso-2022-jp", "x-unknown", "", "utf-8'en'", "\"utf-8", "unicode-1-1-utf-7",
            *HOSTILE_CHARSETS]
ENCODINGS = ["7bit", "8bit", "binary", "base64", "quoted-printable", "x-uuencode", "uuencode", "bogus", ""]
HEADER_NAMES = ["From", "To", "Cc", "Subject", "Date", "Message-ID", "In-Reply-To", "References", "Sender",
                "Reply-To", "X-Spam-Flag", "X-Quarantine", "MIME-Version", "Received", "X-Other", "Content-Type"]
HTML_BITS = ["<p>", "</p>", "<br>", "<script>alert(1)</script>", "<style>p{}</style>", "&lt;img onerror=x&gt;",
             "&amp;", "&#0;", "&#x110000;", "&#99999999;", "&nbsp;", "<!--", "-->", "<![CDATA[", "<table><tr><td>",
             "<div " * 3, "<a href='javascript:x'>", "</", "<", ">", "&", "<html><body>", "<?xml?>", "\x00"]


def _text(max_size: int = 40) -> st.SearchStrategy[str]:
    return st.text(st.characters(codec="utf-8"), max_size=max_size)


@st.composite
def header_values(draw) -> str:
    kind = draw(st.integers(0, 6))
    if kind == 0:
        return draw(_text())
    if kind == 1:  # an RFC 2047 encoded word, well formed or not
        cs, enc = draw(st.sampled_from(CHARSETS)), draw(st.sampled_from(["B", "Q", "b", "q", "X", ""]))
        payload = draw(st.text(string.ascii_letters + string.digits + "=+/_?", max_size=30))
        return f"=?{cs}?{enc}?{payload}?="
    if kind == 2:  # addresses
        names = draw(st.lists(st.tuples(_text(12), st.text(string.printable, max_size=20)), max_size=4))
        return ", ".join(f'"{n}" <{a}>' if n else a for n, a in names)
    if kind == 3:  # dates, valid or not
        return draw(st.sampled_from([
            "Mon, 04 Mar 2024 10:00:00 +0000", "Mon, 04 Mar 2024 10:00:00 -0000", "Feb 30 2024", "0", "Mon, 99 Foo 99999 99:99:99 +9999",
            "Tue, 1 Jan 0001 00:00:00 +2400", "Sun, 31 Dec 9999 23:59:60 -1200", "",
        ]))
    if kind == 4:  # message ids
        ids = ["<a@b>", "<>", "<<x@y>>", "a@b", "<\x00@x>", "<é@ü>", "<" + "a" * 300 + "@x>"]
        return " ".join(draw(st.lists(st.sampled_from(ids), max_size=4)))
    if kind == 5:  # a folded or very long line
        return draw(_text(20)) + "\r\n\t" + draw(_text(20)) + "x" * draw(st.sampled_from([0, 1000, 20000]))
    return draw(st.text(st.characters(min_codepoint=0, max_codepoint=0x7F), max_size=40))


def _payload(draw, ctype: str, encoding: str) -> bytes:
    kind = 3 if ctype == "application/pdf" and draw(st.booleans()) else draw(st.integers(0, 3))
    if kind == 0:
        data = draw(st.binary(max_size=300))
    elif kind == 1:
        tricky = st.sampled_from(["+2AA-", "\\ud800", "\\N{", "xn--", "=?"])
        data = "".join(draw(st.lists(st.one_of(_text(20), tricky), max_size=10))).encode()
    elif kind == 2:
        data = "".join(draw(st.lists(st.one_of(st.sampled_from(HTML_BITS), _text(10)), max_size=30))).encode()
    else:
        data = b"%PDF-1.4\n" + draw(st.binary(max_size=200)) if ctype != "application/pdf" else _mutate_pdf(draw)
    if encoding == "base64" and draw(st.booleans()):
        data = base64.encodebytes(data)
    elif encoding == "quoted-printable" and draw(st.booleans()):
        data = quopri.encodestring(data)
    return data


def _mutate_pdf(draw) -> bytes:
    raw = bytearray(PDF)
    for _ in range(draw(st.integers(0, 4))):
        i = draw(st.integers(0, len(raw) - 1))
        raw[i : i + draw(st.integers(0, 8))] = draw(st.binary(max_size=8))
    return bytes(raw)


@st.composite
def mime_parts(draw, depth: int = 0) -> bytes:
    ctype = draw(st.sampled_from(CTYPES))
    cs = draw(st.sampled_from(CHARSETS))
    enc = draw(st.sampled_from(ENCODINGS))
    boundary = draw(st.sampled_from(["b1", "b2", "", "=_weird\"", "x" * 80])) + str(depth)
    lines = [f'Content-Type: {ctype}; charset="{cs}"; boundary="{boundary}"'.encode()]
    if enc:
        lines.append(f"Content-Transfer-Encoding: {enc}".encode())
    if draw(st.booleans()):
        name = draw(st.sampled_from(["a.pdf", "a.txt", "b.html", "", "x" * 300, "%E9t%C3.pdf", "a\x00.pdf"]))
        disp = draw(st.sampled_from(["attachment", "inline", "bogus", ""]))
        style = draw(
            st.sampled_from([f'; filename="{name}"', f"; filename*=utf-8''{name}", f"; filename*0*=x'y'{name}; filename*1={name}"])
        )
        lines.append(f"Content-Disposition: {disp}{style}".encode("utf-8", "surrogatepass"))
    head = b"\r\n".join(lines)
    if ctype.startswith("multipart/") and depth < 3:
        children = draw(st.lists(mime_parts(depth + 1), max_size=4))
        closing = draw(st.sampled_from([b"--\r\n", b"\r\n", b""]))
        body = b"".join(b"--" + boundary.encode() + b"\r\n" + c + b"\r\n" for c in children) + b"--" + boundary.encode() + closing
    elif ctype.startswith("message/") and depth < 3:
        body = draw(messages(depth + 1))
    else:
        body = _payload(draw, ctype, enc)
    return head + b"\r\n\r\n" + body


@st.composite
def messages(draw, depth: int = 0) -> bytes:
    headers = draw(st.lists(st.tuples(st.sampled_from(HEADER_NAMES), header_values()), min_size=1, max_size=8))
    head = b"".join(f"{k}: {v}\r\n".encode("utf-8", "surrogatepass") for k, v in headers)
    if draw(st.booleans()):
        head += b"MIME-Version: 1.0\r\n"
    sep = draw(st.sampled_from([b"\r\n", b"\n"]))
    return head.replace(b"\r\n", sep) + draw(mime_parts(depth)).replace(b"\r\n", sep)


def _bytes(n: int) -> st.SearchStrategy[bytes]:
    """``n`` bytes, mostly printable (arbitrary ones mostly hit the binary-data refusal)."""
    printable = st.text(string.printable, min_size=n, max_size=n).map(str.encode)
    return st.one_of(printable, printable, st.binary(min_size=n, max_size=n))


@st.composite
def mutated_seeds(draw) -> bytes:
    raw = bytearray(draw(st.sampled_from(SEEDS)))
    for _ in range(draw(st.integers(1, 8))):
        op = draw(st.integers(0, 3))
        i = draw(st.integers(0, len(raw)))
        n = draw(st.integers(0, 64))
        if op == 0:  # overwrite
            raw[i : i + n] = draw(_bytes(n))
        elif op == 1:  # insert
            tokens = [b"\r\n\r\n", b"--", b"=?", b"?=", b"\x00", b"=\r\n", b"<", b"&#"]
            raw[i:i] = draw(st.one_of(_bytes(draw(st.integers(0, 64))), st.sampled_from(tokens)))
        elif op == 2:  # delete
            del raw[i : i + n]
        else:  # duplicate a span (repeated boundaries, headers, parts)
            raw[i:i] = raw[i : i + n] * draw(st.integers(1, 20))
    return bytes(raw)


def check_parser(raw: bytes) -> None:
    try:
        parsed = parse_message(raw, limits=LIMITS)
    except IngestError:
        return  # a clean refusal
    # Everything downstream (the sandbox's reply, Redis, the index) carries it as JSON.
    json.loads(parsed.model_dump_json())


@pytest.mark.parametrize("charset", HOSTILE_CHARSETS)
def test_a_hostile_charset_label_falls_back_instead_of_crashing(charset):
    # In a part's header, past the message header's binary-data check.
    raw = (
        'From: a@b.example\r\nSubject: x\r\nContent-Type: multipart/mixed; boundary="B"\r\n\r\n--B\r\n'
        f'Content-Type: text/plain; charset="{charset}"\r\n\r\ncaf\u00e9 +2AA- \\ud800 xn--abc-\r\n--B--\r\n'
    ).encode()
    parsed = parse_message(raw, limits=LIMITS)
    assert "caf" in parsed.body_text
    json.loads(parsed.model_dump_json())


@FUZZ
@given(mutated_seeds())
def test_fuzz_parser_on_mutated_real_mail(raw):
    check_parser(raw)


@FUZZ
@given(messages())
def test_fuzz_parser_on_generated_mime(raw):
    check_parser(raw)


@FUZZ
@given(st.one_of(st.binary(max_size=2000), st.text(max_size=500).map(lambda t: t.encode("utf-8", "surrogatepass"))))
def test_fuzz_parser_on_arbitrary_bytes(raw):
    check_parser(raw)


# ------------------------------------------------------------------ verifier

TENANT = "t-fuzz"
FIGURES = ["€1,200.50", "EUR 2,115.50", "5 December 2025", "10:30 a.m.", "94.1%", "INV-2024-0173", "CLM-2024-55817",
           "claims@insurer.example", "https://insurer.example/claims/42", "3", "1.000,00 €", "2024-04-03",
           "12/31/2024", "$", "1e309", "½", "٣", "0x1F", "10:00", "-5", "+49 89 1234", "1,2,3",
           "99999999999999999999999", "3rd", "Q1", "24:61", "31 February 2024", "0.0.0.0", "1/0"]
MARKS = list('"“”„‟«»「」『』‘’\'＂〝〞') + [".", ",", ";", ":", "!", "?", "…", "(", ")", "[", "]", "—", "-", "/",
                                          "\n", " ", "\t", "\u00ad", "\u00a0", "\u200b", "\u202e", "\x00", "\ufeff", "̈"]
WORDS = ["the", "claim", "is", "accepted", "insurer", "paid", "photos", "Golf", "not", "invoice", "Anna", "保险",
         "ﬁnal", "Straße", "İstanbul", "ǅ", "𝐛𝐨𝐥𝐝", "don't", "co-operate", "e-mail", "naïve", "café"]


def _message_id(i: int) -> str:
    return f"m{i:012x}"


@st.composite
def evidence_sets(draw) -> dict[str, EvidenceMessage]:
    out: dict[str, EvidenceMessage] = {}
    for i in range(draw(st.integers(0, 4))):
        body = draw(st.lists(st.one_of(st.sampled_from(WORDS + FIGURES + MARKS), _text(12)), max_size=60))
        attachments = draw(st.lists(st.tuples(_text(10), st.lists(st.sampled_from(WORDS + FIGURES + MARKS), max_size=30)), max_size=2))
        mid = _message_id(i)
        out[mid] = EvidenceMessage(
            message_id=mid, tenant_id=TENANT, thread_id="t", mailbox="box",
            sender=draw(st.sampled_from(["", "anna@insurer.example", "Anna <a@b>"])),
            date=draw(st.sampled_from([None, datetime(2025, 11, 29, 10, 30, tzinfo=UTC), datetime(1, 1, 1), datetime(9999, 12, 31)])),
            subject=draw(_text(20)), body=" ".join(body),
            attachments=[EvidenceAttachment(name=n, text=" ".join(t)) for n, t in attachments],
        )
    return out


def _citation(draw, ids: list[str]) -> str:
    return draw(st.sampled_from(ids + ["m000000000999", "M000000000000", "[", "", "x" * 200, "<a@b>", "m12", "1"]))


@st.composite
def sentence_texts(draw, ids: list[str]) -> str:
    def marker() -> str:
        return "[" + draw(st.sampled_from([", ", ";", "]["])).join(_citation(draw, ids) for _ in range(draw(st.integers(1, 3)))) + "]"

    tokens = draw(st.lists(st.sampled_from(["word", "figure", "mark", "marker", "text"]), max_size=40))
    parts = []
    for kind in tokens:
        if kind == "word":
            parts.append(draw(st.sampled_from(WORDS)))
        elif kind == "figure":
            parts.append(draw(st.sampled_from(FIGURES)))
        elif kind == "mark":
            parts.append(draw(st.sampled_from(MARKS)))
        elif kind == "marker":
            parts.append(marker())
        else:
            parts.append(draw(_text(15)))
    return draw(st.sampled_from([" ", "", "\n"])).join(parts)


@st.composite
def drafts(draw, ids: list[str]) -> Draft:
    if draw(st.booleans()):
        return Draft(text=" ".join(draw(st.lists(sentence_texts(ids), max_size=6))))
    sentences = [
        DraftSentence(text=draw(sentence_texts(ids)), citations=[_citation(draw, ids) for _ in range(draw(st.integers(0, 3)))])
        for _ in range(draw(st.integers(0, 6)))
    ]
    return Draft(sentences=sentences)


@st.composite
def verifier_cases(draw) -> tuple[Draft, dict[str, EvidenceMessage], str]:
    evidence = draw(evidence_sets())
    question = draw(st.one_of(sentence_texts(list(evidence)), _text(60)))
    return draw(drafts(list(evidence))), evidence, question


def check_verdict(verdict, evidence: dict[str, EvidenceMessage]) -> None:
    """Kept sentences cite only the evidence, each excerpt a verbatim slice of a part."""
    for sentence in verdict.kept:
        assert sentence.citations
        for citation in sentence.citations:
            msg = evidence[citation.message_id]
            parts = [("body", msg.body), *((f"attachment:{a.name}", a.text) for a in msg.attachments), ("subject", msg.subject)]
            ex = citation.excerpt
            assert any(name == ex.part and text[ex.start : ex.end] == ex.text for name, text in parts), ex


@FUZZ
@given(verifier_cases())
def test_fuzz_verify_on_random_drafts_and_evidence(case):
    draft, evidence, question = case
    check_verdict(verify(draft, evidence, question=question), evidence)


@FUZZ
@given(verifier_cases(), st.sampled_from(["answer", "insufficient_evidence", "budget_exhausted", "degraded"]), st.data())
def test_fuzz_decide_on_random_endings(case, ending, data):
    draft, evidence, question = case
    ids = list(evidence) + ["m000000000999"]
    hits = [
        Hit(
            message_id=data.draw(st.sampled_from(ids)), thread_id="t", mailbox="box", sender="", date=None, subject="",
            snippet="", score=0.0,
        )
        for _ in range(data.draw(st.integers(0, 3)))
    ]
    request = VerificationRequested(
        run_id="run-fuzz", tenant_id=TENANT, scope_token="scope", deadline=4e9, question=question, ending=ending,
        draft=data.draw(st.sampled_from([draft, None])), hits=hits, reason=data.draw(st.one_of(st.none(), _text(30))),
    )
    result = decide(request, evidence, now=1e9)
    assert (result.outcome == "answered") == (result.answer is not None)
    for sentence in result.answer.sentences if result.answer else []:
        assert all(c.message_id in evidence for c in sentence.citations)
