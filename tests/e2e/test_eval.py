"""``pmsearch eval`` against the real stack (every service a process, a real redis-server)
with a scripted model, on questions of the shipped labelled set: the deterministic part
of the evaluation that CI runs. The real model's subset is in ``test_real_model.py``."""

from __future__ import annotations

import json
import subprocess
import sys

from pmsearch.cli.stack import ROOT
from pmsearch.testing.brains import honest, knowing

ANSWERABLE = "golf-accepted"
# What a right answer to ANSWERABLE states, as its mail words it.
KNOWN = {"Did the insurer accept the Golf claim after we sent the photos?": ("accepted", "2,115.50")}
MUST_NOT_ANSWER = "q2-review-agenda"  # the mail never says who presents first


def run_eval(api, out, *only: str, gates: tuple[str, ...] = (), baseline: bool = False) -> tuple[int, dict, str]:
    cmd = [
        sys.executable, "-m", "pmsearch.cli.main", "eval",
        "--gateway", api.stack.gateway_url,
        "--keys", str(api.stack.var_dir / "demo-keys.json"),
        "--only", ",".join(only),
        "--out", str(out),
        "--timeout", "60",
        *gates,
    ]
    if baseline:
        cmd.append("--baseline")
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, timeout=600)
    return proc.returncode, json.loads(proc.stdout.strip().splitlines()[-1]), proc.stderr


def test_eval_scores_runs_of_the_real_stack_and_measures_first_evidence(api, stack_model, tmp_path):
    api.tenant("acme", **{"search.agentic_max_steps": 2, "search.agentic_max_seconds": 20})
    stack_model.set_script(honest())
    code, summary, err = run_eval(api, tmp_path, ANSWERABLE, baseline=True)
    assert code == 0, err
    loop, single = summary["strategies"]["loop"], summary["strategies"]["single_shot"]
    for s in (loop, single):
        assert s["outcomes"] == {"answered": 1}
        assert s["first_evidence_p95_s"] is not None and s["first_evidence_p95_s"] <= s["wall_p95_s"]
    # The scripted model quotes the first passage, which holds none of the key facts.
    assert loop["answered_right"] == 0.0


def test_eval_scores_a_right_answer_right(api, stack_model, tmp_path):
    api.tenant("acme", **{"search.agentic_max_steps": 2, "search.agentic_max_seconds": 20})
    stack_model.set_script(knowing(KNOWN))
    code, summary, err = run_eval(api, tmp_path, ANSWERABLE, gates=("--min-answered-right", "1"))
    assert code == 0, err
    assert summary["strategies"]["loop"]["answered_right"] == 1.0


def test_eval_gate_fails_when_a_must_not_answer_question_is_answered(api, stack_model, tmp_path):
    api.tenant("acme", **{"search.agentic_max_steps": 2, "search.agentic_max_seconds": 20})
    stack_model.set_script(honest())  # answers whatever it is shown
    code, summary, err = run_eval(api, tmp_path, MUST_NOT_ANSWER, gates=("--max-wrongly-answered", "0"))
    assert code == 1
    assert "wrongly_answered 1 > 0" in err
    assert summary["strategies"]["loop"]["wrongly_answered"] == 1
