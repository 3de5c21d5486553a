"""Re-verification for ``pmsearch verify``: the same pure :func:`verify`, fed from files
or from a stored run.

``verify_command(target, evidence_file, settings)``:

* ``target`` is a JSON file holding a draft: ``{"draft": {...}}``, a bare draft
  (``{"text": ...}`` / ``{"sentences": [...]}``) or a whole VerificationRequested. The
  evidence comes from ``evidence_file`` (a JSON list of EvidenceMessage, or an object
  keyed by message ID); without one, from the Redis evidence hash of the file's
  ``run_id``.
* otherwise ``target`` is a run ID: the stored final result's answer is turned back into
  a structured draft and checked against the run's evidence hash in Redis, which shows
  whether what the run returned still verifies.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import redis
from pydantic import ValidationError

from pmsearch.services.verifier.errors import AuditInputError
from pmsearch.services.verifier.service import verify
from pmsearch.shared.bus import connect_sync
from pmsearch.shared.messages import Draft, DraftSentence, EvidenceMessage, RunResult
from pmsearch.shared.runstore import RunReader
from pmsearch.shared.settings import VerifierSettings


def audit(draft: Draft, evidence: Mapping[str, EvidenceMessage]) -> dict[str, Any]:
    """The verdict on ``draft`` as JSON-ready data, with counts."""
    verdict = verify(draft, evidence)
    answer = verdict.answer()
    return {
        "answered": answer is not None,
        "kept": len(verdict.kept),
        "removed": len(verdict.removed),
        "answer": None if answer is None else answer.model_dump(mode="json"),
        "removed_sentences": [r.model_dump(mode="json") for r in verdict.removed],
    }


def draft_of(result: RunResult) -> Draft:
    """A stored answer as a structured draft (sentence text plus its cited IDs)."""
    sentences = [
        DraftSentence(text=s.text, citations=[c.message_id for c in s.citations])
        for s in (result.answer.sentences if result.answer else [])
    ]
    return Draft(sentences=sentences)


def load_draft_file(path: Path) -> tuple[Draft, str | None]:
    """The draft in ``path`` and the run ID it names, if any."""
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise AuditInputError(f"cannot read draft file {path}: {exc}") from exc
    if not isinstance(data, dict):
        raise AuditInputError(f"{path}: expected a JSON object")
    run_id = data.get("run_id") if isinstance(data.get("run_id"), str) else None
    raw = data.get("draft", data if "draft" not in data and "run_id" not in data else None)
    try:
        return Draft.model_validate(raw if raw is not None else {}), run_id
    except ValidationError as exc:
        raise AuditInputError(f"{path}: not a draft: {exc}") from exc


def load_evidence_file(path: Path) -> dict[str, EvidenceMessage]:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise AuditInputError(f"cannot read evidence file {path}: {exc}") from exc
    items = list(data.values()) if isinstance(data, dict) else data
    if not isinstance(items, list):
        raise AuditInputError(f"{path}: expected a list of evidence messages")
    try:
        messages = [EvidenceMessage.model_validate(item) for item in items]
    except ValidationError as exc:
        raise AuditInputError(f"{path}: not evidence messages: {exc}") from exc
    return {m.message_id: m for m in messages}


def _client(settings: VerifierSettings) -> redis.Redis:
    return connect_sync(settings)


def load_run_evidence(client: redis.Redis, run_id: str) -> dict[str, EvidenceMessage]:
    return RunReader(client).evidence(run_id)


def load_run_result(client: redis.Redis, run_id: str) -> RunResult:
    result = RunReader(client).result(run_id)
    if result is None:
        raise AuditInputError(f"run {run_id} has no stored result (finished runs expire)")
    return result


def verify_command(
    run_or_draft: str,
    evidence_file: Path | None = None,
    settings: VerifierSettings | None = None,
) -> dict[str, Any]:
    """Re-verify a draft file or a stored run; returns the verdict as JSON-ready data."""
    path = Path(run_or_draft)
    if path.is_file():
        draft, run_id = load_draft_file(path)
        if evidence_file is not None:
            evidence = load_evidence_file(evidence_file)
        elif run_id:
            evidence = load_run_evidence(_client(settings or VerifierSettings()), run_id)
        else:
            raise AuditInputError("give an evidence file, or a draft file that names its run_id")
        return {"source": str(path), "run_id": run_id, **audit(draft, evidence)}

    client = _client(settings or VerifierSettings())
    result = load_run_result(client, run_or_draft)
    evidence = (
        load_evidence_file(evidence_file)
        if evidence_file is not None
        else load_run_evidence(client, run_or_draft)
    )
    report = audit(draft_of(result), evidence)
    report["consistent"] = report["removed"] == 0
    return {"source": "redis", "run_id": run_or_draft, "stored_outcome": result.outcome, **report}
