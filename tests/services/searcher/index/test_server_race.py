"""Two searcher replicas starting together against one Qdrant server: both see no
collection, one creates it, the other's create fails with the server's 409 and it must
carry on with the collection the first made (pmsearch/services/searcher/index/server.py)."""

from __future__ import annotations

import httpx
import pytest
from qdrant_client import QdrantClient
from qdrant_client.http.exceptions import UnexpectedResponse

from pmsearch.services.searcher.index.base import IndexFilter
from pmsearch.services.searcher.index.server import ServerIndex

from .conftest import DIM

pytestmark = pytest.mark.filterwarnings("ignore:Payload indexes have no effect:UserWarning")


def server_error(status: int, text: str) -> UnexpectedResponse:
    """The error qdrant-client raises for a server's answer of ``status``."""
    body = b'{"status":{"error":"%s"},"time":0.001}' % text.encode()
    return UnexpectedResponse(status, httpx.codes.get_reason_phrase(status), body, httpx.Headers())


class LateReplica(QdrantClient):
    """A client that checked before the other replica created the collection, so its
    own create reaches a server that already has it."""

    def __init__(self, shared: QdrantClient, error: UnexpectedResponse) -> None:
        self._shared, self._error = shared, error

    def collection_exists(self, collection_name: str, **kw) -> bool:
        return False

    def create_collection(self, collection_name: str, **kw) -> bool:
        assert self._shared.collection_exists(collection_name)
        raise self._error

    def __getattr__(self, name):
        return getattr(self._shared, name)


def test_a_collection_created_by_another_replica_meanwhile_is_used():
    client = QdrantClient(location=":memory:")
    ServerIndex(client, "mail", DIM)
    late = ServerIndex(LateReplica(client, server_error(409, "Wrong input: Collection `mail` already exists!")),
                       "mail", DIM)
    assert late.count(IndexFilter(tenant_id="acme", mailboxes=("main",))) == 0


def test_a_collection_another_replica_created_with_another_layout_is_refused():
    client = QdrantClient(location=":memory:")
    ServerIndex(client, "mail", DIM * 2)
    with pytest.raises(ValueError, match="no 384-d"):
        ServerIndex(LateReplica(client, server_error(409, "Wrong input: Collection `mail` already exists!")),
                    "mail", DIM)


def test_another_server_error_on_create_is_raised():
    client = QdrantClient(location=":memory:")
    ServerIndex(client, "mail", DIM)
    with pytest.raises(UnexpectedResponse):
        ServerIndex(LateReplica(client, server_error(403, "Forbidden")), "mail", DIM)
