"""Write files that hold secrets (passwords, tokens, API keys)."""

from __future__ import annotations

import os
import secrets
from pathlib import Path


def write_private(path: Path, text: str) -> None:
    """Write ``text`` to ``path``, readable and writable by its owner only.

    The file is born 0600 (a fresh temporary file opened with that mode, then renamed
    over ``path``): a chmod after writing would leave a window where the secret is
    readable, and opening an existing file keeps whatever mode it had."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(4)}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
