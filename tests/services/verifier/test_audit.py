"""``pmsearch verify``'s function: re-verification from files or a stored run."""

from __future__ import annotations

import json
import uuid

import pytest
import redis

from pmsearch.services.verifier.audit import verify_command
from pmsearch.services.verifier.decide import decide
from pmsearch.services.verifier.errors import AuditInputError
from pmsearch.shared.settings import VerifierSettings
from pmsearch.shared.streams import evidence_key, final_key
from tests.services.verifier.factory import M1, NEVER, evidence, request


@pytest.fixture
def evidence_file(tmp_path):
    path = tmp_path / "evidence.json"
    path.write_text(json.dumps([m.model_dump(mode="json") for m in evidence().values()]))
    return path


def test_draft_file_with_evidence_file(tmp_path, evidence_file) -> None:
    draft = tmp_path / "draft.json"
    draft.write_text(json.dumps({"draft": {"text": f"The claim was accepted [{M1}]. Paid [{NEVER}]."}}))
    report = verify_command(str(draft), evidence_file)
    assert report["answered"] is True
    assert (report["kept"], report["removed"]) == (1, 1)
    assert report["removed_sentences"][0]["reason"] == "unknown_citation"
    json.dumps(report)  # JSON-ready


def test_bare_draft_and_keyed_evidence(tmp_path) -> None:
    draft = tmp_path / "draft.json"
    draft.write_text(json.dumps({"sentences": [{"text": "Accepted.", "citations": [M1]}]}))
    ev = tmp_path / "ev.json"
    ev.write_text(json.dumps({k: v.model_dump(mode="json") for k, v in evidence().items()}))
    assert verify_command(str(draft), ev)["kept"] == 1


def test_draft_file_reads_evidence_of_its_run_from_redis(tmp_path, redis_url) -> None:
    run = f"run-{uuid.uuid4().hex[:8]}"
    client = redis.Redis.from_url(redis_url)
    client.hset(evidence_key(run), mapping={k: v.model_dump_json() for k, v in evidence().items()})
    draft = tmp_path / "draft.json"
    draft.write_text(json.dumps({"run_id": run, "draft": {"text": f'Anna wrote "the claim is accepted" [{M1}].'}}))
    report = verify_command(str(draft), None, VerifierSettings(redis_url=redis_url))
    assert report["run_id"] == run and report["kept"] == 1


def test_stored_run_is_reverified(redis_url) -> None:
    run = f"run-{uuid.uuid4().hex[:8]}"
    client = redis.Redis.from_url(redis_url)
    client.hset(evidence_key(run), mapping={k: v.model_dump_json() for k, v in evidence().items()})
    result = decide(request(run_id=run, text=f'Anna wrote "the claim is accepted" [{M1}].'), evidence())
    client.set(final_key(run), result.model_dump_json())
    report = verify_command(run, None, VerifierSettings(redis_url=redis_url))
    assert report["stored_outcome"] == "answered"
    assert report["consistent"] is True and report["kept"] == 1


def test_unusable_inputs(tmp_path, evidence_file, redis_url) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text("[1, 2]")
    with pytest.raises(AuditInputError):
        verify_command(str(bad), evidence_file)
    draft = tmp_path / "draft.json"
    draft.write_text(json.dumps({"draft": {"text": "x"}}))
    with pytest.raises(AuditInputError):
        verify_command(str(draft), None)  # no evidence, no run
    with pytest.raises(AuditInputError):
        verify_command(str(draft), bad)
    with pytest.raises(AuditInputError):
        verify_command("run-that-never-was", None, VerifierSettings(redis_url=redis_url))
