"""Attachment extraction: ``python -m bench.attachments [--messages 40]``.

Messages with one attached file of each format (Word, Excel, PowerPoint, OpenDocument
text, spreadsheet and slides, RTF, a calendar invitation), made with the libraries
people's software writes them with, and the same messages without the file, parsed
through the searcher's bounded parsing subprocess (``ingest/sandbox.py``), in turns:
parse throughput in messages/s with and without attachments, and per format the time a
message with that file took, p50 / p95 (the file's extraction and the message's parse;
the message alone is the baseline row). Embedding the extra text is not in these
figures: ``bench.ingest`` measures the whole import.

Prints a table, then one JSON object as the last line.
"""

from __future__ import annotations

import argparse
import time
from datetime import datetime
from email import policy
from email.message import EmailMessage

from bench._util import emit_json, format_table, latency_ms
from pmsearch.services.searcher.ingest.limits import IngestLimits
from pmsearch.services.searcher.ingest.sandbox import Sandbox
from pmsearch.testing import attachments as files


def samples() -> dict[str, tuple[str, bytes]]:
    rows = [["Item", "Qty", "Unit price", "Total"]] + [[f"Part {n}", n, 12.5 * n, 12.5 * n * n] for n in range(1, 200)]
    text = [f"Paragraph {n}: the supplier confirms delivery of batch {n} on day {n % 28 + 1}." for n in range(60)]
    return {
        "docx": ("quote.docx", files.docx(text, [[str(c) for c in r] for r in rows[:40]])),
        "xlsx": ("budget.xlsx", files.xlsx({"Budget": rows, "Notes": [["Approved"]]})),
        "pptx": ("review.pptx", files.pptx([(f"Slide {n}", [f"Point {n}.{k}" for k in range(5)]) for n in range(12)])),
        "odt": ("minutes.odt", files.odt(text)),
        "ods": ("stock.ods", files.ods("Stock", rows)),
        "odp": ("plan.odp", files.odp([(f"Step {n}", [f"Point {n}.{k}" for k in range(5)]) for n in range(12)])),
        "rtf": ("devis.rtf", files.rtf(text)),
        "ics": ("invite.ics", files.ics(
            summary="Supplier review", start=datetime(2027, 3, 4, 10, tzinfo=files.PARIS),
            end=datetime(2027, 3, 4, 11, tzinfo=files.PARIS), location="Lyon depot",
            organizer=("Dana Lee", "dana@acme.example"),
            attendees=[(f"Person {n}", f"p{n}@acme.example") for n in range(20)],
        )),
    }


def message(n: int, attachment: tuple[str, bytes] | None) -> bytes:
    msg = EmailMessage()
    msg["From"], msg["To"], msg["Subject"] = "Dana Lee <dana@acme.example>", "bob@acme.example", f"File {n}"
    msg["Message-ID"] = f"<bench-{n}@test.example>"
    msg.set_content(f"Message {n}: please see the attached file.\n\nRegards,\nDana")
    if attachment is not None:
        name, data = attachment
        msg.add_attachment(data, maintype="application", subtype="octet-stream", filename=name)
    return msg.as_bytes(policy=policy.default)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--messages", type=int, default=40, help="messages per format (and as many without)")
    args = parser.parse_args()
    formats = samples()
    box = Sandbox(IngestLimits())
    took: dict[str, list[float]] = {"(no attachment)": [], **{f: [] for f in formats}}
    totals = {"with": 0.0, "without": 0.0}
    for attachment in (None, *formats.values()):  # the subprocess's start and each library's import
        box.parse(message(0, attachment))
    try:
        for n in range(args.messages):
            for fmt, attachment in formats.items():
                for label, with_file in (("(no attachment)", None), (fmt, attachment)):
                    data = message(n, with_file)
                    began = time.perf_counter()
                    box.parse(data)
                    seconds = time.perf_counter() - began
                    took[label].append(seconds)
                    totals["without" if with_file is None else "with"] += seconds
    finally:
        box.close()
    count = args.messages * len(formats)
    rows, figures = [], {}
    for label, values in took.items():
        stats = latency_ms(values)
        figures[label] = {"p50_ms": stats["p50_ms"], "p95_ms": stats["p95_ms"], "n": len(values)}
        size = len(formats[label][1]) if label in formats else 0
        rows.append({"format": label, "file KB": round(size / 1024, 1), "messages": len(values),
                     "p50 ms": stats["p50_ms"], "p95 ms": stats["p95_ms"]})
    rate = {side: round(count / seconds, 1) for side, seconds in totals.items()}
    print(f"parsing through the bounded subprocess, {args.messages} messages per format, in turns")
    print(format_table(rows))
    print(f"messages/s: {rate['without']} without attachments, {rate['with']} with one each (all formats mixed)")
    emit_json({"bench": "attachments", "messages_per_format": args.messages, "per_format": figures,
               "messages_per_s": rate})


if __name__ == "__main__":
    main()
