"""Machine-readable documents the gateway serves besides OpenAPI: the AsyncAPI document
of the streams between the stages (``/asyncapi``, ``/asyncapi.yaml``). It describes the
service's inside, so it is for operators: on the operator port when there is one, else
on the public port to an operator only (:mod:`pmsearch.services.gateway.operators`)."""

from __future__ import annotations

import json
from functools import lru_cache
from typing import Any

import yaml
from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, Response
from pydantic import BaseModel, ConfigDict

from pmsearch.services.gateway.errors import NotFound
from pmsearch.services.gateway.openapi import problems
from pmsearch.services.gateway.operators import operator_request
from pmsearch.shared.asyncapi import document

router = APIRouter(tags=["documents"])


class AsyncApiDocument(BaseModel):
    """An AsyncAPI 3.0 document; its channels, operations and components as the
    specification defines them."""

    model_config = ConfigDict(extra="allow")

    asyncapi: str
    info: dict[str, Any]
    channels: dict[str, Any]
    operations: dict[str, Any]
    components: dict[str, Any]


@lru_cache(maxsize=1)
def _asyncapi() -> dict[str, Any]:
    return document()


class YamlResponse(Response):
    media_type = "application/yaml"


async def _for_operators(request: Request) -> None:
    if not await operator_request(request):
        raise NotFound("no such resource")  # not advertised to the public


@router.get("/asyncapi", response_model=AsyncApiDocument, responses=problems(404))
async def asyncapi(request: Request) -> JSONResponse:
    """The streams between the stages as AsyncAPI 3.0 (JSON; YAML at `/asyncapi.yaml`):
    one typed message per channel. For operators: on the operator port when the gateway
    has one, else here to the admin token or a client on the gateway's host; 404 to others."""
    await _for_operators(request)
    return JSONResponse(_asyncapi())


# Out of the OpenAPI document: the same body as /asyncapi, which client generators
# cannot type as YAML.
@router.get("/asyncapi.yaml", response_model=AsyncApiDocument, response_class=YamlResponse, include_in_schema=False)
async def asyncapi_yaml(request: Request) -> Response:
    """The same document as YAML."""
    await _for_operators(request)
    return YamlResponse(_asyncapi_yaml())


@lru_cache(maxsize=1)
def _asyncapi_yaml() -> str:
    # Built once: rendering it per request let any caller spend the gateway's CPU.
    return yaml.safe_dump(_asyncapi(), sort_keys=False, allow_unicode=True)


@lru_cache(maxsize=1)
def _asyncapi_json() -> bytes:
    return json.dumps(_asyncapi()).encode()


# What the operator port serves besides metrics and probes (shared.health.start_server).
OPERATOR_DOCUMENTS = {
    "/asyncapi": ("application/json", _asyncapi_json),
    "/asyncapi.yaml": ("application/yaml", lambda: _asyncapi_yaml().encode()),
}
