"""The suites that hold pmsearch's shared Redis call paths, run again on a Redis Cluster
of three primaries with every stage stream in three partitions (``pytest
--redis-cluster --stream-partitions 3``: their ``redis`` fixture is then a cluster
client): the run store, a run's admission, idempotency and waits, the stream bus
(publishing, trimming, a group's lag), the worker runtime (groups, reads, retries,
heartbeats, takeovers, dead letters, gauges, readiness), the fencing lock, and each
stage's repository. A call a cluster refuses (keys on two slots in one transaction or
command, a keyless command it cannot route) fails them there, and so does an entry read
twice or never across partitions."""

from __future__ import annotations

import subprocess
import sys

import pytest

from pmsearch.cli.stack import ROOT

SUITES = (
    "tests/shared/test_runstore.py",
    "tests/shared/test_bus.py",
    "tests/shared/test_stream_trimming.py",
    "tests/shared/test_worker.py",
    "tests/shared/test_worker_metrics.py",
    "tests/shared/test_health.py",
    "tests/shared/test_fencing.py",
    "tests/services/gateway/runs",
    "tests/services/gateway/test_repository.py",
    "tests/services/gateway/test_admission.py",
    "tests/services/planner/test_service.py",
    "tests/services/answerer/test_service.py",
    "tests/services/sync/test_service.py",
    "tests/services/verifier/test_repository.py",
)


@pytest.mark.timeout(900)
def test_the_redis_suites_pass_on_a_three_primary_cluster_with_three_partitions():
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--redis-cluster", "--stream-partitions", "3",
         *SUITES],
        cwd=ROOT, capture_output=True, text=True, timeout=880,
    )
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    assert " passed" in proc.stdout.strip().splitlines()[-1]
