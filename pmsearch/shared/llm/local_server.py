"""Start the embedded default model: llama-cpp-python's OpenAI-compatible server on
loopback, serving the GGUF that ``scripts/install_model.sh`` assembled.

That server takes structured output as ``{"type": "json_object", "schema": ...}``, so
clients pointed at it use ``PM_MODEL_OUTPUT=json_object_schema``.

    python -m pmsearch.shared.llm.local_server --port 8090      # runs in the foreground
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import IO

import httpx

MODEL_ALIAS = "qwen2.5-coder-1.5b-instruct"
DEFAULT_MODEL = Path("models/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf")


class LocalModelError(RuntimeError):
    """The local model server could not be started or did not become ready."""


# llama-cpp-python's server keeps every prompt token's logits by default (its
# ``logits_all``, for logprobs, which pmsearch never asks for): a copy of 152k floats per
# token read, and a 2.4 GiB score table at n_ctx 4096. Off, the embedded model reads a
# prompt about a quarter faster on two cores (``python -m bench.model_server``).
OPTIONS: dict[str, str] = {"logits_all": "False"}


def server_command(
    port: int,
    model_path: Path,
    *,
    host: str = "127.0.0.1",
    n_ctx: int = 4096,
    n_threads: int | None = None,
    options: dict[str, str] | None = None,
) -> list[str]:
    """The server's command line; ``options`` (flag name to value) replace :data:`OPTIONS`."""
    threads = n_threads or min(os.cpu_count() or 2, 4)
    flags = [arg for name, value in (OPTIONS if options is None else options).items() for arg in (f"--{name}", value)]
    return [
        sys.executable, "-m", "llama_cpp.server",
        "--model", str(model_path),
        "--model_alias", MODEL_ALIAS,
        "--host", host,
        "--port", str(port),
        "--n_ctx", str(n_ctx),
        "--n_threads", str(threads),
        "--n_threads_batch", str(threads),
        *flags,
    ]  # fmt: skip


def start_local_model(
    port: int,
    model_path: Path | str = DEFAULT_MODEL,
    *,
    host: str = "127.0.0.1",
    n_ctx: int = 4096,
    n_threads: int | None = None,
    options: dict[str, str] | None = None,
    ready_timeout: float = 180.0,
    log: IO[bytes] | int | None = subprocess.DEVNULL,
) -> subprocess.Popen[bytes]:
    """Launch the server and wait until ``GET /v1/models`` answers; the process is
    returned running (stop it with :func:`stop_local_model`)."""
    model_path = Path(model_path)
    if not model_path.is_file():
        raise LocalModelError(f"model file missing: {model_path} (run scripts/install_model.sh)")
    proc = subprocess.Popen(
        server_command(port, model_path, host=host, n_ctx=n_ctx, n_threads=n_threads, options=options),
        stdout=log,
        stderr=subprocess.STDOUT if log is not None else None,
        # Its own process group, so stopping it never touches the caller's group.
        start_new_session=True,
    )
    try:
        wait_until_ready(f"http://{host}:{port}/v1", proc, ready_timeout)
    except BaseException:
        stop_local_model(proc)
        raise
    return proc


def wait_until_ready(base_url: str, proc: subprocess.Popen[bytes] | None, timeout: float) -> None:
    """Poll ``{base_url}/models`` until it answers 200 (the model is loaded by then)."""
    ends = time.monotonic() + timeout
    while time.monotonic() < ends:
        if proc is not None and proc.poll() is not None:
            raise LocalModelError(f"model server exited with code {proc.returncode}")
        try:
            if httpx.get(f"{base_url}/models", timeout=2.0).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.25)
    raise LocalModelError(f"model server not ready after {timeout:.0f}s")


# What an agentic run costs the model at the 95th percentile, measured with `pmsearch
# eval` on the full set (docs/evaluation.md): about 2,000 prompt tokens sent, of which
# llama.cpp evaluates about two thirds (the fixed system prompt is cached), and about
# 115 generated tokens, which cost about three prompt tokens' time each on a CPU.
RUN_PROMPT_TOKENS_P95 = 1_400
RUN_COMPLETION_TOKENS_P95 = 115
GENERATED_TOKEN_COST = 3.0
MIN_RUN_SECONDS = 90.0


def run_seconds(prompt_tokens_per_second: float, margin: float = 1.25) -> float:
    """A run budget for a model that reads ``prompt_tokens_per_second``: a 95th-percentile
    run with ``margin`` to spare, never under :data:`MIN_RUN_SECONDS`."""
    if prompt_tokens_per_second <= 0:
        return MIN_RUN_SECONDS
    tokens = RUN_PROMPT_TOKENS_P95 + GENERATED_TOKEN_COST * RUN_COMPLETION_TOKENS_P95
    return max(MIN_RUN_SECONDS, round(margin * tokens / prompt_tokens_per_second))


def prompt_speed(base_url: str, model: str, system: str, timeout: float = 600.0) -> float:
    """Prompt tokens a second, from one call that reads ``system`` and writes one token.

    Sent with the stages' fixed system prompt, it also leaves that prompt in the
    server's cache, so the first question does not pay for it."""
    started = time.monotonic()
    resp = httpx.post(
        f"{base_url}/chat/completions",
        json={
            "model": model,
            "messages": [{"role": "system", "content": system}, {"role": "user", "content": "Reply with OK."}],
            "max_tokens": 1,
            "temperature": 0,
        },
        timeout=timeout,
    )
    resp.raise_for_status()
    tokens = resp.json()["usage"]["prompt_tokens"]
    return tokens / max(time.monotonic() - started, 1e-3)


def stop_local_model(proc: subprocess.Popen[bytes], grace: float = 10.0) -> None:
    """SIGTERM its process group, then SIGKILL if it lingers."""
    if proc.poll() is not None:
        return
    try:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    except ProcessLookupError:
        pass


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=8090)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--model", type=Path, default=DEFAULT_MODEL)
    parser.add_argument("--n-ctx", type=int, default=4096)
    parser.add_argument("--n-threads", type=int, default=None)
    args = parser.parse_args(argv)
    if not args.model.is_file():
        sys.exit(f"model file missing: {args.model} (run scripts/install_model.sh)")
    cmd = server_command(
        args.port, args.model, host=args.host, n_ctx=args.n_ctx, n_threads=args.n_threads
    )
    # Replace this process: signals sent to the launcher reach the server directly.
    os.execv(cmd[0], cmd)


if __name__ == "__main__":
    main()
