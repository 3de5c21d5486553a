"""Moving an index to another embedder: every point embedded again by the new model into
a new index that takes the old one's place, resumably, with the old one kept; the moved
index refuses the old embedder and answers the new one's queries."""

from __future__ import annotations

import time

import pytest
from typer.testing import CliRunner

from pmsearch.cli.main import app
from pmsearch.services.searcher.errors import ReembedRefused
from pmsearch.services.searcher.index import layout
from pmsearch.services.searcher.index.edge import EdgeIndex
from pmsearch.services.searcher.ingest.readers import read_path
from pmsearch.services.searcher.ingest.service import Ingester
from pmsearch.services.searcher.multilingual_embedder import USE_MODEL, UseEmbedder
from pmsearch.services.searcher.onnx_embedder import OnnxEmbedder
from pmsearch.services.searcher.reembed import INDEX, reembed
from pmsearch.services.searcher.repository import ScopedMailRepository
from pmsearch.shared.scope import Scope
from tests.fixtures.stack import DEMO

MINILM = "onnx:all-MiniLM-L6-v2"
USE_ID = f"use:{USE_MODEL}"
BOB = Scope(tenant_id="acme", principal="bob", mailboxes=("bob",), expires_at=time.time() + 3600)


@pytest.fixture
def data_dir(tmp_path):
    """A data folder with bob's demo mailbox embedded by MiniLM."""
    index = EdgeIndex(tmp_path / INDEX, 384, embedder=MINILM)
    report = Ingester(index, OnnxEmbedder(), 1200).ingest(
        "acme", "bob", [(r.raw, r.folder, r.label) for r in read_path(DEMO / "acme" / "bob")])
    assert report.error == 0
    index.close()
    return tmp_path


def _points(path) -> int:
    index = EdgeIndex(path, 512, embedder=USE_ID)
    try:
        return sum(1 for _ in index._all_payloads()) - 1  # less the schema marker
    finally:
        index.close()


def _index_id(path, dim: int, embedder: str) -> str:
    index = EdgeIndex(path, dim, embedder=embedder)
    try:
        return index.index_id
    finally:
        index.close()


def test_reembed_moves_every_point_to_the_new_embedder_and_keeps_the_old_index(data_dir):
    before_id = _index_id(data_dir / INDEX, 384, MINILM)
    report = reembed(data_dir, UseEmbedder(), USE_ID)
    assert report.previous == MINILM and report.embedded > 0 and report.carried == 0
    assert report.kept_at is not None and report.kept_at.is_dir()
    assert _points(data_dir / INDEX) == report.embedded
    with pytest.raises(layout.EmbedderMismatch):
        EdgeIndex(data_dir / INDEX, 384, embedder=MINILM)
    moved = EdgeIndex(data_dir / INDEX, 512, embedder=USE_ID)
    try:
        assert moved.index_id == before_id  # `pmsearch ingest` does not import the same mail again
        hits = ScopedMailRepository(moved, UseEmbedder()).search(BOB, "Lieferung der Paletten", "semantic", None, 3)
        assert hits
    finally:
        moved.close()


def test_a_cut_reembed_goes_on_where_it_stopped(data_dir):
    class Cut(Exception):
        pass

    def stop_after_first_batch(done: int) -> None:
        raise Cut

    with pytest.raises(Cut):
        reembed(data_dir, UseEmbedder(), USE_ID, batch=4, progress=stop_after_first_batch)
    again = reembed(data_dir, UseEmbedder(), USE_ID, batch=4)
    assert again.carried == 4
    assert _points(data_dir / INDEX) == again.carried + again.embedded


def test_an_index_embedded_by_the_configured_embedder_already_is_refused(data_dir):
    with pytest.raises(ReembedRefused, match="embedded by onnx:all-MiniLM-L6-v2 already"):
        reembed(data_dir, OnnxEmbedder(), MINILM)


def test_the_command_says_in_one_line_why_it_refuses(tmp_path, monkeypatch):
    monkeypatch.setenv("PM_EMBEDDING_BACKEND", "use")
    result = CliRunner().invoke(app, ["reembed", "--data", str(tmp_path)])
    assert result.exit_code == 1
    assert result.output.strip() == f"error: no index at {tmp_path / INDEX}"
