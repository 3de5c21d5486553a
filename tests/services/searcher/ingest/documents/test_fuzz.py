"""Mutated attachments through the real parsing subprocess: a bounded number of files
(stated below), each a valid file of one format with random bytes changed, cut or
repeated. Every message comes back parsed or refused with a reason; the ingester never
crashes, and the subprocess keeps serving (or is replaced) after any of them."""

from __future__ import annotations

import random
from datetime import datetime

import pytest

from pmsearch.services.searcher.errors import IngestError
from pmsearch.services.searcher.ingest.limits import IngestLimits
from pmsearch.services.searcher.ingest.sandbox import Sandbox
from pmsearch.services.searcher.ingest.schemas import ParsedMessage
from pmsearch.testing import attachments as files
from tests.services.searcher.ingest.mails import mail, raw

PER_FORMAT = 25  # mutated files per format: 8 formats, 200 messages in all
SEEDS = {
    "quote.docx": lambda: files.docx(["Quote Q-1."], [["Item", "Qty"], ["Forklift", "2"]]),
    "budget.xlsx": lambda: files.xlsx({"Budget": [["Item", "Total"], ["Forklift", 48000]]}),
    "review.pptx": lambda: files.pptx([("Review", ["Up 12%"])]),
    "minutes.odt": lambda: files.odt(["Minutes.", "Canteen reopens."]),
    "stock.ods": lambda: files.ods("Stock", [["Part", "Count"], ["Pallet", 340]]),
    "plan.odp": lambda: files.odp([("Roadmap", ["Pilot"])]),
    "devis.rtf": lambda: files.rtf(["Le devis est valable 30 jours."]),
    "invite.ics": lambda: files.ics(
        summary="Review", start=datetime(2027, 3, 4, 10, tzinfo=files.PARIS),
        end=datetime(2027, 3, 4, 11, tzinfo=files.PARIS), location="Lyon",
        organizer=("Dana", "dana@acme.example"), attendees=[("Bob", "bob@acme.example")],
    ),
}


def mutate(data: bytes, rng: random.Random) -> bytes:
    out = bytearray(data)
    for _ in range(rng.randint(1, 12)):
        kind = rng.random()
        at = rng.randrange(len(out))
        if kind < 0.6:
            out[at] = rng.randrange(256)
        elif kind < 0.8:
            del out[at: at + rng.randint(1, 64)]
        else:
            out[at:at] = out[at: at + rng.randint(1, 256)] * rng.randint(1, 8)
        if not out:
            out = bytearray(b"\0")
    return bytes(out)


@pytest.mark.timeout(600)
def test_mutated_attachments_never_crash_the_ingester():
    rng = random.Random(48)
    box = Sandbox(IngestLimits(parse_timeout_seconds=10, extract_timeout_seconds=5, parse_memory_mb=512))
    outcomes = {"parsed": 0, "refused": 0}
    try:
        for name, make in SEEDS.items():
            seed = make()
            for _ in range(PER_FORMAT):
                msg = mail("Body words stay.")
                msg.add_attachment(mutate(seed, rng), maintype="application", subtype="octet-stream", filename=name)
                try:
                    parsed = box.parse(raw(msg))
                except IngestError:
                    outcomes["refused"] += 1
                    continue
                assert isinstance(parsed, ParsedMessage) and parsed.body_text == "Body words stay."
                outcomes["parsed"] += 1
        assert sum(outcomes.values()) == PER_FORMAT * len(SEEDS)
        # The subprocess still serves a good message after all of them.
        assert box.parse(raw(mail("Still here."))).body_text == "Still here."
    finally:
        box.close()
    assert outcomes["parsed"] >= PER_FORMAT * len(SEEDS) * 0.9  # a bad file costs itself, not its message
