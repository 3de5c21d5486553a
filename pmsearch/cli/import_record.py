"""What `pmsearch ingest` imported from a source before, so a re-import reads and sends
only what is new.

One append-only file per (index, tenant, mailbox, source path) under
``<var>/ingest/``: a header line, then one source id per line (see
:mod:`pmsearch.services.searcher.ingest.readers`) for each message the searcher confirmed as
indexed or already present. The index's id is in the file's name, so a rebuilt or
replaced index starts a new record instead of trusting the old one. Lines are written
after the searcher's reply, so a killed import leaves at most a batch unrecorded, which
the next run sends again (the searcher then reports it already present).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import IO, Iterable


class ImportRecord:
    def __init__(self, file: Path, header: dict[str, str]) -> None:
        self.file = file
        self.done: set[str] = set()
        cut = False
        if file.exists():
            with file.open("r", encoding="utf-8") as fh:
                next(fh, None)  # the header
                for line in fh:
                    cut = not line.endswith("\n")
                    if not cut:  # a line cut by a kill is not a record
                        self.done.add(line[:-1])
        file.parent.mkdir(parents=True, exist_ok=True)
        self._fh: IO[str] = file.open("a", encoding="utf-8")
        if cut:
            self._fh.write("\n")
        if self._fh.tell() == 0:
            self._fh.write(json.dumps(header, sort_keys=True) + "\n")
            self._fh.flush()

    @classmethod
    def open(cls, var_dir: Path, index_id: str, tenant: str, mailbox: str, source: Path) -> ImportRecord:
        header = {"index_id": index_id, "tenant": tenant, "mailbox": mailbox, "source": str(source.resolve())}
        name = hashlib.sha256(json.dumps(header, sort_keys=True).encode()).hexdigest()[:24]
        return cls(var_dir / "ingest" / f"{name}.log", header)

    def has(self, source_id: str) -> bool:
        return bool(source_id) and source_id in self.done

    def add(self, source_ids: Iterable[str]) -> None:
        new = [s for s in source_ids if s and s not in self.done]
        if new:
            self._fh.write("".join(f"{s}\n" for s in new))
            self._fh.flush()
            self.done.update(new)

    def close(self) -> None:
        self._fh.close()
