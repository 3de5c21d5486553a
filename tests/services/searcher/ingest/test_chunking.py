"""split_text: size bound, paragraph/sentence boundaries, overlap, degenerate input."""

from __future__ import annotations

from pmsearch.services.searcher.ingest.chunking import split_text


def test_short_and_empty_text():
    assert split_text("", 100) == []
    assert split_text("  \n ", 100) == []
    assert split_text("One short paragraph.", 100) == ["One short paragraph."]


def test_paragraphs_are_packed_up_to_the_size():
    paras = [f"Paragraph {i} has a few words in it." for i in range(10)]
    chunks = split_text("\n\n".join(paras), 120)
    assert all(len(c) <= 120 for c in chunks)
    assert all(p in "".join(chunks) for p in paras)  # nothing lost
    assert chunks[0].startswith("Paragraph 0") and "\n\n" in chunks[0]


def test_long_paragraph_splits_at_sentences_with_overlap():
    sentences = [f"Sentence number {i} talks about the Golf claim." for i in range(30)]
    chunks = split_text(" ".join(sentences), 300, overlap=60)
    assert len(chunks) > 4 and all(len(c) <= 300 for c in chunks)
    assert all(c.endswith(".") and c[0].isupper() for c in chunks)
    for prev, nxt in zip(chunks, chunks[1:]):
        first = nxt.split(". ")[0] + "."
        assert first in prev  # the next chunk starts with the previous chunk's last sentence


def test_text_without_spaces_is_cut_hard():
    chunks = split_text("x" * 1000, 300)
    assert [len(c) for c in chunks] == [300, 300, 300, 100]
    chunks = split_text("word " * 200, 100)
    assert all(len(c) <= 100 for c in chunks)
