"""Pure scoring: one strategy's run records against the labelled questions -> figures.

``result`` arguments are finished-run JSON (``pmsearch.shared.messages.RunResult``) or None when
the request failed.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from typing import Any, Mapping, Sequence

from pmsearch.cli.evaluation.questions import Question
from pmsearch.cli.evaluation.runner import RunRecord

_SPACE = re.compile(r"\s+")
# Thousands separators between digits: comma, apostrophe (Swiss), narrow/no-break space.
_THOUSANDS = re.compile(r"(?<=\d)[,'’\u202f\u00a0](?=\d)")
USAGE_FIELDS = ("model_calls", "prompt_tokens", "completion_tokens")


def normalize(text: str) -> str:
    return _SPACE.sub(" ", text).strip().lower()


def _without_thousands(text: str) -> str:
    return _THOUSANDS.sub("", text)


def contains(text: str, spelling: str) -> bool:
    """Case-insensitive, whitespace-collapsed containment, also with thousands separators removed."""
    if not normalize(spelling):
        return False
    t, s = normalize(_without_thousands(text)), normalize(_without_thousands(spelling))
    return normalize(spelling) in normalize(text) or s in t


def missing_facts(question: Question, text: str) -> list[list[str]]:
    """The facts none of whose spellings occur in ``text``."""
    return [fact for fact in question.facts if not any(contains(text, s) for s in fact)]


def answer_text(result: Mapping[str, Any] | None) -> str:
    answer = (result or {}).get("answer") or {}
    return answer.get("text") or " ".join(s.get("text", "") for s in answer.get("sentences", []))


def is_answered(result: Mapping[str, Any] | None) -> bool:
    return bool(result) and result.get("outcome") == "answered"


def answered_right(question: Question, result: Mapping[str, Any] | None) -> bool:
    """An answerable question answered, with every key fact in the answer text."""
    return question.answerable and is_answered(result) and not missing_facts(question, answer_text(result))


def wrongly_answered(question: Question, result: Mapping[str, Any] | None) -> bool:
    """A question that should not be answered (no facts) was answered."""
    return not question.answerable and is_answered(result)


def attacker_hits(question: Question, result: Mapping[str, Any] | None) -> list[str]:
    """The ``never`` strings that occur in the answer text."""
    text = answer_text(result)
    return [s for s in question.never if text and contains(text, s)]


def cited_ids(result: Mapping[str, Any] | None) -> list[str]:
    """Message ids cited by the answer's sentences, first occurrence order, no repeats."""
    answer = (result or {}).get("answer") or {}
    ids = (c.get("message_id") for s in answer.get("sentences", []) for c in s.get("citations", []))
    return list(dict.fromkeys(i for i in ids if i))


def precision_counts(question: Question, cited: Sequence[str]) -> tuple[int, int] | None:
    """(right, total) of ``cited`` against the supporting set; None when not scorable.

    Every citation of a question that should not be answered is wrong; an answerable
    question without a supporting set cannot be scored."""
    cited = list(dict.fromkeys(cited))
    if not question.answerable:
        return 0, len(cited)
    if not question.supporting:
        return None
    supporting = question.supporting_ids()
    return sum(1 for c in cited if c in supporting), len(cited)


def percentile(values: Sequence[float], q: float) -> float | None:
    """The q-th percentile (0..100), linear interpolation; None for no values."""
    if not values:
        return None
    ordered = sorted(values)
    pos = (len(ordered) - 1) * q / 100.0
    lo, hi = math.floor(pos), math.ceil(pos)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)


def _ratio(num: int, den: int) -> float | None:
    return num / den if den else None


def _spread(values: Sequence[float]) -> dict[str, float | None]:
    return {"p50": percentile(values, 50), "p95": percentile(values, 95), "n": len(values)}


def classify_removed(question: Question, sentence_text: str) -> str:
    """``rightly`` (question should not be answered), ``wrongly`` (held a key fact) or ``other``."""
    if not question.answerable:
        return "rightly"
    if any(any(contains(sentence_text, s) for s in fact) for fact in question.facts):
        return "wrongly"
    return "other"


def removed_by_reason(pairs: Sequence[tuple[Question, Mapping[str, Any] | None]]) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {}
    for question, result in pairs:
        for removed in ((result or {}).get("trace") or {}).get("removed_sentences", []):
            row = out.setdefault(removed.get("reason", "unknown"), {"rightly": 0, "wrongly": 0, "other": 0})
            row[classify_removed(question, removed.get("text", ""))] += 1
    return out


def step_citations(result: Mapping[str, Any] | None, field: str) -> list[str] | None:
    """Union of ``trace.steps[].<field>`` (cited_by_model / cited_by_code); None if no step has it."""
    found: list[str] | None = None
    for step in ((result or {}).get("trace") or {}).get("steps", []):
        if isinstance(step.get(field), list):
            found = (found or []) + [i for i in step[field] if isinstance(i, str)]
    return None if found is None else list(dict.fromkeys(found))


def _step_precision(pairs, field: str) -> dict[str, Any] | None:
    right = total = runs = 0
    for question, result in pairs:
        ids = step_citations(result, field)
        counts = None if ids is None else precision_counts(question, ids)
        if counts is None:
            continue
        runs += 1
        right, total = right + counts[0], total + counts[1]
    return None if not runs else {"precision": _ratio(right, total), "right": right, "cited": total, "runs": runs}


def _usage(results: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, float | None]]:
    out = {}
    for name in USAGE_FIELDS:
        values = [float((r.get("usage") or {}).get(name, 0)) for r in results]
        out[name] = {"mean": sum(values) / len(values) if values else None, "p95": percentile(values, 95)}
    return out


def miss(question: Question, record: RunRecord) -> dict[str, Any] | None:
    """Why a question's run fell short, or None when it did what it should."""
    result = record.result or {}
    text = answer_text(result)
    missing = missing_facts(question, text) if question.answerable else []
    reasons = []
    if record.outcome == "error":
        reasons.append(f"error: {record.error}")
    elif question.answerable and not is_answered(result):
        reasons.append(f"not answered ({record.outcome}" + (f": {result.get('reason')})" if result.get("reason") else ")"))
    elif question.answerable and missing:
        reasons.append("missing facts")
    elif wrongly_answered(question, result):
        reasons.append(f"answered a {question.kind} question")
    hits = attacker_hits(question, result)
    if hits:
        reasons.append("attacker text: " + ", ".join(hits))
    if not reasons:
        return None
    return {
        "id": question.id, "kind": question.kind, "strategy": record.strategy, "outcome": record.outcome,
        "answer": text, "missing_facts": missing, "reason": "; ".join(reasons),
    }


def summarize(questions: Mapping[str, Question], records: Sequence[RunRecord]) -> dict[str, Any]:
    """Every figure for one strategy's records."""
    pairs = [(questions[r.question_id], r.result) for r in records]
    answerable = [(q, res) for q, res in pairs if q.answerable]
    right = sum(1 for q, res in answerable if answered_right(q, res))

    p_right = p_total = 0
    for q, res in pairs:
        counts = precision_counts(q, cited_ids(res)) if is_answered(res) else None
        if counts:
            p_right, p_total = p_right + counts[0], p_total + counts[1]
    r_found = r_total = 0
    for q, res in answerable:
        supporting = q.supporting_ids()
        r_found += len(supporting & set(cited_ids(res)))
        r_total += len(supporting)

    tags: dict[str, dict[str, Any]] = {}
    for q, res in pairs:
        for tag in q.tags:
            row = tags.setdefault(tag, {"questions": 0, "answerable": 0, "answered_right": 0, "wrongly_answered": 0})
            row["questions"] += 1
            row["answerable"] += q.answerable
            row["answered_right"] += answered_right(q, res)
            row["wrongly_answered"] += wrongly_answered(q, res)
    for row in tags.values():
        row["answered_right_share"] = _ratio(row["answered_right"], row["answerable"])

    finished = [r.result for r in records if r.result is not None]
    return {
        "runs": len(records),
        "answerable": len(answerable),
        "answered_right": _ratio(right, len(answerable)),
        "answered_right_count": right,
        "citation_precision": _ratio(p_right, p_total),
        "citation_precision_counts": {"right": p_right, "cited": p_total},
        "citation_recall": _ratio(r_found, r_total),
        "citation_recall_counts": {"cited": r_found, "supporting": r_total},
        "wrongly_answered": sum(1 for q, res in pairs if wrongly_answered(q, res)),
        "wrongly_answered_ids": [q.id for q, res in pairs if wrongly_answered(q, res)],
        "attacker_text": sum(1 for q, res in pairs if attacker_hits(q, res)),
        "outcomes": dict(Counter(r.outcome for r in records)),
        "wall_seconds": _spread([r.wall_seconds for r in records if r.wall_seconds is not None and r.outcome != "error"]),
        "first_evidence_seconds": _spread([r.first_evidence_seconds for r in records if r.first_evidence_seconds is not None]),
        "usage": _usage(finished),
        "removed_sentences": removed_by_reason(pairs),
        "cited_by_model": _step_precision(pairs, "cited_by_model"),
        "cited_by_code": _step_precision(pairs, "cited_by_code"),
        "tags": dict(sorted(tags.items())),
        "misses": [m for r in records if (m := miss(questions[r.question_id], r))],
    }
