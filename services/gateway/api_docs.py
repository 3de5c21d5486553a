"""Machine-readable documents the gateway serves besides OpenAPI: the AsyncAPI document
of the streams between the stages (``/asyncapi``, ``/asyncapi.yaml``)."""

from __future__ import annotations

from functools import lru_cache
from typing import Any

import yaml
from fastapi import APIRouter
from fastapi.responses import JSONResponse, Response
from pydantic import BaseModel, ConfigDict

from shared.asyncapi import document

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


@router.get("/asyncapi", response_model=AsyncApiDocument)
async def asyncapi() -> JSONResponse:
    """The streams between the stages as AsyncAPI 3.0 (JSON; YAML at `/asyncapi.yaml`):
    one typed message per channel."""
    return JSONResponse(_asyncapi())


# Out of the OpenAPI document: the same body as /asyncapi, which client generators
# cannot type as YAML.
@router.get("/asyncapi.yaml", response_model=AsyncApiDocument, response_class=YamlResponse, include_in_schema=False)
async def asyncapi_yaml() -> Response:
    """The same document as YAML."""
    return YamlResponse(_asyncapi_yaml())


@lru_cache(maxsize=1)
def _asyncapi_yaml() -> str:
    # Built once: rendering it per request let any caller spend the gateway's CPU.
    return yaml.safe_dump(_asyncapi(), sort_keys=False, allow_unicode=True)
