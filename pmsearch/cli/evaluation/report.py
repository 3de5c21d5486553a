"""The evaluation's outputs: per-question rows, a terminal table, report.md, report.json,
and the one-line JSON summary that scripts read from the end of stdout."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Mapping, Sequence

from rich.console import Console
from rich.table import Table
from rich.text import Text

from pmsearch.cli.evaluation import scoring
from pmsearch.cli.evaluation.questions import Question
from pmsearch.cli.evaluation.runner import RunRecord
from pmsearch.cli.untrusted import clean


def question_row(question: Question, record: RunRecord) -> dict[str, Any]:
    """One run as report.json stores it: the verdicts and the full run JSON."""
    result = record.result
    return {
        "id": question.id, "kind": question.kind, "key": question.key, "tags": question.tags,
        "strategy": record.strategy, "question": question.question,
        "outcome": record.outcome, "error": record.error, "run_id": record.run_id,
        "wall_seconds": record.wall_seconds, "first_evidence_seconds": record.first_evidence_seconds,
        "answer": scoring.answer_text(result),
        "answered_right": scoring.answered_right(question, result) if question.answerable else None,
        "wrongly_answered": scoring.wrongly_answered(question, result),
        "missing_facts": scoring.missing_facts(question, scoring.answer_text(result)) if question.answerable else [],
        "attacker_text": scoring.attacker_hits(question, result),
        "cited": scoring.cited_ids(result),
        "supporting": sorted(question.supporting_ids()),
        "usage": (result or {}).get("usage"),
        "events": record.events,
        "run": result,
    }


def headline(summary: Mapping[str, Any]) -> dict[str, Any]:
    """The figures worth a glance (and a gate): no lists, no per-tag detail."""
    usage = summary["usage"]
    return {
        "runs": summary["runs"],
        "answerable": summary["answerable"],
        "answered_right": _round(summary["answered_right"]),
        "citation_precision": _round(summary["citation_precision"]),
        "citation_recall": _round(summary["citation_recall"]),
        "wrongly_answered": summary["wrongly_answered"],
        "attacker_text": summary["attacker_text"],
        "outcomes": summary["outcomes"],
        "wall_p50_s": _round(summary["wall_seconds"]["p50"]),
        "wall_p95_s": _round(summary["wall_seconds"]["p95"]),
        "first_evidence_p50_s": _round(summary["first_evidence_seconds"]["p50"]),
        "first_evidence_p95_s": _round(summary["first_evidence_seconds"]["p95"]),
        "model_calls_mean": _round(usage["model_calls"]["mean"], 1),
        "model_calls_p95": _round(usage["model_calls"]["p95"], 1),
        "prompt_tokens_mean": _round(usage["prompt_tokens"]["mean"], 0),
        "prompt_tokens_p95": _round(usage["prompt_tokens"]["p95"], 0),
        "completion_tokens_mean": _round(usage["completion_tokens"]["mean"], 0),
        "completion_tokens_p95": _round(usage["completion_tokens"]["p95"], 0),
        "cited_by_model_precision": _round((summary["cited_by_model"] or {}).get("precision")),
        "cited_by_code_precision": _round((summary["cited_by_code"] or {}).get("precision")),
    }


def _round(value: float | None, digits: int = 3) -> float | int | None:
    if value is None:
        return None
    return round(value) if digits == 0 else round(value, digits)


def _fmt(value: Any) -> str:
    if value is None:
        return "–"
    if isinstance(value, float):
        return f"{value:.3f}" if abs(value) < 100 else f"{value:.0f}"
    if isinstance(value, dict):
        return ", ".join(f"{k} {v}" for k, v in sorted(value.items()))
    return str(value)


def _metric_rows(summaries: Mapping[str, Mapping[str, Any]]) -> tuple[list[str], list[list[str]]]:
    heads = {name: headline(s) for name, s in summaries.items()}
    names = list(next(iter(heads.values())))
    return list(summaries), [[n] + [_fmt(heads[s][n]) for s in summaries] for n in names]


def print_table(console: Console, summaries: Mapping[str, Mapping[str, Any]]) -> None:
    strategies, rows = _metric_rows(summaries)
    table = Table(title="pmsearch eval")
    table.add_column("figure")
    for name in strategies:
        table.add_column(name, justify="right")
    for row in rows:
        table.add_row(*row)
    console.print(table)
    for name, summary in summaries.items():
        for m in summary["misses"]:
            # Text, not markup: reasons quote answers and errors, which may hold brackets.
            line = Text("miss", style="yellow") + clean(f" [{name}] {m['id']} ({m['kind']}, {m['outcome']}): {m['reason']}")
            console.print(line, highlight=False)


def _md_table(head: Sequence[str], rows: Sequence[Sequence[Any]]) -> list[str]:
    clean = lambda v: _fmt(v).replace("|", "\\|").replace("\n", " ")  # noqa: E731
    return ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)] + [
        "| " + " | ".join(clean(v) for v in row) + " |" for row in rows
    ]


def markdown(meta: Mapping[str, Any], summaries: Mapping[str, Mapping[str, Any]], rows: Sequence[Mapping[str, Any]]) -> str:
    strategies, metric_rows = _metric_rows(summaries)
    lines = [f"# pmsearch eval — {meta['set']}", "", f"{meta['started']}, gateway {meta['gateway']}, "
             f"{meta['questions']} questions, strategies: {', '.join(strategies)}", ""]
    lines += _md_table(["figure", *strategies], metric_rows) + [""]
    for name, s in summaries.items():
        lines += [f"## {name}", ""]
        if s["removed_sentences"]:
            lines += ["Removed sentences by reason:", ""]
            lines += _md_table(["reason", "rightly", "wrongly", "other"],
                               [[r, c["rightly"], c["wrongly"], c["other"]] for r, c in sorted(s["removed_sentences"].items())])
            lines.append("")
        if s["tags"]:
            lines += ["Per tag:", ""]
            lines += _md_table(["tag", "questions", "answerable", "answered right", "share", "wrongly answered"],
                               [[t, r["questions"], r["answerable"], r["answered_right"], r["answered_right_share"],
                                 r["wrongly_answered"]] for t, r in s["tags"].items()])
            lines.append("")
        lines += [f"Misses ({len(s['misses'])}):", ""]
        for m in s["misses"]:
            lines.append(f"- **{m['id']}** ({m['kind']}, {m['outcome']}): {m['reason']}")
            if m["missing_facts"]:
                lines.append(f"  - missing: {'; '.join(' / '.join(f) for f in m['missing_facts'])}")
            if m["answer"]:
                lines.append(f"  - answer: {' '.join(m['answer'].split())}")
        lines.append("")
    lines += ["## Questions", ""]
    lines += _md_table(
        ["id", "kind", "strategy", "outcome", "right", "wall s", "first evidence s", "cited"],
        [[r["id"], r["kind"], r["strategy"], r["outcome"], r["answered_right"], r["wall_seconds"],
          r["first_evidence_seconds"], len(r["cited"])] for r in rows],
    )
    return "\n".join(lines) + "\n"


def write_reports(
    out_dir: Path, meta: Mapping[str, Any], summaries: Mapping[str, Mapping[str, Any]], rows: Sequence[Mapping[str, Any]]
) -> tuple[Path, Path]:
    """report.md and report.json under ``out_dir``; returns both paths."""
    out_dir.mkdir(parents=True, exist_ok=True)
    md, js = out_dir / "report.md", out_dir / "report.json"
    md.write_text(markdown(meta, summaries, rows), encoding="utf-8")
    payload = {"meta": meta, "summary": summaries, "questions": rows}
    js.write_text(json.dumps(payload, indent=2, ensure_ascii=False, default=str), encoding="utf-8")
    return md, js


def summary_line(meta: Mapping[str, Any], summaries: Mapping[str, Mapping[str, Any]], report: Path) -> str:
    """The last line of stdout: one JSON object, a headline per strategy."""
    body = {"eval": meta["set"], "questions": meta["questions"], "report": str(report),
            "strategies": {name: headline(s) for name, s in summaries.items()}}
    return json.dumps(body, sort_keys=True, ensure_ascii=False)
