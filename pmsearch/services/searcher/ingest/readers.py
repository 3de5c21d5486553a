"""Raw messages out of the places mail lives: .eml files, mbox, Maildir, folders of .eml.

Readers only find bytes; they never parse, so one bad message is reported by the
ingester under its label (``path:index``) and the rest still flows. Each message also
has a ``source_id``: what identifies it in its source (a Maildir key, an .eml file's path,
size and modification time, an mbox message's digest), so a re-import can pass over what
it imported before without reading, or for an mbox without sending, it again.
"""

from __future__ import annotations

import hashlib
import mailbox
from pathlib import Path
from typing import Callable, Iterable, Iterator, NamedTuple

from pmsearch.services.searcher.errors import UnreadableSource

DEFAULT_FOLDER = "INBOX"


class RawMessage(NamedTuple):
    raw: bytes
    folder: str
    label: str  # where it came from, for one-line error reports
    source_id: str = ""  # what identifies it in its source (see the module's docstring)


Skip = Callable[[str], bool]


def _never(_: str) -> bool:
    return False


def read_path(path: str | Path, *, folder: str | None = None, skip: Skip = _never) -> Iterator[RawMessage]:
    """Every raw message under ``path``, whatever the format, but those whose
    ``source_id`` ``skip`` answers True for.

    A file starting with an mbox ``From `` line is an mbox, any other file one message;
    a directory with ``cur``/``new`` is a Maildir, any other directory is searched for
    ``.eml`` files, each subdirectory's path being the folder name.
    """
    p = Path(path)
    if p.is_file():
        if _is_mbox(p):
            yield from read_mbox(p, folder=folder or DEFAULT_FOLDER, skip=skip)
        elif not skip(sid := _file_id(p, p.name)):
            yield RawMessage(p.read_bytes(), folder or DEFAULT_FOLDER, str(p), sid)
    elif p.is_dir():
        if is_maildir(p):
            yield from read_maildir(p, skip=skip)
        else:
            yield from read_eml_dir(p, folder=folder, skip=skip)
    else:
        raise UnreadableSource(f"{p}: no such file or directory")


def count_messages(path: str | Path) -> int:
    """How many messages :func:`read_path` would yield with nothing skipped, found
    without reading them (an mbox is scanned for its separator lines)."""
    p = Path(path)
    if p.is_file():
        if not _is_mbox(p):
            return 1
        box = mailbox.mbox(str(p), create=False)
        try:
            return len(box)
        finally:
            box.close()
    if not p.is_dir():
        raise UnreadableSource(f"{p}: no such file or directory")
    if is_maildir(p):
        root = mailbox.Maildir(str(p), factory=None, create=False)
        return sum(len(box) for box, _ in _maildir_boxes(root, DEFAULT_FOLDER))
    return sum(1 for f in p.rglob("*") if f.is_file() and f.suffix.lower() == ".eml")


def _file_id(f: Path, rel: str) -> str:
    st = f.stat()
    return f"file:{rel}:{st.st_size}:{st.st_mtime_ns}"


def _is_mbox(p: Path) -> bool:
    with p.open("rb") as fh:
        head = fh.read(5)
    return head == b"From " or p.suffix.lower() in {".mbox", ".mbx"}


def read_mbox(path: str | Path, *, folder: str = DEFAULT_FOLDER, skip: Skip = _never) -> Iterator[RawMessage]:
    box = mailbox.mbox(str(path), create=False)
    try:
        for n, key in enumerate(box.iterkeys(), start=1):
            # get_bytes leaves out the "From " separator line, which is not part of the message.
            raw = box.get_bytes(key)
            # Positions shift when a message above is deleted: the bytes are the identity.
            sid = "sha256:" + hashlib.sha256(raw).hexdigest()
            if not skip(sid):
                yield RawMessage(raw, folder, f"{path}:{n}", sid)
    finally:
        box.close()


def is_maildir(p: Path) -> bool:
    return (p / "cur").is_dir() and (p / "new").is_dir()


def read_maildir(path: str | Path, *, skip: Skip = _never) -> Iterator[RawMessage]:
    """The Maildir's own messages as INBOX, then each (Maildir++) subfolder by name."""
    root = mailbox.Maildir(str(path), factory=None, create=False)
    for box, folder in _maildir_boxes(root, DEFAULT_FOLDER):
        for key in sorted(box.iterkeys()):  # sorted: reruns report errors in the same order
            # A Maildir key names one delivery for good (flags live outside it), so it
            # identifies the message without reading it.
            sid = f"maildir:{folder}/{key}"
            if not skip(sid):
                yield RawMessage(box.get_bytes(key), folder, f"{path}:{folder}/{key}", sid)


def _maildir_boxes(box: mailbox.Maildir, folder: str) -> Iterator[tuple[mailbox.Maildir, str]]:
    yield box, folder
    prefix = "" if folder == DEFAULT_FOLDER else f"{folder}/"
    for name in sorted(box.list_folders()):
        yield from _maildir_boxes(box.get_folder(name), f"{prefix}{name}")


def read_eml_dir(path: str | Path, *, folder: str | None = None, skip: Skip = _never) -> Iterator[RawMessage]:
    """``*.eml`` below ``path``; the subdirectory path (``Archive/2023``) is the folder."""
    root = Path(path)
    for f in sorted(root.rglob("*")):
        if not f.is_file() or f.suffix.lower() != ".eml":
            continue
        rel = f.parent.relative_to(root).as_posix()
        sid = _file_id(f, f.relative_to(root).as_posix())
        if not skip(sid):
            yield RawMessage(f.read_bytes(), folder or (DEFAULT_FOLDER if rel == "." else rel), str(f), sid)


def batches(items: Iterable[RawMessage], max_count: int, max_bytes: int) -> Iterator[list[RawMessage]]:
    """Consecutive batches of at most ``max_count`` messages and ``max_bytes`` raw bytes,
    so that a batch of large messages stays a bounded request; a message larger than
    ``max_bytes`` on its own is a batch of one."""
    batch: list[RawMessage] = []
    size = 0
    for item in items:
        if batch and (len(batch) >= max_count or size + len(item.raw) > max_bytes):
            yield batch
            batch, size = [], 0
        batch.append(item)
        size += len(item.raw)
    if batch:
        yield batch


def demo_mailboxes(root: str | Path) -> list[tuple[str, str, Path]]:
    """``(tenant, mailbox, path)`` for a tree laid out as ``<tenant>/<mailbox>/<folder>/``
    (the demo data's layout); names starting with ``.`` or ``_`` are skipped."""
    out = []
    for tenant in sorted(Path(root).iterdir()):
        if not tenant.is_dir() or tenant.name[0] in "._":
            continue
        for box in sorted(tenant.iterdir()):
            if box.is_dir() and box.name[0] not in "._":
                out.append((tenant.name, box.name, box))
    return out
