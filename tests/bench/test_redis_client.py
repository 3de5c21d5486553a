"""bench.redis_client runs against a real redis-server and ends with its figures."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def test_both_clients_are_measured_and_the_last_line_is_their_json():
    out = subprocess.run(
        [sys.executable, "-m", "bench.redis_client", "--commands", "50", "--rounds", "1"],
        cwd=ROOT, capture_output=True, text=True, timeout=60, check=True,
    ).stdout
    figures = json.loads(out.strip().splitlines()[-1])
    assert figures["bench"] == "redis_client"
    assert figures["redis_py_us"] > 0 and figures["by_hand_us"] > 0
    assert figures["ratio"] == pytest.approx(figures["redis_py_us"] / figures["by_hand_us"], rel=0.02)
