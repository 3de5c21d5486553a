"""Ingest limits (issue 8, item 11): a hostile message is refused or cut with a note, it
is parsed in a subprocess bounded in time and memory, and `pmsearch ingest` sends
batches bounded in bytes.

The ingester runs against the real Qdrant Edge adapter in a temporary folder (with the
ingest tests' deterministic embedder); one test goes through the real stack (gateway,
Redis, searcher process) to show the notes reach the admin API.
"""

from __future__ import annotations

import base64
import os
import subprocess
import sys
import tomllib
import zlib
from email import policy
from email.message import EmailMessage
from importlib.metadata import version
from pathlib import Path

import pytest

from pmsearch.services.searcher.ingest.limits import IngestLimits
from pmsearch.services.searcher.ingest.readers import RawMessage, batches
from pmsearch.services.searcher.ingest.sandbox import Sandbox
from pmsearch.services.searcher.ingest.service import Ingester
from tests.services.searcher.ingest.conftest import DIM, HashEmbedder

MB = 1024 * 1024
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def index(tmp_path):
    from pmsearch.services.searcher.index.edge import EdgeIndex

    idx = EdgeIndex(tmp_path / "index", DIM)
    yield idx
    idx.close()


def ingester(index, **limits) -> Ingester:
    return Ingester(index, HashEmbedder(), chunk_chars=1000, limits=IngestLimits(**limits))


def message(body: str = "Hello.", *, msgid: str = "m1@x.example", attachments=()) -> bytes:
    msg = EmailMessage()
    msg["From"] = "Mallory <mallory@x.example>"
    msg["To"] = "alice@acme.example"
    msg["Subject"] = "Invoice"
    msg["Date"] = "Tue, 12 Mar 2024 09:30:00 +0000"
    msg["Message-ID"] = f"<{msgid}>"
    msg.set_content(body)
    for data, maintype, subtype, name in attachments:
        msg.add_attachment(data, maintype=maintype, subtype=subtype, filename=name)
    return msg.as_bytes(policy=policy.default)


def stalling_pdf(operations: int) -> bytes:
    """A valid one-page PDF whose content stream is ``operations`` text-show operators,
    compressed about 700:1. pypdf 7.1.1 extracts some 250,000 operators a second and
    grows by ~100 MB per million; at pypdf's 75 MB stream limit (a ~100 KB file) that is
    most of a minute and a gigabyte in whichever process extracts it."""
    stream = zlib.compress(b"BT /F1 12 Tf 72 712 Td " + b"(x) Tj " * operations + b"ET", 9)
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R "
        b"/Resources << /Font << /F1 5 0 R >> >> >>",
        b"<< /Length %d /Filter /FlateDecode >>\nstream\n" % len(stream) + stream + b"\nendstream",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for n, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % n + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % off for off in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref)
    return bytes(out)


def mime_bomb(parts: int) -> bytes:
    """A few MB of tiny MIME parts: the stdlib parser needs ~0.1 ms per part."""
    body = b"".join(b"--b\r\nContent-Type: text/plain\r\n\r\nx\r\n" for _ in range(parts))
    return (b"From: m@x.example\r\nSubject: parts\r\nMessage-ID: <bomb@x.example>\r\nMIME-Version: 1.0\r\n"
            b"Content-Type: multipart/mixed; boundary=b\r\n\r\n" + body + b"--b--\r\n")


# ------------------------------------------------------------------ caps


def test_a_message_over_the_size_limit_is_refused_with_its_size_and_the_rest_imported(index):
    big = message("x" * (3 * MB // 2), msgid="big@x.example")
    report = ingester(index, max_message_bytes=1 * MB).ingest(
        "acme", "alice", [(big, "INBOX", "big.eml"), (message(msgid="ok@x.example"), "INBOX", "ok.eml")]
    )
    assert (report.indexed, report.error) == (1, 1)
    assert report.errors == ["big.eml: message is 1.5 MB, over the 1.0 MB limit (PM_INGEST_MAX_MESSAGE_BYTES)"]


def test_attachments_beyond_the_cap_are_left_out_with_a_note(index):
    files = [(f"line {i}".encode(), "text", "plain", f"f{i}.txt") for i in range(55)]
    report = ingester(index).ingest("acme", "alice", [(message(attachments=files), "INBOX", "many.eml")])
    (item,) = report.items
    assert item.status == "indexed"
    assert item.notes == ["5 attachment(s) beyond the first 50 left out (PM_INGEST_MAX_ATTACHMENTS)"]
    names = {p.attachment_name for p in _payloads(index) if p.kind == "attachment"}
    assert len(names) == 50 and "f49.txt" in names and "f50.txt" not in names


def test_text_over_the_cap_is_cut_with_a_note(index):
    report = ingester(index, max_text_chars=10_000).ingest(
        "acme", "alice", [(message("word " * 20_000), "INBOX", "long.eml")]
    )
    (item,) = report.items
    assert item.notes == ["text over 10,000 characters (PM_INGEST_MAX_TEXT_CHARS): cut in body"]
    body = next(p for p in _payloads(index) if p.kind == "body" and p.chunk_no == 0)
    assert len(body.source_text) <= 10_000


def test_a_9_5_mb_message_is_indexed_as_a_bounded_number_of_chunks(index):
    # The shape that produced 9,180 chunks: a long body and many long text attachments.
    text = "The claim CLM-2024-55817 was reviewed again today. " * 20_000  # ~1 MB
    files = [(text.encode(), "text", "plain", f"log{i}.txt") for i in range(8)]
    raw = message(text, attachments=files)
    assert 9 * MB < len(raw) < 25 * MB
    report = ingester(index).ingest("acme", "alice", [(raw, "INBOX", "huge.eml")])
    (item,) = report.items
    assert item.status == "indexed"
    assert report.chunks == 200
    assert any(n.startswith("indexed the first 200 of ") for n in item.notes)
    assert any(n.startswith("text over 2,000,000 characters") for n in item.notes)


# ------------------------------------------------------------------ the parsing subprocess


def test_a_pdf_that_would_stall_the_searcher_costs_only_its_own_text(index):
    files = [(stalling_pdf(3_000_000), "application", "pdf", "invoice.pdf")]  # 31 KB
    report = ingester(index, extract_timeout_seconds=1.0).ingest(
        "acme", "alice", [(message("Please pay the attached invoice.", attachments=files), "INBOX", "pdf.eml")]
    )
    # Before: extracted in the searcher's own process, ~13 s and ~340 MB on a quiet
    # machine. The note is the proof that the parsing process was stopped at its timeout.
    (item,) = report.items
    assert item.status == "indexed"
    assert item.notes == ["invoice.pdf: no text, extraction stopped after 1 s (PM_EXTRACT_TIMEOUT_SECONDS)"]
    assert {p.kind for p in _payloads(index)} == {"body"}


def test_a_pdf_that_exhausts_the_memory_limit_costs_only_its_own_text(index):
    files = [(stalling_pdf(2_000_000), "application", "pdf", "invoice.pdf")]
    report = ingester(index, parse_memory_mb=160, extract_timeout_seconds=60).ingest(
        "acme", "alice", [(message("Invoice attached.", attachments=files), "INBOX", "pdf.eml")]
    )
    (item,) = report.items
    assert item.status == "indexed"
    assert item.notes == ["invoice.pdf: no text, extraction ran out of memory (PM_INGEST_PARSE_MEMORY_MB)"]


def test_a_message_too_slow_to_parse_is_refused_and_the_next_one_imported(index):
    report = ingester(index, parse_timeout_seconds=1.0).ingest(
        "acme", "alice", [(mime_bomb(100_000), "INBOX", "bomb.eml"), (message(), "INBOX", "ok.eml")]
    )
    assert [i.status for i in report.items] == ["error", "indexed"]
    assert report.errors == ["bomb.eml: parsing took longer than 1 s (PM_INGEST_PARSE_TIMEOUT_SECONDS)"]


def test_parsing_runs_in_a_child_process_without_the_searchers_secrets():
    box = Sandbox(IngestLimits())
    try:
        assert box.parse(message()).body_text == "Hello."
        assert box.pid is not None and box.pid != os.getpid()
        environ = Path(f"/proc/{box.pid}/environ").read_bytes().split(b"\0")
        assert os.environ.get("PM_SCOPE_KEY")  # the test session has one, like the searcher
        assert not [v for v in environ if v.startswith(b"PM_")]
        limits = Path(f"/proc/{box.pid}/limits").read_text()
        address_space = next(line for line in limits.splitlines() if line.startswith("Max address space"))
        assert str(1024 * MB) in address_space
    finally:
        box.close()


# ------------------------------------------------------------------ sending batches


def test_ingest_batches_are_bounded_in_bytes_as_well_as_count():
    raws = [RawMessage(b"x" * (3 * MB), "INBOX", f"m{i}") for i in range(10)]
    raws.insert(4, RawMessage(b"y" * (20 * MB), "INBOX", "big"))
    sizes = [[len(r.raw) // MB for r in b] for b in batches(raws, 50, 8 * MB)]
    assert sizes == [[3, 3], [3, 3], [20], [3, 3], [3, 3], [3, 3]]
    assert [len(b) for b in batches([RawMessage(b"x", "INBOX", "s")] * 120, 50, 8 * MB)] == [50, 50, 20]


def test_pypdf_is_pinned_to_the_installed_version():
    deps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    (pin,) = [d for d in deps if d.startswith("pypdf")]
    assert pin == f"pypdf=={version('pypdf')}"


# ------------------------------------------------------------------ through the stack


def test_the_admin_api_returns_what_a_limit_cut(api):
    files = [(f"line {i}".encode(), "text", "plain", f"f{i}.txt") for i in range(52)]
    raw = message(msgid="many-attachments@x.example", attachments=files)
    resp = api.http.post(
        "/v1/admin/ingest",
        json={"tenant_id": "acme", "mailbox": "limits", "raw": [base64.b64encode(raw).decode()]},
        headers=api.admin_headers,
    )
    assert resp.status_code == 200, resp.text
    result = resp.json()
    assert result["indexed"] == 1
    assert result["notes"] == ["message 0: 2 attachment(s) beyond the first 50 left out (PM_INGEST_MAX_ATTACHMENTS)"]


def test_pmsearch_ingest_skips_an_oversized_message_unsent_and_prints_what_was_cut(demo_stack, tmp_path):
    folder = tmp_path / "mail"
    folder.mkdir()
    (folder / "big.eml").write_bytes(message("x" * (3 * MB // 2), msgid="cli-big@x.example"))
    files = [(f"line {i}".encode(), "text", "plain", f"f{i}.txt") for i in range(51)]
    (folder / "many.eml").write_bytes(message(msgid="cli-many@x.example", attachments=files))
    env = {k: v for k, v in os.environ.items() if not k.startswith("PM_")}
    env.update(PM_GATEWAY_URL=demo_stack.gateway_url, PM_ADMIN_TOKEN=demo_stack.secrets.admin_token,
               PM_INGEST_MAX_MESSAGE_BYTES=str(MB))
    run = subprocess.run([sys.executable, "-m", "pmsearch.cli.main", "ingest", str(folder), "-t", "acme", "-m", "limits"],
                         env=env, capture_output=True, text=True, timeout=120)
    assert run.returncode == 1, run.stderr
    lines = run.stderr.splitlines()
    assert [ln for ln in lines if ln.startswith("skipped")] == [
        f"skipped {folder / 'big.eml'}: message is 1.5 MB, over the 1.0 MB limit (PM_INGEST_MAX_MESSAGE_BYTES)"
    ]
    assert [ln for ln in lines if ln.startswith("note")] == [
        f"note {folder / 'many.eml'}: 1 attachment(s) beyond the first 50 left out (PM_INGEST_MAX_ATTACHMENTS)"
    ]
    assert "indexed 1," in run.stdout


def _payloads(index):
    from pmsearch.services.searcher.index.base import IndexFilter

    return index.scroll(IndexFilter(tenant_id="acme", mailboxes=("alice",)), limit=10_000)
