"""A collection laid out for a Qdrant cluster (PM_QDRANT_SHARDS, PM_QDRANT_REPLICATION,
PM_QDRANT_SHARD_BY_TENANT; services/searcher/index/server.py). qdrant-client's local
mode knows no shards, so the client here records what the adapter asks of a cluster
(the collection's shard layout, the shard keys it creates, the key each write names)
and runs the rest on local mode: as far as the client allows without a cluster."""

from __future__ import annotations

from datetime import UTC, datetime

from qdrant_client import QdrantClient

from pmsearch.services.searcher.index import open_index
from pmsearch.services.searcher.index.base import Chunk, ChunkPayload, IndexFilter, delivery_key
from pmsearch.services.searcher.index.server import META_KEY, ServerIndex, Sharding
from pmsearch.shared.settings import SearcherSettings

DIM = 4


class ClusterClient(QdrantClient):
    """Local mode, recording what would go to a cluster."""

    def __init__(self) -> None:
        super().__init__(location=":memory:")
        self.created: dict = {}
        self.shard_keys: list[tuple[str, int | None, int | None]] = []
        self.upserted_under: list[str | None] = []

    def create_collection(self, collection_name, **kwargs):
        self.created = kwargs
        return super().create_collection(collection_name, **{k: v for k, v in kwargs.items() if k != "sharding_method"})

    def create_shard_key(self, collection_name, shard_key, shards_number=None, replication_factor=None, **kwargs):
        self.shard_keys.append((shard_key, shards_number, replication_factor))
        return True

    def upsert(self, collection_name, points, shard_key_selector=None, **kwargs):
        self.upserted_under.append(shard_key_selector)
        return super().upsert(collection_name, points, **kwargs)


def chunk(tenant: str, message: str) -> Chunk:
    payload = ChunkPayload(
        tenant_id=tenant, message_id=message, rfc_message_id=f"<{message}@example>", deliveries=[delivery_key("main", "INBOX")],
        thread_id=f"t-{message}", sender="a@example", sender_email="a@example", recipients=["b@example"],
        date=datetime(2024, 4, 1, tzinfo=UTC), subject="Invoice", normalized_subject="invoice",
        text="Invoice INV-1 is paid.", chunk_no=0,
    )
    return Chunk(payload=payload, dense=[1.0, 0.0, 0.0, 0.0])


def test_a_collection_sharded_by_tenant_writes_each_tenants_points_under_its_own_shard_key():
    client = ClusterClient()
    index = ServerIndex(client, "pm_mail", DIM, sharding=Sharding(shards=2, replication=2, by_tenant=True))
    assert client.created["shard_number"] == 2 and client.created["replication_factor"] == 2
    assert str(client.created["sharding_method"]).lower().endswith("custom")
    index.upsert([chunk("acme", "m1"), chunk("globex", "m2"), chunk("acme", "m3")])
    index.upsert([chunk("acme", "m4")])
    assert client.shard_keys == [(META_KEY, 2, 2), ("acme", 2, 2), ("globex", 2, 2)]  # each created once
    assert client.upserted_under[-3:] == ["acme", "globex", "acme"]
    hits = index.scroll(IndexFilter(tenant_id="acme", mailboxes=["main"]))
    assert sorted(h.message_id for h in hits) == ["m1", "m3", "m4"]


def test_an_unsharded_collection_names_no_shard_key_and_keeps_the_servers_defaults():
    client = ClusterClient()
    index = ServerIndex(client, "pm_mail", DIM)
    index.upsert([chunk("acme", "m1")])
    assert client.created["shard_number"] is None and client.created["sharding_method"] is None
    assert client.shard_keys == [] and set(client.upserted_under) == {None}


def test_the_settings_reach_the_adapter(monkeypatch):
    monkeypatch.setattr("qdrant_client.QdrantClient", lambda **kwargs: ClusterClient())
    settings = SearcherSettings(
        qdrant_url=":memory:", qdrant_shards=3, qdrant_replication=2, qdrant_shard_by_tenant=True,
        scope_key="k" * 40,
    )
    index = open_index(settings, DIM)
    assert index.sharding == Sharding(shards=3, replication=2, by_tenant=True)
