"""The verifier cannot call a model: it imports no model client and no prompt, and knows no credentials."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from pmsearch.shared.settings import VerifierSettings

ROOT = Path(__file__).resolve().parents[3]
FORBIDDEN_PREFIXES = (
    "pmsearch.shared.llm", "pmsearch.shared.prompts", "openai", "anthropic", "pmsearch.services.planner",
    "pmsearch.services.answerer", "llama_cpp",
)


def test_verifier_imports_no_model_client() -> None:
    code = (
        "import json, sys\n"
        "import pmsearch.services.verifier.worker, pmsearch.services.verifier.audit, pmsearch.services.verifier.metrics\n"
        "print(json.dumps(sorted(sys.modules)))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120, check=True
    )
    modules = json.loads(out.stdout.strip().splitlines()[-1])
    assert "pmsearch.services.verifier.worker" in modules
    leaked = [m for m in modules if m.startswith(FORBIDDEN_PREFIXES)]
    assert leaked == []
    # httpx is how the model client talks; the verifier has no reason to load it.
    assert "httpx" not in modules


def test_verifier_settings_hold_no_model_credentials() -> None:
    fields = set(VerifierSettings.model_fields)
    assert not [f for f in fields if "model" in f or "api_key" in f or "llm" in f]


def test_verifier_source_never_mentions_the_model_client() -> None:
    src = ROOT / "pmsearch" / "services" / "verifier"
    for path in src.glob("*.py"):
        text = path.read_text()
        assert "pmsearch.shared.llm" not in text and "import httpx" not in text, path
