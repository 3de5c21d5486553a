"""One JSON object a line, with the fields bound for the event, and the process's
secrets never written (pmsearch/shared/logging_setup.py)."""

from __future__ import annotations

import asyncio
import io
import json
import logging

import pytest
from pydantic import SecretStr

from pmsearch.shared.logging_setup import REDACTED, bind, bound, configure, secret_values, task_fields
from pmsearch.shared.settings import VerifierSettings

SECRET = "scope-key-0123456789abcdef0123456789abcdef"


@pytest.fixture
def lines():
    """Configure logging into a buffer; yields a function returning the lines so far."""
    root = logging.getLogger()
    saved = (list(root.handlers), root.level)
    out = io.StringIO()
    configure("DEBUG", "json", "planner", [SECRET], stream=out)
    yield lambda: [json.loads(line) for line in out.getvalue().splitlines()]
    for h in list(root.handlers):
        root.removeHandler(h)
    for h in saved[0]:
        root.addHandler(h)
    root.setLevel(saved[1])
    logging.captureWarnings(False)


def test_each_record_is_one_json_line_with_level_logger_service_and_time(lines):
    logging.getLogger("pmsearch.test").info("worker %s ready", "w1")
    [line] = lines()
    assert line["message"] == "worker w1 ready"
    assert (line["level"], line["logger"], line["service"]) == ("INFO", "pmsearch.test", "planner")
    assert line["time"].endswith("+00:00")


def test_bound_fields_and_extras_are_fields_of_the_line(lines):
    log = logging.getLogger("pmsearch.test")
    with bound(run_id="r1", tenant="acme", stage="planner") as fields:
        bind(step=2)
        log.info("handled", extra={"duration_ms": 12.5})
        assert fields["step"] == 2
    log.info("after")
    first, after = lines()
    assert {k: first[k] for k in ("run_id", "tenant", "stage", "step", "duration_ms")} == {
        "run_id": "r1", "tenant": "acme", "stage": "planner", "step": 2, "duration_ms": 12.5,
    }
    assert "run_id" not in after


async def test_concurrent_tasks_never_mix_their_run_ids(lines):
    log = logging.getLogger("pmsearch.test")

    async def deliver(run_id: str) -> None:
        task_fields(run_id=run_id)
        await asyncio.sleep(0.01)
        log.info("handled %s", run_id)

    await asyncio.gather(*(asyncio.create_task(deliver(f"r{i}")) for i in range(5)))
    got = [line for line in lines() if line["logger"] == "pmsearch.test"]
    assert len(got) == 5
    assert all(line["message"] == f"handled {line['run_id']}" for line in got)


def test_a_secret_value_is_redacted_wherever_it_would_appear(lines):
    log = logging.getLogger("pmsearch.test")
    log.warning("connecting with %s", SECRET)
    try:
        raise RuntimeError(f"refused {SECRET}")
    except RuntimeError:
        log.exception("failed")
    text = json.dumps(lines())
    assert SECRET not in text
    assert text.count(REDACTED) == 2  # in the message and in the traceback


def test_secret_values_are_every_secret_setting_of_a_service(monkeypatch):
    monkeypatch.setenv("PM_REDIS_PASSWORD", "redis-password-for-the-verifier")
    assert secret_values(VerifierSettings()) == ["redis-password-for-the-verifier"]
    assert isinstance(VerifierSettings().redis_password, SecretStr)


def test_text_format_shows_the_bound_fields_after_the_message():
    root = logging.getLogger()
    saved = list(root.handlers)
    out = io.StringIO()
    configure("INFO", "text", "gateway", stream=out)
    try:
        with bound(run_id="r9"):
            logging.getLogger("pmsearch.test").info("request")
    finally:
        for h in list(root.handlers):
            root.removeHandler(h)
        for h in saved:
            root.addHandler(h)
        logging.captureWarnings(False)
    assert out.getvalue().rstrip().endswith("INFO pmsearch.test request [service=gateway run_id=r9]")
