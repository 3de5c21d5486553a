"""Benchmark: what one big message costs a run, whole against bounded evidence.

Run with ``python -m bench.big_mail``. A stranger can mail pmsearch a 2 MB text stuffed
with common words; every run whose search finds it copies it into its evidence (Redis)
and verifies its sentences against it. For messages of 20 k, 200 k and 2 M characters,
in the same run:

* ``whole``   - the message as stored, the way runs read it before evidence was bounded;
* ``bounded`` - what a run reads now (``pmsearch.services.searcher.repository.bounded`` at
  ``PM_EVIDENCE_MAX_CHARS``, 32,000 characters).

Each row gives the evidence a run holds for that message (its JSON in Redis, KB) and
the verification of a three-sentence answer citing it (p50/p95 ms: a quote found near
the start, one not found, a sentence of content words). Prints a table and, last, one
JSON line. Target: verify p95 <= 20 ms whatever the message size.
"""

from __future__ import annotations

import statistics
import time
from datetime import UTC, datetime

from bench._util import emit_json, format_table
from pmsearch.services.searcher.repository import EVIDENCE_MAX_CHARS, bounded
from pmsearch.services.verifier.service import verify
from pmsearch.shared.messages import Draft, DraftSentence, EvidenceMessage

SIZES = (20_000, 200_000, 2_000_000)
TARGET_P95_MS = 20.0
FILLER = "please review the invoice and the claim report for the meeting next week "
OPENING = "The insurer accepted the claim and will pay EUR 2,115.50 by 12 April. "


def message(chars: int) -> EvidenceMessage:
    body = (OPENING + FILLER * (chars // len(FILLER) + 1))[:chars]
    return EvidenceMessage(
        message_id="mbig000000001", tenant_id="acme", thread_id="t1", mailbox="alice",
        sender="Stranger <x@example.org>", date=datetime(2024, 4, 3, tzinfo=UTC), subject="Claim", body=body,
    )


DRAFT = Draft(sentences=[
    DraftSentence(text='The insurer wrote "will pay EUR 2,115.50 by 12 April".', citations=["mbig000000001"]),
    DraftSentence(text='It said "the payment was cancelled".', citations=["mbig000000001"]),
    DraftSentence(text="The claim report for the meeting was reviewed.", citations=["mbig000000001"]),
])


def timings(evidence: dict[str, EvidenceMessage], iterations: int) -> list[float]:
    out = []
    for _ in range(iterations):
        start = time.perf_counter()
        verify(DRAFT, evidence, question="When will the insurer pay?")
        out.append((time.perf_counter() - start) * 1000)
    return out


def p95(values: list[float]) -> float:
    return statistics.quantiles(values, n=20)[-1] if len(values) >= 20 else max(values)


def main() -> int:
    rows, figures = [], {}
    for chars in SIZES:
        whole = message(chars)
        for label, m in (("whole", whole), ("bounded", bounded(whole, EVIDENCE_MAX_CHARS))):
            iterations = 20 if len(m.body) > 500_000 else 60
            ms = timings({m.message_id: m}, iterations)
            kb = len(m.model_dump_json().encode()) / 1024
            figures[f"{label}_{chars}"] = {"evidence_kb": round(kb, 1), "verify_p50_ms": round(statistics.median(ms), 2),
                                           "verify_p95_ms": round(p95(ms), 2)}
            rows.append({"message chars": chars, "evidence": label, "in Redis, KB": round(kb, 1),
                         "verify p50 ms": statistics.median(ms), "verify p95 ms": p95(ms)})
    print(format_table(rows))
    worst = max(v["verify_p95_ms"] for k, v in figures.items() if k.startswith("bounded"))
    emit_json({"bench": "big_mail", "evidence_max_chars": EVIDENCE_MAX_CHARS, "figures": figures,
               "bounded_verify_p95_ms_worst": worst, "target_p95_ms": TARGET_P95_MS, "met": worst <= TARGET_P95_MS})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
