"""The gateway's OpenAPI document: problem responses, the SSE events, security schemes
and stable operation ids, so that a generated client gets typed bodies.

Routes declare what they answer (``response_model``, ``responses=problems(...)``);
:func:`install` finishes the document once, from the routes themselves:

* every 4xx/5xx answer is ``application/problem+json`` with :class:`ProblemDetails`
  (FastAPI's own 422 body is not what the gateway sends, so it is replaced);
* a route that depends on an API key or on the admin token gets that security scheme
  (and loses the raw ``Authorization``/``X-API-Key`` header parameters);
* every operation id is the route's function name, refused when two routes share one;
* a route that may stream (``/v1/search``, :func:`streams_events`) documents
  ``text/event-stream`` with the event schemas; the events route does so through its
  ``response_model`` and ``response_class=EventStream``.
"""

from __future__ import annotations

from typing import Annotated, Any, Callable, Literal

from fastapi import FastAPI, routing
from fastapi.openapi.utils import get_openapi
from fastapi.routing import APIRoute
from pydantic import BaseModel, ConfigDict, Field, TypeAdapter
from starlette.responses import Response

from pmsearch.shared.messages import Answer, EvidenceSummary, RunResult, ToolCall

PROBLEM_MEDIA_TYPE = "application/problem+json"
SSE_MEDIA_TYPE = "text/event-stream"

# Why each status can happen; a route lists the ones it can answer.
PROBLEM_REASONS: dict[int, str] = {
    400: "A header that does not validate (`bad_header`): `Last-Event-ID`, `Idempotency-Key`.",
    401: "No, unknown, expired or revoked API key, or a wrong admin token (`unauthorized`).",
    403: "The key lacks a permission, or names a mailbox outside its scope (`forbidden`).",
    404: "No such resource for this caller; someone else's run does not exist for you (`not_found`).",
    409: "The resource is in a state that refuses the request (`conflict`), or a request with the same "
         "`Idempotency-Key` is still starting its run (`idempotency_key_in_use`, `Retry-After`).",
    413: "The request body is over its limit, refused unread (`body_too_large`).",
    422: "The body, a parameter or a filter does not validate (`invalid_request`); `errors` lists each field.",
    429: "The tenant's daily cap, the key's search rate or its stream slots are spent, or the tenant holds its "
         "share of this replica (`tenant_busy`); `Retry-After` says when to try again.",
    503: "This replica is at capacity, or its store is unreachable (`overloaded`) or full (`store_full`); "
         "`Retry-After` says when to try again.",
    504: "The searcher, or the run, did not answer in time (`upstream_timeout`).",
}


class FieldError(BaseModel):
    field: str
    message: str


class ProblemDetails(BaseModel):
    """An error as RFC 9457 describes it, with pmsearch's stable ``code``."""

    model_config = ConfigDict(extra="allow")  # RFC 9457 extension members

    type: str = Field(description="A URI naming the problem type; `about:blank` for plain HTTP errors.")
    title: str
    status: int
    detail: str
    code: str | None = Field(default=None, description="Stable, machine-readable error code.")
    instance: str | None = Field(default=None, description="The request path.")
    retry_after: int | None = Field(default=None, description="Seconds to wait; also sent as `Retry-After`.")
    errors: list[FieldError] | None = Field(default=None, description="422 only: every field that failed.")


def problems(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """``responses=`` for a route that can answer these problem statuses. A route with
    security gets 401, and one with a body 413, without listing them."""
    return {status: {"model": ProblemDetails, "description": PROBLEM_REASONS[status]} for status in statuses}


def streams_events(description: str) -> dict[int | str, dict[str, Any]]:
    """``responses=`` for a route whose 200 may also be the run's event stream."""
    return {200: {"description": description, "content": {SSE_MEDIA_TYPE: {}}}}


# ---------------------------------------------------------------- SSE events


class StepPayload(BaseModel):
    step: int
    kind: str = Field(description="`first_search`, `search`, `decide`, ...")
    action: str | None = Field(default=None, description="`decide` steps: what the planner decided.")
    calls: list[ToolCall] | None = Field(default=None, description="The tool calls this step made.")


class EvidencePayload(BaseModel):
    step: int
    message: EvidenceSummary


class AnswerPayload(BaseModel):
    answer: Answer


class ErrorPayload(BaseModel):
    detail: str


class StepEvent(BaseModel):
    """A step of the run as it starts (relayed from the run's progress)."""

    event: Literal["step"]
    id: str = Field(description="Progress entry id; send it back as `Last-Event-ID` to resume.")
    data: StepPayload


class EvidenceEvent(BaseModel):
    """A message the searcher added to the run's evidence."""

    event: Literal["evidence"]
    id: str = Field(description="Progress entry id; send it back as `Last-Event-ID` to resume.")
    data: EvidencePayload


class AnswerEvent(BaseModel):
    """The verified answer (answered runs only), from the stored result. No id."""

    event: Literal["answer"]
    data: AnswerPayload


class DoneEvent(BaseModel):
    """The finished run, from the stored result; the last event. No id."""

    event: Literal["done"]
    data: RunResult


class ErrorEvent(BaseModel):
    """The run did not finish in time; the last event."""

    event: Literal["error"]
    data: ErrorPayload


RunEvent = Annotated[StepEvent | EvidenceEvent | AnswerEvent | DoneEvent | ErrorEvent, Field(discriminator="event")]

SSE_DESCRIPTION = (
    "Server-sent events. Each frame's `event:` line names one of the schemas below, its "
    "`data:` line holds the JSON `data` of that schema, and `step`/`evidence` frames carry "
    "an `id:`. Order: `step` and `evidence` as the run goes, then `answer` (answered runs) "
    "and `done`; or `error` when the run did not finish in time. Comment frames keep the "
    "connection alive."
)


class EventStream(Response):
    """Documents a route's 200 as ``text/event-stream``; the route returns its own
    streaming response."""

    media_type = SSE_MEDIA_TYPE


class RunStatus(BaseModel):
    """A run that has not finished yet (202)."""

    run_id: str
    status: Literal["running"]
    deadline: float = Field(description="Unix seconds by which the run ends, whatever happens.")


# ---------------------------------------------------------------- the document

SECURITY_SCHEMES = {
    "apiKey": {
        "type": "http",
        "scheme": "bearer",
        "description": "A tenant's API key (`pk_...`); `X-API-Key: <key>` is accepted too.",
    },
    "adminToken": {"type": "http", "scheme": "bearer", "description": "The deployment's admin token (PM_ADMIN_TOKEN)."},
}
_AUTH_HEADERS = {"authorization", "x-api-key"}


def _api_routes(app: FastAPI) -> list[Any]:
    """The documented API routes, those of included routers too (newer FastAPI keeps an
    included router as one entry of ``app.routes`` and yields its routes as contexts)."""
    iter_contexts = getattr(routing, "iter_route_contexts", None)
    if iter_contexts is None:
        candidates: list[Any] = list(app.routes)
    else:
        candidates = [ctx for ctx in iter_contexts(app.routes) if isinstance(ctx.original_route, APIRoute)]
    return [r for r in candidates if isinstance(getattr(r, "original_route", r), APIRoute) and r.include_in_schema]


def _calls(route: APIRoute) -> set[Callable[..., Any]]:
    found: set[Callable[..., Any]] = set()
    stack = [route.dependant]
    while stack:
        dependant = stack.pop()
        if dependant.call is not None:
            found.add(dependant.call)
        stack.extend(dependant.dependencies)
    return found


def _security(route: APIRoute, key_dependency: Callable[..., Any], admin_dependency: Callable[..., Any]) -> list[dict]:
    calls = _calls(route)
    if admin_dependency in calls:
        return [{"adminToken": []}]
    if key_dependency in calls:
        return [{"apiKey": []}]
    return []


def _problem_content(responses: dict[str, Any]) -> None:
    for status, response in responses.items():
        if status[:1] not in {"4", "5"}:
            continue
        response["content"] = {PROBLEM_MEDIA_TYPE: {"schema": {"$ref": "#/components/schemas/ProblemDetails"}}}
        if status == "422":
            response["description"] = PROBLEM_REASONS[422]


def _event_schema(components: dict[str, Any]) -> dict[str, Any]:
    """The SSE union with its models registered as components (existing ones kept)."""
    schema = TypeAdapter(RunEvent).json_schema(mode="serialization", ref_template="#/components/schemas/{model}")
    for name, definition in schema.pop("$defs", {}).items():
        components.setdefault(name, definition)
    return schema


def build(app: FastAPI, key_dependency: Callable[..., Any], admin_dependency: Callable[..., Any]) -> dict[str, Any]:
    """The finished document for ``app``; raises ValueError on a duplicate operation id."""
    routes = _api_routes(app)
    seen: dict[str, str] = {}
    for route in routes:
        op_id = route.operation_id or route.name
        if op_id in seen:
            raise ValueError(f"operation id {op_id!r} of {route.path} is already {seen[op_id]}'s")
        seen[op_id] = route.path
    doc = get_openapi(
        title=app.title, version=app.version, summary=app.summary, description=app.description, routes=app.routes,
        tags=app.openapi_tags,
    )
    components = doc.setdefault("components", {})
    schemas = components.setdefault("schemas", {})
    schemas.setdefault("ProblemDetails", ProblemDetails.model_json_schema(ref_template="#/components/schemas/{model}"))
    schemas.setdefault("FieldError", FieldError.model_json_schema())
    components["securitySchemes"] = SECURITY_SCHEMES
    events = _event_schema(schemas)
    for route in routes:
        for method in route.methods:
            op = doc["paths"][route.path_format][method.lower()]
            op["operationId"] = route.operation_id or route.name
            security = _security(route, key_dependency, admin_dependency)
            if security:
                op["security"] = security
                op["parameters"] = [
                    p for p in op.get("parameters", [])
                    if not (p["in"] == "header" and p["name"].lower() in _AUTH_HEADERS)
                ]
                if not op["parameters"]:
                    del op["parameters"]
            responses = op.setdefault("responses", {})
            if security:
                responses.setdefault("401", {"description": PROBLEM_REASONS[401]})
            if "requestBody" in op:
                responses.setdefault("413", {"description": PROBLEM_REASONS[413]})
            _problem_content(responses)
            for response in responses.values():
                content = response.get("content", {})
                if SSE_MEDIA_TYPE in content:
                    content[SSE_MEDIA_TYPE] = {"schema": events}
                    described = response["description"] if len(content) > 1 else ""
                    response["description"] = f"{described} {SSE_DESCRIPTION}".strip()
    for unused in ("HTTPValidationError", "ValidationError"):
        schemas.pop(unused, None)
    return doc


def install(app: FastAPI, key_dependency: Callable[..., Any], admin_dependency: Callable[..., Any]) -> None:
    """Serve :func:`build`'s document at ``/openapi.json``, built once on first use."""

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            app.openapi_schema = build(app, key_dependency, admin_dependency)
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]
