"""Raw messages out of the places mail lives: .eml files, mbox, Maildir, folders of .eml.

Readers only find bytes; they never parse, so one bad message is reported by the
ingester under its label (``path:index``) and the rest still flows.
"""

from __future__ import annotations

import mailbox
from pathlib import Path
from typing import Iterator, NamedTuple, Sequence

from services.searcher.errors import UnreadableSource

DEFAULT_FOLDER = "INBOX"


class RawMessage(NamedTuple):
    raw: bytes
    folder: str
    label: str  # where it came from, for one-line error reports


def read_path(path: str | Path, *, folder: str | None = None) -> Iterator[RawMessage]:
    """Every raw message under ``path``, whatever the format.

    A file starting with an mbox ``From `` line is an mbox, any other file one message;
    a directory with ``cur``/``new`` is a Maildir, any other directory is searched for
    ``.eml`` files, each subdirectory's path being the folder name.
    """
    p = Path(path)
    if p.is_file():
        if _is_mbox(p):
            yield from read_mbox(p, folder=folder or DEFAULT_FOLDER)
        else:
            yield RawMessage(p.read_bytes(), folder or DEFAULT_FOLDER, str(p))
    elif p.is_dir():
        if is_maildir(p):
            yield from read_maildir(p)
        else:
            yield from read_eml_dir(p, folder=folder)
    else:
        raise UnreadableSource(f"{p}: no such file or directory")


def _is_mbox(p: Path) -> bool:
    with p.open("rb") as fh:
        head = fh.read(5)
    return head == b"From " or p.suffix.lower() in {".mbox", ".mbx"}


def read_mbox(path: str | Path, *, folder: str = DEFAULT_FOLDER) -> Iterator[RawMessage]:
    box = mailbox.mbox(str(path), create=False)
    try:
        for n, key in enumerate(box.iterkeys(), start=1):
            # get_bytes leaves out the "From " separator line, which is not part of the message.
            yield RawMessage(box.get_bytes(key), folder, f"{path}:{n}")
    finally:
        box.close()


def is_maildir(p: Path) -> bool:
    return (p / "cur").is_dir() and (p / "new").is_dir()


def read_maildir(path: str | Path) -> Iterator[RawMessage]:
    """The Maildir's own messages as INBOX, then each (Maildir++) subfolder by name."""
    root = mailbox.Maildir(str(path), factory=None, create=False)
    yield from _maildir_messages(root, DEFAULT_FOLDER, Path(path))
    yield from _maildir_folders(root, "", Path(path))


def _maildir_folders(box: mailbox.Maildir, prefix: str, path: Path) -> Iterator[RawMessage]:
    for name in sorted(box.list_folders()):
        sub = box.get_folder(name)
        full = f"{prefix}{name}"
        yield from _maildir_messages(sub, full, path)
        yield from _maildir_folders(sub, f"{full}/", path)


def _maildir_messages(box: mailbox.Maildir, folder: str, path: Path) -> Iterator[RawMessage]:
    for key in sorted(box.iterkeys()):  # sorted: reruns report errors in the same order
        yield RawMessage(box.get_bytes(key), folder, f"{path}:{folder}/{key}")


def read_eml_dir(path: str | Path, *, folder: str | None = None) -> Iterator[RawMessage]:
    """``*.eml`` below ``path``; the subdirectory path (``Archive/2023``) is the folder."""
    root = Path(path)
    for f in sorted(root.rglob("*")):
        if not f.is_file() or f.suffix.lower() != ".eml":
            continue
        rel = f.parent.relative_to(root).as_posix()
        yield RawMessage(f.read_bytes(), folder or (DEFAULT_FOLDER if rel == "." else rel), str(f))


def batches(items: Sequence[RawMessage], max_count: int, max_bytes: int) -> Iterator[list[RawMessage]]:
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
