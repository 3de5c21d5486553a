"""BM25 document frequencies over a caller's scope, counted beside the Edge shard.

Keyword scores weigh each query term by its IDF over the caller's mailboxes only
(:func:`pmsearch.services.searcher.index.layout.idf_corpus`). Edge computes that itself when a
query names the corpus as a filter, but it evaluates the filter for every query and
term: at 100k points that was 7 of a keyword query's 8.6 ms. So the Edge adapter keeps
the counts: points are grouped by what decides whether a corpus includes them (tenant,
mailboxes; quarantined points are in no corpus), each group with its point count and
per-term document counts. A scope's IDF is a sum over the groups it reaches, a few
dictionary reads. The query then carries those weights and names a corpus that matches
no point, for which Edge's own factor is the constant ``ln 2``; dividing by it leaves
exactly the scope's IDF. ``tests/services/searcher/index/test_scoped_idf.py`` holds the
two ways equal.

The counts live in memory: built from the shard when it opens, then kept by every write
(all of them hold the shard's write lock). One process owns a shard, so nothing else
changes it underneath.
"""

from __future__ import annotations

import math
import threading
from collections import Counter
from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import Any

# Edge's IDF over an empty corpus: ln(1 + (0 - 0 + 0.5) / (0 + 0.5)).
EMPTY_CORPUS_IDF = math.log(2.0)

Group = tuple[str, frozenset[str]]


def idf(points: int, with_term: int) -> float:
    """Qdrant's BM25 IDF: ln(1 + (N - n + 0.5) / (n + 0.5))."""
    return math.log(1.0 + (points - with_term + 0.5) / (with_term + 0.5))


def group_of(payload: Mapping[str, Any] | None) -> Group | None:
    """The group a point's payload puts it in; None when no corpus can include it
    (quarantined, no tenant, in no mailbox: the schema marker, for one)."""
    if not payload or payload.get("quarantined") is True:
        return None
    tenant, mailboxes = payload.get("tenant_id"), payload.get("mailboxes")
    if not tenant or not mailboxes:
        return None
    return tenant, frozenset(mailboxes)


class _Counts:
    __slots__ = ("points", "terms")

    def __init__(self) -> None:
        self.points = 0
        self.terms: Counter[int] = Counter()


class ScopedIdf:
    """Point and term counts by tenant and mailbox set; thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._tenants: dict[str, dict[frozenset[str], _Counts]] = {}

    def count(self, group: Group | None, terms: Iterable[int], sign: int = 1) -> None:
        """Add (``sign`` 1) or take away (-1) one point of ``group`` holding ``terms``."""
        if group is None:
            return
        tenant, mailboxes = group
        with self._lock:
            groups = self._tenants.setdefault(tenant, {})
            g = groups.get(mailboxes) or groups.setdefault(mailboxes, _Counts())
            g.points += sign
            for t in set(terms):
                g.terms[t] += sign
            if g.points <= 0:
                del groups[mailboxes]

    def weights(self, tenant_id: str, mailboxes: Collection[str], terms: Sequence[int]) -> list[float]:
        """Each term's IDF over the points of ``tenant_id`` in any of ``mailboxes``,
        divided by :data:`EMPTY_CORPUS_IDF`."""
        wanted = set(mailboxes)
        with self._lock:
            groups = [g for m, g in self._tenants.get(tenant_id, {}).items() if not m.isdisjoint(wanted)]
            points = sum(g.points for g in groups)
            with_term = [sum(g.terms[t] for g in groups) for t in terms]
        return [idf(points, n) / EMPTY_CORPUS_IDF for n in with_term]
