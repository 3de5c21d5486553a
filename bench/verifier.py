"""Benchmark: verify a 10-sentence answer against 20 evidence messages of ~2 KB each.

Run with ``python -m bench.verifier``. Compares, in the same run:

* ``verify``  - the real verifier (split, citations, normalised whole-word quote
  matching with offsets, excerpts for every citation);
* ``decide``  - verify plus the run result (evidence summaries, trace);
* ``naive``   - a baseline that only checks that cited IDs are in the evidence;
* ``raw-in``  - the baseline plus raw ``str in`` of each quote over unnormalised bodies.

Prints a table of p50/p95 and, as the last line, one JSON object with the figures.
Target: verify p95 <= 2 ms.
"""

from __future__ import annotations

import json
import random
import re
import statistics
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

from pmsearch.services.verifier.decide import decide
from pmsearch.services.verifier.service import verify
from pmsearch.shared.messages import Draft, EvidenceMessage, VerificationRequested

N_MESSAGES = 20
BODY_BYTES = 2048
N_SENTENCES = 10
ITERATIONS = 400
WARMUP = 40
TARGET_P95_MS = 2.0

WORDS = (
    "claim insurer photos repair invoice payment bumper headlight garage adjuster policy "
    "deductible damage report accepted rejected pending receipt estimate workshop vehicle "
    "Golf customer reference number appointment inspection approval transfer account "
    "amount deadline documents signature confirmation settlement review"
).split()


def _sentence(rng: random.Random) -> str:
    words = [rng.choice(WORDS) for _ in range(rng.randint(8, 16))]
    extra = rng.random()
    if extra < 0.15:
        words.insert(rng.randrange(len(words)), "€1,200.50")
    elif extra < 0.25:
        words.insert(rng.randrange(len(words)), "“approved”")
    elif extra < 0.35:
        words.insert(rng.randrange(len(words)), "we’ll")
    return " ".join(words).capitalize() + "."


def _body(rng: random.Random) -> str:
    """About 2 KB of mail text: wrapped lines, paragraphs, some typography."""
    out = "Dear Mr. Meier,\n\n"
    line = ""
    while len(out.encode()) < BODY_BYTES - 120:
        for word in _sentence(rng).split():
            if len(line) + len(word) > 72:
                out += line.rstrip() + "\n"
                line = ""
            line += word + " "
        if rng.random() < 0.2:
            out += line.rstrip() + "\n\n"
            line = ""
    return out + line.rstrip() + "\n\nKind regards,\u00a0Anna Schmidt\nExample Insurance Inc."


def build(seed: int = 7) -> tuple[Draft, dict[str, EvidenceMessage]]:
    rng = random.Random(seed)
    evidence: dict[str, EvidenceMessage] = {}
    start = datetime(2025, 11, 1, tzinfo=UTC)
    for i in range(N_MESSAGES):
        message_id = f"m{rng.getrandbits(48):012x}"
        evidence[message_id] = EvidenceMessage(
            message_id=message_id,
            tenant_id="t-bench",
            thread_id=f"th-{i % 4}",
            mailbox="inbox@acme.example",
            sender="anna@insurer.example",
            date=start + timedelta(hours=i),
            subject=f"Re: Golf claim {4700 + i}",
            body=_body(rng),
        )
    ids = list(evidence)
    sentences = []
    for i in range(N_SENTENCES):
        cited = rng.sample(ids, 2 if i % 3 == 0 else 1)
        source = " ".join(evidence[cited[-1]].body.split())
        words = source.split()
        if i % 2 == 0:
            # Quote six consecutive words of the (last) cited source.
            at = rng.randrange(10, len(words) - 10)
            quote = " ".join(words[at : at + 6]).strip(".,")
            sentences.append(f"The insurer wrote “{quote}” [{', '.join(cited)}].")
        else:
            plain = [w.strip(".,“”").lower() for w in words if w.strip(".,“”").isalpha()]
            paraphrase = " ".join(rng.sample(plain, 10))
            sentences.append(f"In short, {paraphrase} [{cited[0]}]" + (f"[{cited[1]}]." if len(cited) > 1 else "."))
    return Draft(text=" ".join(sentences)), evidence


_MARKER = re.compile(r"\[([^\]]+)\]")
_QUOTE = re.compile(r"[\"“]([^\"”]+)[\"”]")


def naive_verify(draft: Draft, evidence: dict[str, EvidenceMessage]) -> int:
    """Baseline: cited IDs exist in the evidence; nothing else."""
    kept = 0
    for sentence in (draft.text or "").split(". "):
        ids = [i.strip() for m in _MARKER.findall(sentence) for i in m.split(",")]
        kept += bool(ids) and all(i in evidence for i in ids)
    return kept


def raw_in_verify(draft: Draft, evidence: dict[str, EvidenceMessage]) -> int:
    """Baseline plus raw substring search of each quote in the unnormalised bodies."""
    kept = 0
    for sentence in (draft.text or "").split(". "):
        ids = [i.strip() for m in _MARKER.findall(sentence) for i in m.split(",")]
        if not ids or not all(i in evidence for i in ids):
            continue
        quotes = _QUOTE.findall(sentence)
        kept += all(any(q in evidence[i].body for i in ids) for q in quotes)
    return kept


def measure(fn: Callable[[], object], iterations: int = ITERATIONS) -> list[float]:
    for _ in range(WARMUP):
        fn()
    times = []
    for _ in range(iterations):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1000)
    return times


def percentile(values: list[float], q: float) -> float:
    return statistics.quantiles(values, n=100, method="inclusive")[int(q) - 1]


def main() -> int:
    draft, evidence = build()
    verdict = verify(draft, evidence)
    request = VerificationRequested(
        run_id="bench", tenant_id="t-bench", scope_token="s", deadline=time.time() + 60,
        question="q", ending="answer", draft=draft,
    )
    cases = {
        "naive": lambda: naive_verify(draft, evidence),
        "raw-in": lambda: raw_in_verify(draft, evidence),
        "verify": lambda: verify(draft, evidence),
        "decide": lambda: decide(request, evidence),
    }
    figures: dict[str, dict[str, float]] = {}
    for name, fn in cases.items():
        times = measure(fn)
        figures[name] = {"p50_ms": percentile(times, 50), "p95_ms": percentile(times, 95)}

    body_kb = statistics.mean(len(m.body.encode()) for m in evidence.values()) / 1024
    print(f"verifier benchmark: {N_SENTENCES} sentences, {N_MESSAGES} messages of {body_kb:.1f} KB, "
          f"{ITERATIONS} iterations; kept {len(verdict.kept)}, removed {len(verdict.removed)}")
    print(f"{'case':<8} {'p50 ms':>9} {'p95 ms':>9} {'p50 / naive':>12}")
    naive_p50 = figures["naive"]["p50_ms"]
    for name, fig in figures.items():
        ratio = fig["p50_ms"] / naive_p50 if naive_p50 else float("nan")
        print(f"{name:<8} {fig['p50_ms']:>9.3f} {fig['p95_ms']:>9.3f} {ratio:>11.1f}x")
    ok = figures["verify"]["p95_ms"] <= TARGET_P95_MS
    summary = {
        "bench": "verifier",
        "sentences": N_SENTENCES,
        "messages": N_MESSAGES,
        "body_kb": round(body_kb, 2),
        "iterations": ITERATIONS,
        "kept": len(verdict.kept),
        "removed": len(verdict.removed),
        **{f"{name}_{k}": round(v, 4) for name, fig in figures.items() for k, v in fig.items()},
        "verify_vs_naive_p50": round(figures["verify"]["p50_ms"] / naive_p50, 1),
        "verify_vs_raw_in_p50": round(figures["verify"]["p50_ms"] / figures["raw-in"]["p50_ms"], 1),
        "target_p95_ms": TARGET_P95_MS,
        "target_met": ok,
    }
    print(json.dumps(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
