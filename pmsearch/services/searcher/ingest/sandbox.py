"""Parsing mail in a separate process with bounded memory, CPU and wall-clock time.

The MIME parser and, above all, PDF and HTML extraction run over hostile bytes: a crafted
PDF can make pypdf loop or allocate without end, and a message of a million tiny MIME
parts costs minutes of parsing. In the searcher that would stall every search and the
write lock, or kill the process. So the searcher hands each raw message to a child
process that has an address-space limit (``RLIMIT_AS``) and a CPU limit. The child stops
a PDF or HTML part, and a whole message, at its time limit itself (a timer signal); the
parent kills a child that does not answer shortly after that (stuck in C code, or dead)
and starts a new one for the next message.

The protocol is deliberately plain: length-prefixed JSON and bytes over the child's
stdin and stdout (never pickle, which would let a subverted child run code in the
searcher). The child sees no environment, so it holds none of the searcher's secrets.
"""

from __future__ import annotations

import json
import logging
import math
import os
import select
import struct
import subprocess
import sys
import threading
from dataclasses import asdict
from pathlib import Path
from typing import BinaryIO

from pmsearch.services.searcher.errors import IngestError, MalformedMessage, MessageTooLarge
from pmsearch.services.searcher.ingest.limits import IngestLimits, PartTimeout, time_limit
from pmsearch.services.searcher.ingest.schemas import ParsedMessage

log = logging.getLogger("pmsearch.searcher.sandbox")

_REQUEST = struct.Struct(">II")  # header length, raw message length
_REPLY = struct.Struct(">I")
_ERRORS: dict[str, type[IngestError]] = {c.code: c for c in (MalformedMessage, MessageTooLarge)}
# The root that holds the ``pmsearch`` package, for a child started without our sys.path.
_ROOT = str(Path(__file__).resolve().parents[4])
_BOOT = "import sys; sys.path.insert(0, sys.argv[1]); from pmsearch.services.searcher.ingest.sandbox import main; main()"
# The child stops itself at the parse timeout; the parent waits this much longer before
# it kills a child stuck where a timer cannot interrupt it (inside C code).
_GRACE_SECONDS = 2.0
_START_SECONDS = 60.0  # for the child's imports, on a busy machine
_READY = b"R"


class Sandbox:
    """A parsing child process, started on first use and restarted after it is killed.

    Thread-safe; messages are parsed one at a time, which is how the searcher ingests."""

    def __init__(self, limits: IngestLimits) -> None:
        self.limits = limits
        self._lock = threading.Lock()
        self._proc: subprocess.Popen[bytes] | None = None

    def parse(self, raw: bytes, *, folder: str = "INBOX") -> ParsedMessage:
        """:func:`parse_message` in the child; raises what it raises, or
        :class:`MessageTooLarge` when the child runs out of time or memory."""
        from pmsearch.services.searcher.ingest.parser import check_size

        check_size(raw, self.limits)  # not worth shipping to the child
        header = json.dumps({"folder": folder}).encode()
        with self._lock:
            reply = self._exchange(_REQUEST.pack(len(header), len(raw)) + header, raw)
        if reply.get("ok"):
            return ParsedMessage.model_validate(reply["message"])
        error = _ERRORS.get(reply.get("code", ""), IngestError)
        raise error(str(reply.get("detail", "could not be parsed")))

    @property
    def pid(self) -> int | None:
        """The running child's process id, if one runs."""
        proc = self._proc
        return proc.pid if proc is not None and proc.poll() is None else None

    def close(self) -> None:
        with self._lock:
            self._stop()

    # -- parent side -----------------------------------------------------------------

    def _exchange(self, head: bytes, raw: bytes) -> dict:
        proc = self._start()
        timeout = self.limits.parse_timeout_seconds + _GRACE_SECONDS
        try:
            assert proc.stdin is not None and proc.stdout is not None
            proc.stdin.write(head)
            proc.stdin.write(raw)
            proc.stdin.flush()
            (size,) = _REPLY.unpack(_read(proc.stdout, _REPLY.size, timeout))
            return json.loads(_read(proc.stdout, size, timeout))
        except TimeoutError:
            self._stop()
            raise MessageTooLarge(_too_slow(self.limits)) from None
        except (OSError, EOFError, ValueError):
            # The child died: its memory or CPU limit, or a crash in a parsing library.
            code = proc.poll()
            self._stop()
            log.warning("parsing subprocess ended (exit %s) on a message of %d bytes", code, len(raw))
            raise MessageTooLarge(
                f"parsing exceeded the subprocess's limits ({self.limits.parse_memory_mb} MB of memory, "
                "PM_INGEST_PARSE_MEMORY_MB; CPU time) or crashed"
            ) from None

    def _start(self) -> subprocess.Popen[bytes]:
        if self._proc is not None and self._proc.poll() is None:
            return self._proc
        env = {k: v for k, v in os.environ.items() if k in ("PATH", "LD_LIBRARY_PATH", "LANG", "LC_ALL")}
        self._proc = proc = subprocess.Popen(
            [sys.executable, "-I", "-c", _BOOT, _ROOT, json.dumps(asdict(self.limits))],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=env,
            close_fds=True,
        )
        try:
            assert proc.stdout is not None
            if _read(proc.stdout, len(_READY), _START_SECONDS) != _READY:
                raise EOFError
        except (TimeoutError, EOFError, OSError):
            self._stop()
            raise IngestError("the parsing subprocess did not start") from None
        return proc

    def _stop(self) -> None:
        proc, self._proc = self._proc, None
        if proc is None:
            return
        if proc.poll() is None:
            proc.kill()
        proc.wait()
        for stream in (proc.stdin, proc.stdout):
            try:
                if stream is not None:
                    stream.close()
            except OSError:
                pass


def _too_slow(limits: IngestLimits) -> str:
    return f"parsing took longer than {limits.parse_timeout_seconds:g} s (PM_INGEST_PARSE_TIMEOUT_SECONDS)"


def _read(stream: BinaryIO, n: int, timeout: float) -> bytes:
    """Exactly ``n`` bytes from the child, or ``TimeoutError`` / ``EOFError``."""
    fd = stream.fileno()
    chunks: list[bytes] = []
    got = 0
    while got < n:
        ready, _, _ = select.select([fd], [], [], timeout)
        if not ready:
            raise TimeoutError
        chunk = os.read(fd, min(n - got, 1 << 20))
        if not chunk:
            raise EOFError
        chunks.append(chunk)
        got += len(chunk)
    return b"".join(chunks)


_SANDBOXES: dict[IngestLimits, Sandbox] = {}
_SANDBOXES_LOCK = threading.Lock()


def sandbox_for(limits: IngestLimits) -> Sandbox:
    """One shared child per set of limits, so ingesters do not each start their own."""
    with _SANDBOXES_LOCK:
        box = _SANDBOXES.get(limits)
        if box is None:
            box = _SANDBOXES[limits] = Sandbox(limits)
        return box


# -- child side --------------------------------------------------------------------


def main() -> None:
    """The child's loop: one message in, one JSON answer out, until stdin closes."""
    import resource

    limits = IngestLimits(**json.loads(sys.argv[2]))
    memory = limits.parse_memory_mb * 1024 * 1024
    resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    sys.stdout = sys.stderr  # a library's print() must not corrupt the protocol

    from pmsearch.services.searcher.ingest.parser import parse_message

    stdout.write(_READY)
    stdout.flush()
    while True:
        head = stdin.read(_REQUEST.size)
        if len(head) < _REQUEST.size:
            return  # the searcher closed our stdin (or exited)
        header_len, raw_len = _REQUEST.unpack(head)
        header = json.loads(stdin.read(header_len))
        raw = stdin.read(raw_len)
        _cpu_budget(resource, limits.parse_timeout_seconds + _GRACE_SECONDS)
        try:
            with time_limit(limits.parse_timeout_seconds):
                msg = parse_message(raw, folder=header["folder"], limits=limits)
            reply = {"ok": True, "message": msg.model_dump(mode="json")}
        except PartTimeout:
            reply = {"ok": False, "code": MessageTooLarge.code, "detail": _too_slow(limits)}
        except IngestError as exc:
            reply = {"ok": False, "code": exc.code, "detail": exc.detail}
        except MemoryError:
            reply = {"ok": False, "code": MessageTooLarge.code,
                     "detail": f"parsing needed more than {limits.parse_memory_mb} MB (PM_INGEST_PARSE_MEMORY_MB)"}
        except Exception as exc:  # a parser bug costs this message, not the child
            reply = {"ok": False, "code": "parser_error", "detail": f"unexpected {type(exc).__name__}: {exc}"}
        body = json.dumps(reply).encode()
        stdout.write(_REPLY.pack(len(body)) + body)
        stdout.flush()


def _cpu_budget(resource, seconds: float) -> None:
    """Let this message use ``seconds`` more CPU; past that the kernel ends the child
    (SIGXCPU) even if the parent is gone."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    used = usage.ru_utime + usage.ru_stime
    _, hard = resource.getrlimit(resource.RLIMIT_CPU)
    soft = math.ceil(used + seconds)
    if hard != resource.RLIM_INFINITY:
        soft = min(soft, hard)
    resource.setrlimit(resource.RLIMIT_CPU, (soft, hard))
