"""The gateway's HTTP API against its own OpenAPI document, by schemathesis: every
operation, called with requests generated from the document (valid ones and broken
ones), answers with a status, content type, headers and body the document declares, and
never a 500. The gateway runs for real (uvicorn, Redis as its own ACL user);
nothing runs behind it, so what would reach the searcher or a run's verifier ends in a
documented 504 or 202."""

from __future__ import annotations

import secrets

import pytest
import schemathesis
from hypothesis import HealthCheck, Phase, given, settings
from schemathesis.checks import (
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from pmsearch.services.gateway.app import create_app
from pmsearch.shared.settings import GatewaySettings
from tests.fixtures.gateway import Gateway

# Not schemathesis's "no 5xx": 503 and 504 are documented answers (store unreachable,
# nothing behind the gateway); a 500 is what may never come.
CHECKS = [status_code_conformance, content_type_conformance, response_headers_conformance, response_schema_conformance]
DOCUMENT = create_app(
    GatewaySettings(scope_key=secrets.token_urlsafe(32), admin_token=secrets.token_urlsafe(32))
).openapi()
SCHEMA = schemathesis.openapi.from_dict(DOCUMENT)
OPERATIONS = {op.label: op for op in (result.ok() for result in SCHEMA.get_all_operations())}


@pytest.fixture(scope="module")
def live(acl_redis):
    # A run's whole budget is a second: an agentic call waits for a result no verifier
    # will write, and gets its documented answer within seconds.
    with Gateway(acl_redis, default_max_seconds=1.0, search_rate_per_minute=0, auth_failures_per_minute=0) as gw:
        gw.key = gw.new_key()
        yield gw


@pytest.mark.parametrize("label", sorted(OPERATIONS))
def test_every_operation_answers_as_its_document_says(label, live):
    operation = OPERATIONS[label]
    security = operation.definition.raw.get("security") or []
    token = live.admin_token if any("adminToken" in s for s in security) else live.key

    @given(case=operation.as_strategy())
    @settings(max_examples=10, deadline=None, phases=[Phase.explicit, Phase.generate],
              suppress_health_check=list(HealthCheck), database=None)
    def call(case):
        response = case.call(base_url=live.url, headers={"Authorization": f"Bearer {token}"}, timeout=30)
        assert response.status_code != 500, response.text
        case.validate_response(response, checks=CHECKS)

    call()
