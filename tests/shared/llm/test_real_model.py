"""The real embedded model (Qwen2.5-Coder-1.5B Q4_K_M on llama-cpp-python's server)
returns a schema-valid object through the client, in the json_object_schema dialect."""

from __future__ import annotations

import importlib.util
import time
from pathlib import Path

import pytest
from pydantic import BaseModel, ConfigDict

from pmsearch.cli.stack import free_port
from pmsearch.shared.llm import ModelClient
from pmsearch.shared.llm.local_server import DEFAULT_MODEL, start_local_model, stop_local_model
from tests.shared.llm.helpers import settings

ROOT = Path(__file__).resolve().parents[3]
MODEL = ROOT / DEFAULT_MODEL


class Capital(BaseModel):
    model_config = ConfigDict(extra="forbid")

    country: str
    capital: str


async def _ask(client: ModelClient, country: str):
    return await client.structured(
        [
            {"role": "system", "content": "Answer with a JSON object."},
            {"role": "user", "content": f"What is the capital of {country}?"},
        ],
        Capital,
        name="capital",
        max_tokens=48,
    )


def _missing() -> str | None:
    if not MODEL.is_file():
        return f"model file {DEFAULT_MODEL} absent: run scripts/install_model.sh"
    if importlib.util.find_spec("llama_cpp") is None:
        return "llama-cpp-python not installed: run scripts/install_model.sh"
    return None


@pytest.mark.real_model
@pytest.mark.skipif(_missing() is not None, reason=_missing() or "")
async def test_real_model_returns_a_schema_valid_object(tmp_path: Path):
    port = free_port()
    started = time.monotonic()
    with (tmp_path / "llama_server.log").open("wb") as log:
        proc = start_local_model(port, MODEL, n_ctx=2048, log=log)
    load_seconds = time.monotonic() - started
    try:
        config = settings(
            f"http://127.0.0.1:{port}/v1",
            model_output="json_object_schema",
            model_api_key=None,
            model_timeout_seconds=120,
        )
        async with ModelClient(config) as client:
            # Two questions: the first call pays llama.cpp's warm-up, the second shows
            # the steady state; both must validate.
            results = [await _ask(client, country) for country in ("France", "Japan")]
    finally:
        stop_local_model(proc)
    assert all(isinstance(r.value, Capital) for r in results)
    assert "paris" in results[0].value.capital.lower()
    assert "tokyo" in results[1].value.capital.lower()
    print(f"\nreal model: server ready in {load_seconds:.1f}s")
    for label, r in zip(("cold", "warm"), results, strict=True):
        print(
            f"{label} call {r.seconds:.2f}s: {r.usage.prompt_tokens} prompt + "
            f"{r.usage.completion_tokens} completion tokens, attempts {r.attempts}, {r.value}"
        )
    # llama.cpp's own timing lines: prompt and generation speed, apart from overheads.
    for line in (tmp_path / "llama_server.log").read_text(errors="replace").splitlines():
        if "eval time" in line:
            print(line.split(":", 1)[-1].strip())
