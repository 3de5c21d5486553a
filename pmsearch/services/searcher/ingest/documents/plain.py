"""RTF documents, by striprtf. (CSV files are read as the text they are: each line a
table row, ``pmsearch.shared.text.sentences.table_sentences``.)"""

from __future__ import annotations

from pmsearch.services.searcher.ingest.documents.errors import Unreadable
from pmsearch.services.searcher.ingest.documents.layout import Budget

Extracted = tuple[str | None, bool, list[str]]


def rtf_text(data: bytes, room: int) -> Extracted:
    from striprtf.striprtf import rtf_to_text

    source = data.decode("latin-1")  # RTF is 7-bit; its escapes name the real characters
    if not source.lstrip().startswith("{\\rtf"):
        raise Unreadable("not an RTF document")
    try:
        text = rtf_to_text(source, errors="replace")
    except Exception as exc:  # noqa: BLE001 - a broken file costs only itself
        raise Unreadable(f"not a readable RTF document ({type(exc).__name__})") from None
    out = Budget(room)
    for line in text.splitlines():
        if line.strip() and not out.add(" ".join(line.split())):
            break
    return (*out.text(), [])
