"""BM25 sparse vectors for the ``bm25`` named vector, the same in both adapters.

Decision: both adapters encode with Qdrant Edge's built-in ``Bm25`` (``qdrant-edge-py``),
an in-process library that needs no download, on the document side and the query side;
the collection's IDF modifier supplies the inverse document frequencies at query time,
counted over the caller's scope only (:func:`pmsearch.services.searcher.index.layout.idf_corpus`):
statistics over the tenant would let a score reveal mail outside the scope. (The Edge
adapter passes the same scoped IDF in the query's weights, from counts it keeps:
:mod:`pmsearch.services.searcher.index.idf`.)
qdrant-client cannot produce these vectors by itself: its BM25 is either fastembed
(downloads a model, unavailable here) or server-side inference (``Document(model=
"qdrant/bm25")``), which its local mode does not run and whose token ids nothing
guarantees to equal Edge's. So the server adapter computes sparse vectors client-side
with this module too, and a point written by either adapter scores identically in both.

Two things are added around the built-in: NFKC normalisation first (full-width letters
and ligatures would otherwise be distinct tokens), and the joined form of compound
identifiers ("INV-2024-0173" also yields "inv20240173"), because the built-in splits on
punctuation and an exact invoice or order number should match as one rare term, ahead of
mail that merely shares its parts.

The parameters are pinned rather than defaulted: changing any of them, or the
qdrant-edge-py version's tokeniser or stemmer, changes token ids or weights of new
points only, so existing points would need re-indexing.
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

from qdrant_edge import Bm25, Bm25Config, SparseVector, TokenizerType

K1 = 1.2
B = 0.75
# Tokens in a typical chunk after stop words; ingest chunks are at most ~1200 chars.
AVG_DOC_LEN = 120.0
LANGUAGE = "english"

# Two or more alphanumeric runs joined by single separators: INV-2024-0173, PO_88/12.
_COMPOUND = re.compile(r"[^\W_]+(?:[-_./][^\W_]+)+")
_DECIMAL = re.compile(r"\d+(?:\.\d+)+")
_MAX_COMPOUND = 48


@lru_cache(maxsize=1)
def _model() -> Bm25:
    return Bm25(
        Bm25Config(
            k=K1,
            b=B,
            avg_len=AVG_DOC_LEN,
            tokenizer=TokenizerType.Word,
            language=LANGUAGE,
            lowercase=True,
        )
    )


def prepare(text: str) -> str:
    """The text the built-in tokeniser sees: NFKC-normalised, with the joined form of
    each compound identifier appended."""
    text = unicodedata.normalize("NFKC", text)
    joined = []
    for match in _COMPOUND.finditer(text):
        token = match.group(0)
        # Decimals and IP addresses would collide with unrelated numbers once joined.
        if _DECIMAL.fullmatch(token):
            continue
        compact = re.sub(r"[-_./]", "", token)
        if len(compact) <= _MAX_COMPOUND:
            joined.append(compact)
    return f"{text} {' '.join(joined)}" if joined else text


def document_vector(text: str) -> tuple[list[int], list[float]]:
    """Indices and BM25 term weights (saturated tf, length-normalised) of a chunk."""
    return _pair(_model().embed_document(prepare(text)))


def query_vector(text: str) -> tuple[list[int], list[float]]:
    """Indices of the query's distinct terms, each weighted 1; empty for stop words only."""
    return _pair(_model().embed_query(prepare(text)))


def _pair(vector: SparseVector) -> tuple[list[int], list[float]]:
    return list(vector.indices), list(vector.values)
