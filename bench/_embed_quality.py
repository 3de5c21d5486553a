"""Retrieval quality for ``bench.embedders``: the texts ingest embeds for the demo mailbox,
an index built from given vectors by the project's own ingest code, and recall@10 of the
labelled questions' supporting messages through the scoped repository's search.

Vectors come from a table (text -> vector) filled by the embedder under test in its own
process, so the index is built exactly as ingest builds it (same chunks, same threading,
same payloads) while the model runs elsewhere.
"""

from __future__ import annotations

import hashlib
import time
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

from pmsearch.cli.demo import DEMO_KEYS
from pmsearch.cli.evaluation.questions import Question, corpus_message_ids, load_questions
from pmsearch.services.searcher.index.edge import EdgeIndex
from pmsearch.services.searcher.ingest.readers import demo_mailboxes, read_path
from pmsearch.services.searcher.ingest.service import Ingester
from pmsearch.services.searcher.repository import ScopedMailRepository
from pmsearch.shared.scope import Scope
from pmsearch.shared.settings import SearcherSettings

ROOT = Path(__file__).resolve().parent.parent
DEMO = ROOT / "data" / "demo"
QUESTIONS = ROOT / "evals" / "demo.yaml"
DIM = 384
K = 10
CHUNK_CHARS = SearcherSettings.model_fields["chunk_chars"].default


class Recorder:
    """An embedder that records what it is asked to embed and answers with a fixed
    pseudo-random unit vector per text (the collecting pass needs some vector)."""

    dim = DIM

    def __init__(self) -> None:
        self.texts: list[str] = []

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        self.texts.extend(texts)
        out = []
        for t in texts:
            seed = int.from_bytes(hashlib.sha256(t.encode()).digest()[:8], "big")
            v = np.random.default_rng(seed).normal(size=DIM)
            out.append((v / np.linalg.norm(v)).tolist())
        return out


class Table:
    """An embedder answering from precomputed vectors; a text it lacks is a bench bug."""

    dim = DIM

    def __init__(self, vectors: Mapping[str, np.ndarray]) -> None:
        self.vectors = vectors

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        return [self.vectors[t].tolist() for t in texts]


def ingest_demo(folder: Path, embedder: Any) -> EdgeIndex:
    """The demo mailbox through the real parser and ingest, into an Edge index at ``folder``."""
    index = EdgeIndex(folder, DIM)
    ingester = Ingester(index, embedder, CHUNK_CHARS)
    for tenant, mailbox, path in demo_mailboxes(DEMO):
        ingester.ingest(tenant, mailbox, [(r.raw, r.folder, r.label) for r in read_path(path)])
    index.optimize()
    return index


def labelled() -> list[Question]:
    """The labelled questions that name supporting messages."""
    return [q for q in load_questions(QUESTIONS) if q.supporting]


def chunk_texts(work: Path) -> list[str]:
    """Every distinct text ingest embeds for the demo mailbox, in first-seen order."""
    recorder = Recorder()
    ingest_demo(work / "collect", recorder).close()
    return list(dict.fromkeys(recorder.texts))


class Recall:
    """recall@10 of supporting messages per mode over the labelled questions."""

    def __init__(self, questions: Sequence[Question]) -> None:
        self.questions = list(questions)
        corpus = corpus_message_ids(DEMO)
        # Per question, per supporting Message-ID: the pmsearch ids of its copies.
        self.targets = [[frozenset(corpus.get((q.tenant, rfc), ())) for rfc in q.supporting] for q in self.questions]
        self.scopes = {
            label: Scope(tenant_id=s["tenant_id"], principal=s["principal"], mailboxes=tuple(s["mailboxes"]),
                         expires_at=time.time() + 86400)
            for label, s in DEMO_KEYS.items()
        }

    def measure(self, index: EdgeIndex, embedder: Any, modes: Sequence[str]) -> dict[str, dict[str, float]]:
        repo = ScopedMailRepository(index, embedder)
        out = {}
        for mode in modes:
            found = total = hit_any = 0
            per_question = []
            for q, targets in zip(self.questions, self.targets):
                ids = {h.message_id for h in repo.search(self.scopes[q.key], q.question, mode, None, K)}
                got = sum(bool(t & ids) for t in targets)
                found += got
                total += len(targets)
                hit_any += got > 0
                per_question.append(got / len(targets))
            out[mode] = {
                "recall_at_10": round(found / total, 4),
                "mean_question_recall_at_10": round(sum(per_question) / len(per_question), 4),
                "any_at_10": round(hit_any / len(self.questions), 4),
                "supporting": total,
                "questions": len(self.questions),
            }
        return out


def first_search(index: EdgeIndex, embedder: Any) -> list[list[str]]:
    """For every labelled question (every kind), the messages the agentic loop's first
    search puts before the model: hybrid, the question as the query, its limit."""
    from pmsearch.services.planner.service import FIRST_SEARCH_LIMIT

    repo = ScopedMailRepository(index, embedder)
    scopes = Recall([]).scopes
    return [[h.message_id for h in repo.search(scopes[q.key], q.question[:500], "hybrid", None, FIRST_SEARCH_LIMIT)]
            for q in load_questions(QUESTIONS)]


def supporting_seen(lists: Sequence[list[str]]) -> list[int]:
    """Per labelled question (every kind, in file order), how many of its supporting
    messages its first search (:func:`first_search`) shows the model."""
    corpus = corpus_message_ids(DEMO)
    return [sum(bool(frozenset(corpus.get((q.tenant, rfc), ())) & set(ids)) for rfc in q.supporting)
            for q, ids in zip(load_questions(QUESTIONS), lists)]

