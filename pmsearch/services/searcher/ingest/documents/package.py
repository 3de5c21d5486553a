"""Office and OpenDocument files are ZIP packages of XML parts: what is checked before a
library opens one, so that a hostile file costs only itself.

ZIP headers declare each part's sizes, and Python's ``zipfile`` never returns more than
a part's declared size (a part that inflates past it fails its CRC check), so checking
the declared sizes bounds what any reader below can unpack. The parsing subprocess's
memory and time limits remain the backstop."""

from __future__ import annotations

import io
import zipfile
from collections.abc import Callable
from typing import TypeVar

from pmsearch.services.searcher.ingest.documents.errors import Unreadable

T = TypeVar("T")
MB = 1024 * 1024
MAX_PARTS = 5_000
MAX_UNPACKED_BYTES = 200 * MB  # all parts together, as declared
# Unpacked over packed, per part above a megabyte: XML packs about 10 to 1, a sheet of
# repeated values up to about 100 to 1; a bomb by thousands.
MAX_RATIO = 250
PROLOG_BYTES = 4096  # a DTD can only stand before the root element
# A password-protected OOXML file is an OLE compound file (the legacy .doc/.xls one too).
OLE_MAGIC = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"


def open_package(data: bytes) -> tuple[zipfile.ZipFile, list[str]]:
    """The package, checked, and notes on what it holds that is never acted on (macros,
    links to other files); :class:`Unreadable` when it must not be opened."""
    if data.startswith(OLE_MAGIC):
        raise Unreadable("encrypted with a password, or a legacy binary Office file: not read")
    try:
        package = zipfile.ZipFile(io.BytesIO(data))
        parts = package.infolist()
    except (zipfile.BadZipFile, zipfile.LargeZipFile, ValueError, EOFError, OSError) as exc:
        raise Unreadable(f"not a readable ZIP package ({exc})") from None
    if len(parts) > MAX_PARTS:
        raise Unreadable(f"{len(parts):,} parts in its ZIP package, more than {MAX_PARTS:,}: not read")
    unpacked = 0
    for part in parts:
        if part.flag_bits & 0x1:
            raise Unreadable("encrypted: not read")
        unpacked += part.file_size
        if part.file_size > MB and part.file_size > MAX_RATIO * max(part.compress_size, 1):
            raise Unreadable(
                f"a decompression bomb: {part.filename} unpacks {part.file_size / max(part.compress_size, 1):,.0f} "
                f"times its size (at most {MAX_RATIO}): not read"
            )
    if unpacked > MAX_UNPACKED_BYTES:
        raise Unreadable(f"unpacks to {unpacked / MB:,.0f} MB, more than {MAX_UNPACKED_BYTES // MB} MB: not read")
    names = [p.filename for p in parts]
    if "META-INF/manifest.xml" in names and b"encryption-data" in _read(package, "META-INF/manifest.xml", 1 << 20):
        raise Unreadable("encrypted with a password: not read")
    for name in names:
        if name.endswith((".xml", ".rels")) and _declares_entities(_read(package, name, PROLOG_BYTES)):
            raise Unreadable(f"{name} declares a DTD or entities (an entity expansion attack): not read")
    notes = []
    if any(n.lower().endswith("vbaproject.bin") for n in names):
        notes.append("holds macros, which were not run")
    if any("externallink" in n.lower() for n in names):
        notes.append("links to other files, which were not opened")
    return package, notes


def _read(package: zipfile.ZipFile, name: str, limit: int) -> bytes:
    try:
        with package.open(name) as part:
            return part.read(limit)
    except (zipfile.BadZipFile, OSError, EOFError, RuntimeError, NotImplementedError):
        return b""


_MARKS = tuple(mark.encode(enc) for mark in ("<!DOCTYPE", "<!ENTITY") for enc in ("utf-8", "utf-16-le", "utf-16-be"))


def _declares_entities(prolog: bytes) -> bool:
    return any(mark in prolog for mark in _MARKS)


def checked(data: bytes) -> list[str]:
    """:func:`open_package`'s checks and notes, for a library that opens the bytes itself."""
    package, notes = open_package(data)
    package.close()
    return notes


def opened(data: bytes, what: str, opener: Callable[[io.BytesIO], T]) -> tuple[T, list[str]]:
    """The file as its library opens it (``opener``), once the package passed its
    checks, with their notes; :class:`Unreadable` ("not a readable <what>") when the
    library cannot open it: a broken file costs only itself."""
    notes = checked(data)
    try:
        return opener(io.BytesIO(data)), notes
    except Exception as exc:  # noqa: BLE001 - whatever a library raises on a broken file
        raise Unreadable(f"not a readable {what} ({type(exc).__name__})") from None
