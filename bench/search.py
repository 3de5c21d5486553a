"""Index-level search benchmark: ``python -m bench.search``.

Synthesises mailboxes, upserts them into an index and times keyword, semantic and hybrid
queries; semantic and hybrid timings include embedding the query with the real local
model. Qdrant Edge runs at 1k and 20k messages; qdrant-client's local mode runs at 1k only
as the baseline. Prints a table, then one JSON object as the last line.

Embedding 20k chunks with MiniLM on a small CPU takes many minutes, so message bodies are
built from a pool of distinct texts that are embedded for real; a message beyond the pool
reuses its template's vector with a small random perturbation (its text, and so its BM25
vector, is still its own). The output says how many vectors were reused.
"""

from __future__ import annotations

import argparse
import random
import tempfile
import time
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal

import numpy as np

from bench._util import emit_json, format_table, latency_ms, time_each
from pmsearch.services.searcher.embedding import OnnxEmbedder
from pmsearch.services.searcher.index.base import Chunk, ChunkPayload, IndexFilter, MailIndex

POOL = 2000
QUERIES = 120
WARMUP = 10
TARGET_HYBRID_P95_MS = 25.0
TENANT, OTHER_TENANT = "bench", "neighbour"
MAILBOXES = ("inbox-ann", "inbox-bob", "shared-finance", "shared-support")

PEOPLE = ["ann", "bob", "carol", "dave", "erin", "frank", "grace", "heidi", "ivan", "judy", "mallory", "oscar"]
COMPANIES = ["Acme", "Globex", "Initech", "Umbrella", "Hooli", "Vandelay", "Stark", "Wayne", "Tyrell", "Cyberdyne"]
CITIES = ["Berlin", "Lisbon", "Oslo", "Madrid", "Vienna", "Dublin", "Prague", "Zurich", "Warsaw", "Milan"]
PRODUCTS = ["data platform", "billing module", "mobile app", "CRM rollout", "warehouse scanners", "VPN"]
DAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday"]
TOPICS: dict[str, list[str]] = {
    "invoice": [
        "Please find attached invoice {inv} for {amount} EUR covering the {product} work.",
        "Invoice {inv} is now {n} days overdue; please confirm the payment date.",
        "Accounts payable approved invoice {inv}; the transfer goes out on {day}.",
        "We noticed a discrepancy between purchase order {po} and invoice {inv}.",
        "Could you resend invoice {inv} with our new VAT number?",
    ],
    "meeting": [
        "Can we move the {product} review to {day} afternoon?",
        "Agenda for {day}: budget status, hiring plan and the {company} renewal.",
        "I booked room {n} for the quarterly planning session.",
        "Minutes from today's steering committee are in the shared folder.",
        "Let's do a quick call on {day} to unblock the {product} timeline.",
    ],
    "travel": [
        "Your flight to {city} on {day} is confirmed, booking reference {ref}.",
        "The hotel in {city} charged a late cancellation fee of {amount} EUR.",
        "Please submit the expense report for the {city} trip by {day}.",
        "Train tickets to {city} are cheaper if we travel before {day}.",
    ],
    "support": [
        "Customer {company} reports the {product} crashes when exporting reports.",
        "Ticket {ref} was escalated to second-level support this morning.",
        "The outage affected {n} customers; root cause was an expired certificate.",
        "We rolled back release {n}.{n2} after login failures in the {product}.",
        "Password resets are failing for users in {city}; investigating.",
    ],
    "hr": [
        "Welcome {person} who joins the {product} team on {day}.",
        "Reminder: annual performance reviews are due by the end of the month.",
        "The office in {city} will be closed for the public holiday.",
        "{person} has accepted the offer for the senior engineer position.",
    ],
    "sales": [
        "{company} wants a discount of {n} percent for a three-year contract.",
        "The renewal with {company} is worth {amount} EUR per year.",
        "Draft proposal for {company} attached, pricing on page {n}.",
        "{company} signed the order {po} for the {product}.",
    ],
    "legal": [
        "Legal reviewed the NDA with {company}; two clauses need changes.",
        "The data processing agreement must be countersigned before go-live.",
        "Please archive contract {ref} in the compliance folder.",
    ],
    "insurance": [
        "The insurer approved the claim {ref} for the vehicle collision in {city}.",
        "Water damage in the {city} office was reported to the insurance broker.",
        "Our liability policy renews on {day}; premium rises by {n} percent.",
    ],
}
GREETINGS = ["Hi {to},", "Hello {to},", "Dear {to},", "{to},", "Hey {to},"]
SIGNOFFS = ["Thanks, {frm}", "Best regards, {frm}", "Cheers, {frm}", "-- {frm}", "Kind regards, {frm}"]
QUERY_TEXTS = [
    "invoice {inv}", "{inv}", "overdue invoice payment", "car accident insurance compensation",
    "flight booking {city}", "login problems after the release", "new hire joining the team",
    "contract discount negotiation with {company}", "expired certificate outage", "room booking planning",
    "NDA changes", "hotel cancellation fee", "purchase order {po}", "who approved the transfer",
    "water damage office", "renewal price increase", "expense report deadline", "{company} proposal pricing",
]


@dataclass
class Template:
    topic: str
    sentences: list[str]
    greeting: str
    signoff: str


def _fill(rng: random.Random) -> dict[str, Any]:
    return {
        "inv": f"INV-{rng.choice([2023, 2024, 2025])}-{rng.randrange(10000):04d}",
        "po": f"PO-{rng.randrange(100000):05d}",
        "ref": f"{rng.choice('ABCDEFGH')}{rng.randrange(10**6):06d}",
        "amount": f"{rng.randrange(100, 90000):,}",
        "n": rng.randrange(2, 60),
        "n2": rng.randrange(0, 9),
        "day": rng.choice(DAYS),
        "city": rng.choice(CITIES),
        "company": rng.choice(COMPANIES),
        "product": rng.choice(PRODUCTS),
        "person": rng.choice(PEOPLE).title(),
        "to": rng.choice(PEOPLE).title(),
        "frm": rng.choice(PEOPLE).title(),
    }


def _template(rng: random.Random) -> Template:
    topic = rng.choice(list(TOPICS))
    sentences = rng.sample(TOPICS[topic], k=min(len(TOPICS[topic]), rng.randint(2, 4)))
    if rng.random() < 0.4:  # real mail drifts off topic
        sentences.append(rng.choice(TOPICS[rng.choice(list(TOPICS))]))
    return Template(topic, sentences, rng.choice(GREETINGS), rng.choice(SIGNOFFS))


def _render(t: Template, fill: dict[str, Any]) -> str:
    body = " ".join(s.format(**fill) for s in t.sentences)
    return f"{t.greeting.format(**fill)} {body} {t.signoff.format(**fill)}"


@lru_cache(maxsize=1)
def _embedder() -> OnnxEmbedder:
    return OnnxEmbedder()


@lru_cache(maxsize=1)
def _pool() -> tuple[list[Template], np.ndarray, float]:
    """Templates, their real embeddings (rendered with the first fill), and the
    measured embedding throughput in texts per second."""
    rng = random.Random(7)
    templates = [_template(rng) for _ in range(POOL)]
    texts = [_render(t, _fill(random.Random(i))) for i, t in enumerate(templates)]
    start = time.perf_counter()
    vectors = np.asarray(_embedder().embed(texts), dtype=np.float32)
    return templates, vectors, len(texts) / (time.perf_counter() - start)


def synth_mailbox(n_messages: int, seed: int = 1) -> tuple[list[Chunk], int]:
    """``n_messages`` one-chunk messages (90% the benchmarked tenant, the rest another
    tenant; ~2% quarantined), and how many reuse a perturbed pool vector."""
    templates, vectors, _ = _pool()
    rng = random.Random(seed)
    noise = np.random.default_rng(seed)
    start = datetime(2023, 1, 1, tzinfo=UTC)
    chunks, reused = [], 0
    for i in range(n_messages):
        k = i % POOL
        fill = _fill(random.Random(k if i < POOL else 10**6 + i))
        vec = vectors[k]
        if i >= POOL:
            vec = vec + noise.normal(0, 0.01, vec.shape).astype(np.float32)
            vec = vec / np.linalg.norm(vec)
            reused += 1
        sender = f"{fill['frm'].lower()}@{fill['company'].lower()}.example"
        rcpts = [f"{p}@acme.example" for p in rng.sample(PEOPLE, rng.randint(1, 3))]
        date = start + timedelta(minutes=rng.randrange(60 * 24 * 700))
        subject = f"{templates[k].topic.title()} {fill['ref']}"
        payload = ChunkPayload(
            tenant_id=TENANT if rng.random() < 0.9 else OTHER_TENANT,
            mailbox=rng.choice(MAILBOXES),
            message_id=f"bench-{i}",
            rfc_message_id=f"<bench-{i}@mail.example>",
            thread_id=f"t-{i // 3}",
            subject=subject,
            normalized_subject=subject.lower(),
            sender=f"{fill['frm']} <{sender}>",
            sender_email=sender,
            recipients=rcpts,
            date=date,
            date_ts=date.timestamp(),
            folder="INBOX",
            quarantined=rng.random() < 0.02,
            has_attachments="attached" in templates[k].sentences[0],
            text=_render(templates[k], fill),
        )
        chunks.append(Chunk(payload=payload, dense=vec.tolist()))
    return chunks, reused


def _queries(n: int) -> list[str]:
    rng = random.Random(99)
    return [rng.choice(QUERY_TEXTS).format(**_fill(rng)) for _ in range(n)]


def _open(adapter: Literal["edge", "local"], folder: Path, dim: int) -> MailIndex:
    if adapter == "edge":
        from pmsearch.services.searcher.index.edge import EdgeIndex

        # Upsert and indexing are timed apart here; the service lets upserts optimise.
        return EdgeIndex(folder / "edge", dim, optimize_after=0)
    import secrets

    from pmsearch.services.searcher.index import open_index
    from pmsearch.shared.settings import SearcherSettings

    # An index needs no scope key, but the searcher's settings refuse to exist without one.
    settings = SearcherSettings(qdrant_url=":memory:", collection="bench", scope_key=secrets.token_urlsafe(32))
    return open_index(settings, dim)


def measure_searcher(
    n_messages: int,
    adapter: Literal["edge", "local"] = "edge",
    queries: int = QUERIES,
    optimize: bool = True,
) -> dict[str, Any]:
    """Upsert throughput and per-mode query latency (incl. query embedding for semantic
    and hybrid) of one adapter over a synthetic mailbox of ``n_messages``; ``optimize``
    builds Edge's HNSW/segments after the upsert (timed separately)."""
    import warnings

    warnings.filterwarnings("ignore", message="Payload indexes have no effect")
    chunks, reused = synth_mailbox(n_messages)
    embedder = _embedder()
    flt = IndexFilter(tenant_id=TENANT, mailboxes=MAILBOXES)
    texts = _queries(queries + WARMUP)
    with tempfile.TemporaryDirectory() as tmp:
        index = _open(adapter, Path(tmp), embedder.dim)
        start = time.perf_counter()
        for i in range(0, len(chunks), 1000):  # ingest hands over about this many at a time
            index.upsert(chunks[i : i + 1000])
        upsert_s = time.perf_counter() - start
        if hasattr(index, "wait_counted"):
            index.wait_counted()  # queries weigh terms by the kept counts from here on
        optimize_s = None
        if optimize and hasattr(index, "optimize"):
            start = time.perf_counter()
            index.optimize()
            optimize_s = time.perf_counter() - start

        def keyword(text: str) -> None:
            index.query(flt, mode="keyword", text=text, dense=None, limit=40)

        def dense_mode(mode: str):
            def run(text: str) -> None:
                index.query(flt, mode=mode, text=text, dense=embedder.embed([text])[0], limit=40)

            return run

        result: dict[str, Any] = {
            "adapter": adapter,
            "n_messages": n_messages,
            "points": len(chunks),
            "points_in_scope": index.count(flt),
            # The tenant filter and quarantine exclusion hold after optimisation too.
            "scope_count_ok": index.count(flt)
            == sum(c.payload.tenant_id == TENANT and not c.payload.quarantined for c in chunks),
            "vectors_reused": reused,
            "upsert_s": round(upsert_s, 3),
            "upsert_points_per_s": round(len(chunks) / upsert_s, 1),
            "optimize_s": None if optimize_s is None else round(optimize_s, 3),
            "embed_query": latency_ms(time_each(lambda t: embedder.embed([t]), texts, WARMUP)),
            "keyword": latency_ms(time_each(keyword, texts, WARMUP)),
            "semantic": latency_ms(time_each(dense_mode("semantic"), texts, WARMUP)),
            "hybrid": latency_ms(time_each(dense_mode("hybrid"), texts, WARMUP)),
        }
        index.close()
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="1000,20000", help="message counts for Qdrant Edge")
    parser.add_argument("--baseline-size", type=int, default=1000, help="0 skips the local-mode baseline")
    parser.add_argument("--queries", type=int, default=QUERIES)
    parser.add_argument("--no-optimize", action="store_true", help="query Edge without optimize()")
    args = parser.parse_args()

    runs = [measure_searcher(int(n), "edge", args.queries, not args.no_optimize) for n in args.sizes.split(",")]
    if args.baseline_size:
        runs.append(measure_searcher(args.baseline_size, "local", args.queries))
    embed_rate = _pool()[2]

    rows = []
    for r in runs:
        row = {"adapter": r["adapter"], "messages": r["n_messages"], "upsert pts/s": r["upsert_points_per_s"]}
        row["optimize s"] = r["optimize_s"]
        for mode in ("embed_query", "keyword", "semantic", "hybrid"):
            row[f"{mode} p50"] = r[mode]["p50_ms"]
            row[f"{mode} p95"] = r[mode]["p95_ms"]
        rows.append(row)
    print(format_table(rows))
    print("latencies in ms; semantic and hybrid include embedding the query.")
    print(
        f"{POOL} distinct texts embedded for real at {embed_rate:.0f} texts/s; "
        + ", ".join(f"{r['n_messages']}: {r['vectors_reused']} perturbed reused vectors" for r in runs)
    )
    out: dict[str, Any] = {"bench": "search", "runs": runs, "pool_texts": POOL, "embed_texts_per_s": round(embed_rate, 1)}
    edge = {r["n_messages"]: r for r in runs if r["adapter"] == "edge"}
    base = next((r for r in runs if r["adapter"] == "local"), None)
    if base and base["n_messages"] in edge:
        e = edge[base["n_messages"]]
        out["local_over_edge"] = {
            m: round(base[m]["p50_ms"] / e[m]["p50_ms"], 2) for m in ("keyword", "semantic", "hybrid")
        }
        out["local_over_edge"]["upsert"] = round(e["upsert_points_per_s"] / base["upsert_points_per_s"], 2)
        print(f"local mode / Edge at {base['n_messages']} (p50 latency; upsert throughput): {out['local_over_edge']}")
    largest = edge[max(edge)] if edge else None
    if largest:
        p95 = largest["hybrid"]["p95_ms"]
        out["hybrid_p95_target_met"] = p95 <= TARGET_HYBRID_P95_MS
        print(f"hybrid p95 at {largest['n_messages']}: {p95} ms (target <= {TARGET_HYBRID_P95_MS} ms)")
    emit_json(out)


if __name__ == "__main__":
    main()
