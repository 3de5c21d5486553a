"""The AsyncAPI document of the streams: one typed message per channel, the same models
the stages parse, and accepted by the official AsyncAPI parser."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from pmsearch.shared import streams
from pmsearch.shared.asyncapi import CHANNELS, DEAD_LETTERS, document
from pmsearch.shared.worker import Worker

ROOT = Path(__file__).resolve().parents[2]
# The official validator is the JavaScript parser (none is kept on PyPI); installed on
# first use into var/, like the Debian packages other tests install when missing.
PARSER_VERSION = "3.6.3"
PARSER_DIR = ROOT / "var" / "tools" / f"asyncapi-parser-{PARSER_VERSION}"
CHECK = """
import { Parser } from '@asyncapi/parser';
import { readFileSync } from 'fs';
const { document, diagnostics } = await new Parser().parse(readFileSync(process.argv[2], 'utf8'));
console.log(JSON.stringify({parsed: Boolean(document), diagnostics: diagnostics.map(
  d => ({severity: d.severity, code: d.code, message: d.message, path: d.path}))}));
"""


def _resolve(doc: dict, ref: str) -> dict:
    node = doc
    for part in ref.removeprefix("#/").split("/"):
        node = node[part]
    return node


def test_every_stream_has_exactly_one_channel_with_one_typed_message():
    doc = document()
    addresses = [c["address"] for c in doc["channels"].values()]
    assert len(addresses) == len(set(addresses)), "two channels share an address"
    for stream in streams.GROUP:
        assert addresses.count(stream) == 1, f"{stream} has no channel of its own"
        assert addresses.count(streams.dead_letter(stream)) == 1, f"{stream}'s dead letters have no channel"
    for channel_id, channel in doc["channels"].items():
        assert len(channel["messages"]) == 1, channel_id
        (ref,) = [m["$ref"] for m in channel["messages"].values()]
        message = _resolve(doc, ref)
        schema = _resolve(doc, message["payload"]["$ref"])
        assert schema["type"] == "object" and schema["properties"], channel_id


def test_operations_name_their_channel_and_its_message():
    doc = document()
    for op_id, op in doc["operations"].items():
        channel_id = op["channel"]["$ref"].removeprefix("#/channels/")
        (message_ref,) = [m["$ref"] for m in op["messages"]]
        assert message_ref.startswith(f"#/channels/{channel_id}/messages/"), op_id
        assert _resolve(doc, message_ref)


def test_the_stages_subscribe_to_each_stream_with_its_documented_model(monkeypatch):
    from pmsearch.services.answerer.worker import build_app as answerer
    from pmsearch.services.planner.worker import build_app as planner
    from pmsearch.services.searcher.worker import build_app as searcher
    from pmsearch.services.verifier.worker import build_app as verifier
    from pmsearch.shared.settings import AnswererSettings, PlannerSettings, SearcherSettings, VerifierSettings

    subscribed: dict[str, type] = {}

    def record(self, stream, model, handle, **kwargs):
        assert stream not in subscribed, f"{stream} is subscribed twice"
        subscribed[stream] = model

    monkeypatch.setattr(Worker, "subscribe", record)
    url = "redis://127.0.0.1:1/0"  # never connected: building a worker only wires it
    planner(PlannerSettings(redis_url=url))
    searcher(SearcherSettings(redis_url=url))
    answerer(AnswererSettings(redis_url=url))
    verifier(VerifierSettings(redis_url=url))
    documented = {c.address: c.model for c in CHANNELS if c.receiver is not None}
    assert subscribed == documented


def test_dead_letter_channels_follow_their_streams():
    assert {c.address for c in DEAD_LETTERS} == {streams.dead_letter(s) for s in streams.GROUP}


@pytest.fixture(scope="session")
def asyncapi_parser() -> Path:
    if not (PARSER_DIR / "node_modules" / "@asyncapi" / "parser").is_dir():
        if shutil.which("npm") is None:
            subprocess.run(["apt-get", "update", "-qq"], check=True)
            subprocess.run(["apt-get", "install", "-y", "-qq", "nodejs", "npm"], check=True,
                           env={**os.environ, "DEBIAN_FRONTEND": "noninteractive"})
        PARSER_DIR.mkdir(parents=True, exist_ok=True)
        subprocess.run(
            ["npm", "install", "--no-audit", "--no-fund", "--silent", f"@asyncapi/parser@{PARSER_VERSION}"],
            cwd=PARSER_DIR, check=True, timeout=600,
        )
    (PARSER_DIR / "check.mjs").write_text(CHECK)
    return PARSER_DIR


def test_the_official_asyncapi_parser_accepts_the_document_without_errors(asyncapi_parser, tmp_path):
    path = tmp_path / "asyncapi.json"
    path.write_text(json.dumps(document()))
    run = subprocess.run(["node", "check.mjs", str(path)], cwd=asyncapi_parser,
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    report = json.loads(run.stdout.strip().splitlines()[-1])
    errors = [d for d in report["diagnostics"] if d["severity"] in (0, 1)]  # error, warning
    assert report["parsed"] and not errors, errors
