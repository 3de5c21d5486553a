"""The verifier holds no model credentials and must never import the model client."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
_IMPORTS_LLM = re.compile(
    r"^\s*(from\s+shared\.llm\b|import\s+shared\.llm\b|from\s+shared\s+import\s+.*\bllm\b)", re.M
)


def test_verifier_does_not_import_the_model_client():
    offenders = [
        str(path.relative_to(ROOT))
        for path in (ROOT / "pmsearch" / "services" / "verifier").rglob("*.py")
        if _IMPORTS_LLM.search(path.read_text(encoding="utf-8"))
    ]
    assert offenders == []
