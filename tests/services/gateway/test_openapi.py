"""The gateway's OpenAPI document, as a client generator reads it."""

from __future__ import annotations

import secrets

import pytest
from fastapi import FastAPI

from pmsearch.services.gateway.app import create_app
from pmsearch.services.gateway.openapi import build
from pmsearch.shared.settings import GatewaySettings

EVENTS = {"step", "evidence", "answer", "done", "error"}
PROBLEM = {"application/problem+json": {"schema": {"$ref": "#/components/schemas/ProblemDetails"}}}


@pytest.fixture(scope="module")
def doc() -> dict:
    settings = GatewaySettings(scope_key=secrets.token_urlsafe(32), admin_token=secrets.token_urlsafe(32))
    return create_app(settings).openapi()


def operations(doc: dict):
    for path, item in doc["paths"].items():
        for method, op in item.items():
            yield f"{method.upper()} {path}", op


def test_every_operation_has_an_explicit_id_a_tag_and_a_typed_success_body(doc):
    ids = [op["operationId"] for _, op in operations(doc)]
    assert len(ids) == len(set(ids))
    assert {"search", "get_run", "run_events", "create_key", "list_keys", "ingest", "asyncapi"} <= set(ids)
    for name, op in operations(doc):
        assert op.get("tags"), name
        success = [r for status, r in op["responses"].items() if status.startswith("2")]
        schemas = [c["schema"] for r in success for c in r.get("content", {}).values()]
        assert schemas and all(s for s in schemas), f"{name} has no typed success body"


def test_every_error_response_is_problem_json_with_the_problem_details_schema(doc):
    for name, op in operations(doc):
        for status, response in op["responses"].items():
            if status[0] in "45":
                assert response["content"] == PROBLEM, f"{name} {status}"
    problem = doc["components"]["schemas"]["ProblemDetails"]
    assert {"type", "title", "status", "detail"} <= set(problem["required"])
    assert "HTTPValidationError" not in doc["components"]["schemas"]


@pytest.mark.parametrize(
    "operation,statuses",
    [
        ("POST /v1/search", {"401", "403", "413", "422", "429", "503", "504"}),
        ("GET /v1/runs/{run_id}", {"401", "404", "503"}),
        ("GET /v1/runs/{run_id}/events", {"400", "401", "404", "429", "503"}),
        ("DELETE /v1/admin/keys/{key_id}", {"401", "404", "503"}),
        ("POST /v1/admin/ingest", {"401", "413", "422", "429", "503", "504"}),
    ],
)
def test_the_problems_a_route_can_answer_are_documented(doc, operation, statuses):
    op = dict(operations(doc))[operation]
    assert statuses <= set(op["responses"])


def test_key_routes_and_admin_routes_declare_their_bearer_scheme(doc):
    schemes = doc["components"]["securitySchemes"]
    assert schemes["apiKey"] == schemes["apiKey"] | {"type": "http", "scheme": "bearer"}
    assert schemes["adminToken"] == schemes["adminToken"] | {"type": "http", "scheme": "bearer"}
    assert "security" not in dict(operations(doc))["GET /asyncapi"]
    for name, op in operations(doc):
        path = name.split(" ", 1)[1]
        if path.startswith("/v1/"):
            expected = [{"adminToken": []}] if path.startswith("/v1/admin/") else [{"apiKey": []}]
            assert op.get("security") == expected, name
        headers = {p["name"].lower() for p in op.get("parameters", []) if p["in"] == "header"}
        assert not headers & {"authorization", "x-api-key"}, name


@pytest.mark.parametrize("operation", ["POST /v1/search", "GET /v1/runs/{run_id}/events"])
def test_event_stream_routes_describe_every_event_with_its_payload(doc, operation):
    schemas = doc["components"]["schemas"]
    stream = dict(operations(doc))[operation]["responses"]["200"]["content"]["text/event-stream"]["schema"]
    mapping = stream["discriminator"]["mapping"]
    assert set(mapping) == EVENTS
    assert {r["$ref"] for r in stream["oneOf"]} == set(mapping.values())
    for event, ref in mapping.items():
        model = schemas[ref.rsplit("/", 1)[1]]
        assert model["properties"]["event"]["const"] == event
        assert model["properties"]["data"]["$ref"].startswith("#/components/schemas/")
    assert schemas["DoneEvent"]["properties"]["data"]["$ref"].endswith("/RunResult")


def test_two_routes_with_one_operation_id_are_refused():
    app = FastAPI()

    @app.get("/a")
    async def same() -> dict: ...

    app.add_api_route("/b", same, methods=["GET"])
    with pytest.raises(ValueError, match="operation id 'same'"):
        build(app, key_dependency=lambda: None, admin_dependency=lambda: None)


def test_a_real_runs_events_match_their_documented_schemas(api, stack_model):
    import json

    import httpx
    from httpx_sse import connect_sse
    from jsonschema import Draft202012Validator

    from pmsearch.testing.brains import honest

    served = api.http.get("/openapi.json").json()
    stream = served["paths"]["/v1/search"]["post"]["responses"]["200"]["content"]["text/event-stream"]["schema"]
    validator = Draft202012Validator({**stream, "components": served["components"]})
    stack_model.set_script(honest(search_query=lambda question: "Golf claim accepted photos"))
    seen = []
    with httpx.Client(base_url=api.stack.gateway_url, timeout=120) as client, connect_sse(
        client, "POST", "/v1/search", json={"query": "Did the insurer accept the Golf claim?", "mode": "agentic"},
        headers={"Authorization": f"Bearer {api.key('acme/alice')}"},
    ) as source:
        for sse in source.iter_sse():
            frame = {"event": sse.event, "data": json.loads(sse.data)} | ({"id": sse.id} if sse.id else {})
            errors = [e.message for e in validator.iter_errors(frame)]
            assert not errors, (frame, errors)
            seen.append(sse.event)
    assert {"step", "evidence", "done"} <= set(seen) and seen[-1] == "done"


def test_text_a_model_wrote_outside_the_answer_is_documented_as_unverified(doc):
    schemas = doc["components"]["schemas"]
    labelled = {
        ("RunResult", "model_note"), ("StepTrace", "note"), ("ToolOutcome", "arguments"),
        ("RemovedSentence", "text"), ("WidenAttempt", "detail"),
    }
    for schema, field in labelled:
        assert schemas[schema]["properties"][field]["description"].startswith("Unverified"), (schema, field)
