"""The mail index: :func:`open_index` picks the adapter the settings ask for."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pmsearch.services.searcher.index.base import MailIndex

if TYPE_CHECKING:
    from pmsearch.shared.settings import SearcherSettings


def open_index(settings: SearcherSettings, dim: int, embedder: str | None = None) -> MailIndex:
    """A Qdrant server index when ``PM_QDRANT_URL`` is set (``:memory:`` gives
    qdrant-client's local mode, for tests and baselines), else the embedded Qdrant Edge
    shard under the data directory. ``embedder`` is checked against (or recorded in) the
    index, see :func:`pmsearch.services.searcher.embedding.embedder_id`."""
    # Imported here so a deployment loads only the client library it uses.
    if settings.qdrant_url:
        from qdrant_client import QdrantClient

        from pmsearch.services.searcher.index.server import ServerIndex, Sharding

        api_key = settings.qdrant_api_key.get_secret_value() if settings.qdrant_api_key else None
        client = QdrantClient(location=settings.qdrant_url, api_key=api_key)
        sharding = Sharding(settings.qdrant_shards, settings.qdrant_replication, settings.qdrant_shard_by_tenant)
        return ServerIndex(client, settings.collection, dim, embedder=embedder, sharding=sharding)
    from pmsearch.services.searcher.index.edge import EdgeIndex

    return EdgeIndex(settings.data_dir / "qdrant-edge", dim, embedder=embedder)


__all__ = ["MailIndex", "open_index"]
