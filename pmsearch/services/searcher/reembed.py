"""Moving an index to another embedder (`pmsearch reembed`): every point's dense vector
computed again by the configured embedder, into a new index beside the old one, which
then takes its place. Vectors of two models never share an index (a query vector from
one lands somewhere meaningless among the other's), and the mail is not read again:
each point's payload holds what was embedded.

Resumable: the new index is flushed after every batch and a point already in it is not
embedded again, so a cut run goes on where it stopped. The old index is kept beside the
new one (``qdrant-edge.before-reembed-<time>``) until its owner deletes it. Edge indexes
only, with the searcher stopped (it holds the index's lock); a Qdrant server collection
is moved by importing the mail into a new collection (``PM_COLLECTION``).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from qdrant_edge import qdrant_edge as qe  # type: ignore[import-untyped]

from pmsearch.services.searcher.embedding import Embedder
from pmsearch.services.searcher.errors import ReembedRefused
from pmsearch.services.searcher.index import layout
from pmsearch.services.searcher.index.base import Chunk
from pmsearch.services.searcher.index.edge import EdgeIndex
from pmsearch.services.searcher.ingest.service import embedding_text

INDEX = "qdrant-edge"
NEXT = "qdrant-edge.reembed"
# Written when every point is in the new index: a swap cut short is finished next time.
COMPLETE = "qdrant-edge.reembed.complete"
BATCH = 64


@dataclass
class ReembedReport:
    embedded: int = 0  # points embedded by this run
    carried: int = 0  # points a cut run had embedded already
    previous: str | None = None  # the embedder the old index named
    kept_at: Path | None = None  # where the old index now is


def reembed(
    data_dir: Path, embedder: Embedder, name: str, *, batch: int = BATCH, progress: Callable[[int], None] | None = None
) -> ReembedReport:
    """Re-embed the Edge index under ``data_dir`` with ``embedder`` (recorded as ``name``,
    :func:`pmsearch.services.searcher.embedding.embedder_id`) and put it in the old one's
    place. :class:`ReembedRefused` when there is nothing to move or the index is in use."""
    report = ReembedReport()
    current, target, complete = data_dir / INDEX, data_dir / NEXT, data_dir / COMPLETE
    if complete.exists():  # the last run embedded everything and was cut in the swap
        report.kept_at = _swap(data_dir)
        return report
    if not current.is_dir():
        raise ReembedRefused(f"no index at {current}")
    old = _load(current)
    try:
        marker = _marker(old)
        report.previous = marker.get(layout.EMBEDDER_FIELD)
        if report.previous == name and not target.exists():
            raise ReembedRefused(f"the index at {current} is embedded by {name} already")
        new = EdgeIndex(target, embedder.dim, embedder=name, optimize_after=0)
        try:
            # `pmsearch ingest` keys what it imported by the index's id: the same mail,
            # moved, is not imported again.
            if layout.INDEX_ID_FIELD in marker:
                new.shard.update(qe.UpdateOperation.set_payload(
                    [layout.SCHEMA_POINT_ID], {layout.INDEX_ID_FIELD: marker[layout.INDEX_ID_FIELD]}))
            have = set(_ids(new.shard))
            report.carried = len(have - {layout.SCHEMA_POINT_ID})
            for page in _pages(old):
                todo = [layout.chunk_payload(payload) for pid, payload in page if str(pid) not in have]
                for i in range(0, len(todo), batch):
                    payloads = todo[i : i + batch]
                    vectors = embedder.embed([embedding_text(p) for p in payloads])
                    new.upsert([Chunk(payload=p, dense=list(v)) for p, v in zip(payloads, vectors)])
                    new.flush()
                    report.embedded += len(payloads)
                    if progress:
                        progress(report.carried + report.embedded)
            new.optimize()
        finally:
            new.close()
    finally:
        old.close()
    complete.touch()
    report.kept_at = _swap(data_dir)
    return report


def _load(path: Path) -> Any:
    try:
        return qe.EdgeShard.load(str(path), None)
    except Exception as exc:  # Edge says only that it could not open the shard
        raise ReembedRefused(f"cannot open the index at {path} (stop the searcher first): {exc}") from None


def _marker(shard: Any) -> dict[str, Any]:
    found = shard.retrieve([layout.SCHEMA_POINT_ID], True, False)
    return dict(found[0].payload or {}) if found else {}


def _pages(shard: Any) -> Iterator[list[tuple[Any, dict[str, Any]]]]:
    """Every point but the schema marker, a page at a time."""
    offset = None
    while True:
        page, offset = shard.scroll(
            qe.ScrollRequest(offset=offset, limit=layout.SCROLL_PAGE, with_payload=True, with_vector=False)
        )
        yield [(r.id, r.payload) for r in page if str(r.id) != layout.SCHEMA_POINT_ID]
        if offset is None or not page:
            return


def _ids(shard: Any) -> Iterator[str]:
    offset = None
    while True:
        page, offset = shard.scroll(qe.ScrollRequest(offset=offset, limit=layout.SCROLL_PAGE, with_payload=False,
                                                     with_vector=False))
        yield from (str(r.id) for r in page)
        if offset is None or not page:
            return


def _swap(data_dir: Path) -> Path | None:
    """The new index in the old one's place, the old one kept beside it (None when a
    cut swap had moved it already)."""
    current, target, complete = data_dir / INDEX, data_dir / NEXT, data_dir / COMPLETE
    kept = None
    if current.exists():
        kept = data_dir / f"{INDEX}.before-reembed-{time.strftime('%Y%m%dT%H%M%S')}"
        current.rename(kept)
    target.rename(current)
    complete.unlink()
    return kept
