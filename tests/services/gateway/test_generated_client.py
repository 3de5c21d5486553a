"""A client generated from the gateway's OpenAPI document, used against the real stack."""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
from pathlib import Path

import pytest

GENERATOR = Path(sys.executable).parent / "openapi-python-client"
INVOICE = "INV-2024-0173"


@pytest.fixture(scope="module")
def client_package(api, tmp_path_factory):
    """The generated package, importable as ``pmsearch_client``."""
    root = tmp_path_factory.mktemp("generated")
    spec = root / "openapi.json"
    resp = api.http.get("/openapi.json")
    resp.raise_for_status()
    spec.write_bytes(resp.content)
    env = {**os.environ, "PATH": f"{GENERATOR.parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    run = subprocess.run(
        [str(GENERATOR), "generate", "--path", str(spec), "--meta", "none",
         "--output-path", str(root / "pmsearch_client")],
        capture_output=True, text=True, env=env, timeout=300,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert "Warning" not in run.stdout + run.stderr, run.stdout + run.stderr
    sys.path.insert(0, str(root))
    try:
        yield importlib.import_module("pmsearch_client")
    finally:
        sys.path.remove(str(root))
        for name in [n for n in sys.modules if n == "pmsearch_client" or n.startswith("pmsearch_client.")]:
            del sys.modules[name]


def test_generated_client_searches_and_gets_typed_hits(api, client_package):
    from pmsearch_client import AuthenticatedClient
    from pmsearch_client.api.search import search
    from pmsearch_client.models import SearchRequest, SearchRequestMode, SearchResponse

    with AuthenticatedClient(base_url=api.stack.gateway_url, token=api.key("acme/bob")) as client:
        result = search.sync(client=client, body=SearchRequest(query=INVOICE, mode=SearchRequestMode.KEYWORD))
    assert isinstance(result, SearchResponse)
    assert result.hits and any(INVOICE in hit.subject or INVOICE in hit.snippet for hit in result.hits)
    assert result.hits[0].message_id.startswith("m")


def test_generated_client_reads_a_refused_key_as_problem_details(api, client_package):
    from pmsearch_client import AuthenticatedClient
    from pmsearch_client.api.search import search
    from pmsearch_client.models import ProblemDetails, SearchRequest

    with AuthenticatedClient(base_url=api.stack.gateway_url, token="pk_not-a-real-key") as client:
        response = search.sync_detailed(client=client, body=SearchRequest(query=INVOICE))
    assert response.status_code == 401
    assert isinstance(response.parsed, ProblemDetails)
    assert response.parsed.code == "unauthorized"
