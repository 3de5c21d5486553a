"""Turning MIME leaf payloads into plain text: charsets, HTML and PDF.

Everything here is total: bad input degrades to replacement characters or ``None``, never
to an exception, because one odd part must not cost the rest of a message. The one
exception is ``MemoryError``, which the parsing subprocess (``sandbox.py``) must see to
report the part as over its memory limit.
"""

from __future__ import annotations

import codecs
import io
import logging
import re
from html.parser import HTMLParser

from pmsearch.shared.attachment_places import page_heading

# The default cap for callers outside the parser, which applies its own per-message
# budget (IngestLimits.max_text_chars) instead.
MAX_TEXT_CHARS = 1_000_000
MAX_PDF_PAGES = 300

# Labels that mail clients send but that Python's codec registry does not know, or that
# in practice mean a superset: WHATWG decodes iso-8859-1/us-ascii as windows-1252 because
# senders routinely put curly quotes and the euro sign (0x80-0x9f) under those labels.
_ALIASES = {
    "iso-8859-1": "cp1252",
    "latin1": "cp1252",
    "latin-1": "cp1252",
    "us-ascii": "cp1252",
    "ascii": "cp1252",
    "x-sjis": "shift_jis",
    "ks_c_5601-1987": "cp949",
    "gb2312": "gb18030",
    "gbk": "gb18030",
    "unknown-8bit": "",
    "x-unknown": "",
    "default": "",
}


# Codecs Python has but a mail's charset must not pick: they refuse errors="replace",
# decode in quadratic time or read Python string escapes (and warn on bad ones).
_NOT_FOR_MAIL = {"idna", "punycode", "undefined", "unicode_escape", "raw_unicode_escape"}
_SURROGATE = re.compile("[\ud800-\udfff]")


def _codec(label: str) -> str:
    """``label`` if Python can decode mail with it, else ''."""
    try:
        name = codecs.lookup(label).name
    except (LookupError, ValueError, UnicodeError):  # unknown, or a NUL or surrogate in it
        return ""
    return "" if name.replace("-", "_") in _NOT_FOR_MAIL else label


def decode_bytes(data: bytes, charset: str | None) -> str:
    """Decode with the declared charset, falling back sensibly when it lies or is unknown."""
    label = (charset or "").strip().strip('"').lower()
    label = _codec(_ALIASES.get(label, label)) if label else ""
    if label == "cp1252":
        try:
            return data.decode("cp1252")
        except UnicodeDecodeError:
            # cp1252 leaves five bytes undefined; latin-1 maps every byte.
            return data.decode("latin-1")
    if label:
        try:
            # utf-7 can decode to lone surrogates, which nothing downstream (JSON,
            # Redis, the index) accepts.
            return _SURROGATE.sub("\ufffd", data.decode(label, errors="replace"))
        except LookupError:
            pass  # base64, zlib, rot13, ...: codecs, but not text encodings
    # No usable label: UTF-8 if it is valid UTF-8, else the most common legacy charset.
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return data.decode("cp1252", errors="replace")


def clean_text(text: str, limit: int | None = MAX_TEXT_CHARS) -> str:
    """Normalise newlines, drop NULs and trailing spaces, squeeze blank-line runs.
    ``limit=None`` when the caller has already bounded the text (the parser's budget)."""
    text = text if limit is None else text[:limit]
    text = text.replace("\r\n", "\n").replace("\r", "\n").replace("\x00", "")
    text = _SURROGATE.sub("\ufffd", text)  # e.g. from a PDF's own character map
    text = "\n".join(line.rstrip() for line in text.split("\n"))
    return re.sub(r"\n{3,}", "\n\n", text).strip()


_SKIP = {"script", "style", "head", "title", "noscript", "template", "svg", "object"}
_BLOCK = {
    "p", "div", "section", "article", "header", "footer", "aside", "nav", "main", "form",
    "table", "thead", "tbody", "tfoot", "ul", "ol", "dl", "dt", "dd", "blockquote",
    "pre", "address", "figure", "figcaption", "fieldset", "center",
    "h1", "h2", "h3", "h4", "h5", "h6",
}
_SPACES = re.compile(r"[ \t\r\n\f\v\u00a0]+")


class _HtmlToText(HTMLParser):
    """A small HTML-to-text pass: block structure as newlines, links as ``text (url)``."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.out: list[str] = []
        self.skip = 0
        self.pre = 0
        self.links: list[tuple[str, int]] = []  # (href, position in out when <a> opened)
        self.cells = 0
        self.size = 0  # characters of text so far, so a caller can stop feeding

    def _newline(self, n: int = 1) -> None:
        self.out.append("\n" * n)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in _SKIP:
            self.skip += 1
        elif tag == "br":
            self._newline()
        elif tag in _BLOCK:
            self._newline(2 if tag in {"p", "h1", "h2", "h3", "table", "blockquote"} else 1)
            if tag == "pre":
                self.pre += 1
        elif tag == "li":
            self.out.append("\n- ")
        elif tag == "tr":
            self.cells = 0
            self._newline()
        elif tag in {"td", "th"}:
            if self.cells:
                self.out.append(" | ")
            self.cells += 1
        elif tag == "hr":
            self._newline(2)
        elif tag == "a":
            href = dict(attrs).get("href") or ""
            self.links.append((href.strip(), len(self.out)))
        elif tag == "img":
            alt = (dict(attrs).get("alt") or "").strip()
            if alt:
                self.out.append(f" {alt} ")

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag not in _SKIP:  # <script/> must not open a skip region that never closes
            self.handle_starttag(tag, attrs)

    def handle_endtag(self, tag: str) -> None:
        if tag in _SKIP:
            self.skip = max(0, self.skip - 1)
        elif tag in _BLOCK:
            if tag == "pre":
                self.pre = max(0, self.pre - 1)
            self._newline(2 if tag in {"p", "h1", "h2", "h3", "table", "blockquote"} else 1)
        elif tag == "a" and self.links:
            href, start = self.links.pop()
            shown = "".join(self.out[start:]).strip()
            # Keep the target readable, but skip it when it would only repeat the text.
            if href.lower().startswith(("http://", "https://", "mailto:")):
                bare = href.split(":", 1)[1].lstrip("/") if href.lower().startswith("mailto:") else href
                if bare.rstrip("/") not in shown and shown not in (href, bare):
                    self.out.append(f" ({bare})" if shown else bare)

    def handle_data(self, data: str) -> None:
        if self.skip:
            return
        text = data if self.pre else _SPACES.sub(" ", data)
        self.size += len(text)
        self.out.append(text)

    def text(self) -> str:
        joined = "".join(self.out)
        # Per-line squeeze: <pre> keeps its line breaks, just not its indentation.
        lines = [re.sub(r"[ \t\u00a0]+", " ", ln).strip() for ln in joined.split("\n")]
        return clean_text("\n".join(lines), limit=None)


def html_to_text(html: str) -> str:
    """Readable plain text from HTML mail: no tags, scripts or styles; links kept."""
    return html_text(html, MAX_TEXT_CHARS)[0]


def html_text(html: str, max_chars: int) -> tuple[str, bool]:
    """At most ``max_chars`` of text from ``html``, and whether some was left out.

    Fed in slices so that a huge document stops costing time once the text is long enough.
    """
    parser = _HtmlToText()
    step = 65536
    try:
        for start in range(0, len(html), step):
            parser.feed(html[start:start + step])
            if parser.size > max_chars:
                break
        else:
            parser.close()
    except MemoryError:
        raise
    except Exception:  # HTMLParser is lenient, but a pathological document must not kill ingest
        # [^<>] keeps the fallback linear: a run of "<" cannot make it rescan the text.
        text = clean_text(re.sub(r"<[^<>]*>", " ", html), limit=None)
        return text[:max_chars], len(text) > max_chars
    text = parser.text()
    return text[:max_chars], parser.size > max_chars or len(text) > max_chars


def pdf_to_text(data: bytes) -> str | None:
    """Text of a PDF, or ``None`` when it is broken, encrypted or has no text layer."""
    return pdf_text(data, MAX_TEXT_CHARS)[0]


def pdf_text(data: bytes, max_chars: int) -> tuple[str | None, bool]:
    """At most ``max_chars`` of a PDF's text (``None`` when it has none we can read), and
    whether some was left out. Pages are read only until there is enough text; a file of
    several pages has each page's number as a line before its text.

    Run this where time and memory are bounded (the parsing subprocess): pypdf on a
    hostile file can take long and allocate much."""
    logging.getLogger("pypdf").setLevel(logging.ERROR)  # broken PDFs are expected here
    cut = False
    try:
        from pypdf import PdfReader

        reader = PdfReader(io.BytesIO(data), strict=False)
        if reader.is_encrypted:
            try:
                reader.decrypt("")  # many "protected" PDFs use an empty user password
            except MemoryError:
                raise
            except Exception:
                return None, False
        parts: list[str] = []
        size = 0
        pages = reader.pages
        cut = len(pages) > MAX_PDF_PAGES
        # Each page of a longer file opens with its number: an answer names the page it
        # cites (pmsearch.shared.attachment_places).
        numbered = len(pages) > 1
        said = False  # a scan's pages have numbers and no text: no text
        for number, page in enumerate(pages[:MAX_PDF_PAGES], start=1):
            if size > max_chars:
                cut = True
                break
            part = page.extract_text() or ""
            said = said or bool(part.strip())
            if numbered:
                part = f"{page_heading(number, len(pages))}\n{part}"
            parts.append(part)
            size += len(part)
    except MemoryError:
        raise
    except Exception:
        return None, False
    if not said:
        return None, cut
    text = clean_text("\n\n".join(parts), limit=None)
    return (text[:max_chars] or None), cut or len(text) > max_chars
