"""Report output: the headline figures, Markdown that survives odd answers, both files."""

from __future__ import annotations

import json

from pmsearch.cli.evaluation import report, scoring
from pmsearch.cli.evaluation.questions import Question
from pmsearch.cli.evaluation.runner import RunRecord

Q = Question(id="q|1", key="acme/alice", kind="answerable", question="?", facts=[["yes"]], tags=["t"])
RESULT = {"run_id": "r1", "outcome": "answered", "answer": {"text": "no | [b]maybe[/b]\nreally", "sentences": []},
          "usage": {"model_calls": 2, "prompt_tokens": 1500, "completion_tokens": 90}}
META = {"set": "s.yaml", "gateway": "http://gw", "started": "2024-05-06T09:00:00+00:00", "questions": 1}


def _summaries():
    records = [RunRecord("q|1", "loop", "answered", run_id="r1", wall_seconds=1.5, result=RESULT)]
    return {"loop": scoring.summarize({Q.id: Q}, records)}, records


def test_headline_has_flat_rounded_figures():
    summaries, _ = _summaries()
    head = report.headline(summaries["loop"])
    assert head["answered_right"] == 0.0 and head["answerable"] == 1
    assert head["prompt_tokens_mean"] == 1500 and isinstance(head["prompt_tokens_mean"], int)
    assert head["wall_p50_s"] == 1.5 and head["first_evidence_p50_s"] is None
    assert all(not isinstance(v, list) for v in head.values())


def test_reports_are_written_and_markdown_cells_stay_on_one_line(tmp_path):
    summaries, records = _summaries()
    rows = [report.question_row(Q, r) for r in records]
    md, js = report.write_reports(tmp_path / "x", META, summaries, rows)
    data = json.loads(js.read_text())
    assert data["questions"][0]["missing_facts"] == [["yes"]] and data["questions"][0]["run"]["run_id"] == "r1"
    text = md.read_text()
    assert "| q\\|1 | answerable | loop | answered | False |" in text
    assert "missing facts" in text
    line = report.summary_line(META, summaries, js)
    assert "\n" not in line and json.loads(line)["strategies"]["loop"]["runs"] == 1


def test_terminal_table_prints_misses_without_markup(capsys):
    from rich.console import Console

    summaries, _ = _summaries()
    report.print_table(Console(width=200), summaries)
    printed = capsys.readouterr().out
    assert "miss [loop] q|1 (answerable, answered): missing facts" in printed
