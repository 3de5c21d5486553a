"""Keep each evaluated run's draft and evidence beside the report.

The verifier's input (the model's draft) and a run's evidence leave Redis about ten
minutes after a run ends. Saved with the report, they let a verifier change be measured
again on the same drafts at any later time (``evals/replay_verifier.py``,
``evals/calibrate_unsupported.py``) without asking the model again. Reading them needs
the local stack's admin credentials; without them nothing is kept and the eval goes on.
"""

from __future__ import annotations

import json
from pathlib import Path

import redis

from pmsearch.shared import streams
from pmsearch.shared.bus import decode
from pmsearch.shared.messages import EvidenceMessage, VerificationRequested
from pmsearch.shared.runstore import RunReader

FILE = "drafts.jsonl"
RECENT = 500  # entries of each drafts stream searched for a run that has just ended


def admin_password(var_dir: Path) -> str | None:
    """The local stack's Redis admin password, or None without the stack's secrets."""
    try:
        return json.loads((var_dir / "secrets.json").read_text())["passwords"]["admin"]
    except (OSError, ValueError, KeyError):
        return None


def admin_client(var_dir: Path, redis_port: int) -> redis.Redis | None:
    """The local stack's Redis as its admin user, or None without the stack's secrets."""
    password = admin_password(var_dir)
    return None if password is None else redis.Redis(port=redis_port, username="admin", password=password)


class DraftKeeper:
    """Appends ``{"draft": …, "evidence": {…}}`` lines to ``<out_dir>/drafts.jsonl``."""

    def __init__(self, client: redis.Redis | None, out_dir: Path) -> None:
        self._redis = client
        self._path = out_dir / FILE

    @classmethod
    def for_local_stack(cls, var_dir: Path, redis_port: int, out_dir: Path) -> DraftKeeper:
        return cls(admin_client(var_dir, redis_port), out_dir)

    def keep(self, run_id: str | None) -> bool:
        """Save the run's draft and evidence; False when either cannot be read."""
        if self._redis is None or not run_id:
            return False
        try:
            draft = self._draft(run_id)
            evidence = RunReader(self._redis).evidence(run_id) if draft else {}
        except redis.RedisError:
            return False
        if draft is None:
            return False
        line = {
            "draft": draft.model_dump(mode="json"),
            "evidence": {mid: m.model_dump(mode="json") for mid, m in evidence.items()},
        }
        self._path.parent.mkdir(parents=True, exist_ok=True)
        with self._path.open("a") as f:
            f.write(json.dumps(line) + "\n")
        return True

    def _draft(self, run_id: str) -> VerificationRequested | None:
        for stream in streams.DRAFT_STREAMS:
            for _, fields in self._redis.xrevrange(streams.partition(stream, run_id), count=RECENT):
                try:
                    msg = decode(fields, VerificationRequested)
                except (ValueError, KeyError, TypeError):
                    continue  # a foreign or malformed entry: not this run's draft
                if msg.run_id == run_id:
                    return msg
        return None


def load(report_path: Path) -> dict[str, tuple[VerificationRequested, dict[str, EvidenceMessage]]]:
    """The drafts kept beside ``report_path``, by run id (empty if none were kept)."""
    path = report_path.parent / FILE
    out: dict[str, tuple[VerificationRequested, dict[str, EvidenceMessage]]] = {}
    if not path.is_file():
        return out
    for raw in path.read_text().splitlines():
        line = json.loads(raw)
        draft = VerificationRequested.model_validate(line["draft"])
        out[draft.run_id] = (draft, {k: EvidenceMessage.model_validate(v) for k, v in line["evidence"].items()})
    return out


def live(client: redis.Redis) -> dict[str, tuple[VerificationRequested, dict[str, EvidenceMessage]]]:
    """The drafts still in the verifier's input stream, with their runs' evidence."""
    out: dict[str, tuple[VerificationRequested, dict[str, EvidenceMessage]]] = {}
    reader = RunReader(client)
    keys = [key for stream in (*streams.DRAFT_STREAMS, streams.LEGACY_DRAFTS) for key in streams.partitions(stream)]
    for key in keys:
        for _, fields in client.xrange(key):
            try:
                msg = decode(fields, VerificationRequested)
            except (ValueError, KeyError, TypeError):
                continue
            out[msg.run_id] = (msg, reader.evidence(msg.run_id))
    return out


Kept = dict[str, tuple[VerificationRequested, dict[str, EvidenceMessage]]]


def for_report(report_path: Path, client: redis.Redis | None) -> Kept:
    """An eval run's drafts: those kept beside its report, else those Redis still holds."""
    kept = load(report_path)
    if kept or client is None:
        return kept
    return live(client)
