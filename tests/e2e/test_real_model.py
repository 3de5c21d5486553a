"""The real embedded model (Qwen2.5-Coder-1.5B on llama.cpp's server) answering a subset
of the labelled set through the whole stack, every service its own process, scored by
``pmsearch eval``.

It checks what the model and the verifier do, not how fast: budgets here are generous
so that a busy machine still meets them; speed belongs to ``pmsearch eval`` on the full
set and to the benchmarks.
"""

from __future__ import annotations

import json
import subprocess
import sys

import httpx
import pytest
from rich.console import Console

from cli.demo import load_demo
from cli.stack import ROOT, Stack
from shared.llm.local_server import DEFAULT_MODEL
from tests.fixtures.stack import DEMO

pytestmark = [pytest.mark.real_model, pytest.mark.timeout(3600)]

# A regression guard, not a quality measure: questions the embedded model answers right,
# citing only supporting messages (or rightly refuses), on the last full evaluation, so a
# change that breaks them shows here. The full set's figures are in docs/evaluation.md.
SUBSET = [
    "golf-police-number",
    "laptop-asset",
    "contoso-credit-note",
    "vat-march",
    "flight-manage-link",
    "quarantine-bank-details",
    "wifi-password",
    "om-chairs-paid",
    "ot-inv-0173-from-carol",
]
SLOW_MACHINE_BUDGET = {"search.agentic_max_steps": 2, "search.agentic_max_seconds": 300}


@pytest.fixture(scope="module")
def real_stack(tmp_path_factory):
    if not (ROOT / DEFAULT_MODEL).is_file():
        pytest.fail("the embedded model is missing: scripts/install_model.sh installs it (make test runs it)")
    stack = Stack(tmp_path_factory.mktemp("real"), local_model=True)
    try:
        stack.start()
        load_demo(stack, DEMO, Console(quiet=True))
        for tenant in ("acme", "globex"):
            httpx.patch(
                f"{stack.gateway_url}/v1/admin/tenants/{tenant}/settings",
                json=SLOW_MACHINE_BUDGET,
                headers={"Authorization": f"Bearer {stack.secrets.admin_token}"},
                timeout=30,
            ).raise_for_status()
        yield stack
    finally:
        stack.stop()


def test_real_model_subset_meets_the_precision_and_refusal_gates(real_stack, tmp_path):
    proc = subprocess.run(
        [
            sys.executable, "-m", "cli.main", "eval",
            "--gateway", real_stack.gateway_url,
            "--keys", str(real_stack.var_dir / "demo-keys.json"),
            "--only", ",".join(SUBSET),
            "--out", str(tmp_path),
            "--timeout", "400",
            "--min-precision", "0.95",
            "--max-wrongly-answered", "0",
        ],
        capture_output=True, text=True, cwd=ROOT, timeout=3600,
    )
    summary = json.loads(proc.stdout.strip().splitlines()[-1])
    assert proc.returncode == 0, f"{proc.stderr[-2000:]}\n{summary}"
    loop = summary["strategies"]["loop"]
    assert loop["outcomes"].get("error", 0) == 0, loop
    assert loop["answered_right"] > 0, f"{loop['outcomes']} {loop}"  # the model answers, not only refuses
