"""The run inspector page: ``GET /runs/{id}``.

A browser cannot send a bearer header when it navigates, and a key must never travel in
a URL, so the page itself carries no run data: it is a server-rendered shell whose one
script (``static/inspector.js``) asks for the key in a form, keeps it in the tab's
``sessionStorage`` and fetches ``/runs/{id}/data`` and the SSE stream
``/runs/{id}/events`` with an ``Authorization`` header (a streaming ``fetch``, since
``EventSource`` cannot send one). Those two answer a key of the run's principal and
scope (else the 404 of a run that does not exist, as ``GET /v1/runs/{id}``) or the admin
token, which sees any run.

Mail text is untrusted: templates autoescape, the script writes text only with
``textContent``, and every page answer carries a Content-Security-Policy that allows no
inline script, no other origin and no form submission.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated

from fastapi import APIRouter, Header
from fastapi.responses import FileResponse, HTMLResponse
from jinja2 import Environment, FileSystemLoader, select_autoescape

from pmsearch.services.gateway.auth import Viewer
from pmsearch.services.gateway.errors import NotFound
from pmsearch.services.gateway.inspector.schemas import RunView
from pmsearch.services.gateway.inspector.service import Inspector
from pmsearch.services.gateway.runs.service import parse_last_event_id
from pmsearch.services.gateway.state import Gateway, Objects
from pmsearch.shared.runstore import RunStore

HERE = Path(__file__).parent
STATIC = {"inspector.js": "text/javascript", "inspector.css": "text/css"}
_RUN_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")
CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; "
    "img-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)
PAGE_HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}

_templates = Environment(
    loader=FileSystemLoader(HERE / "templates"),
    autoescape=select_autoescape(["html"], default=True),
)

router = APIRouter(tags=["inspector"])


def _inspector(gw: Gateway) -> Inspector:
    return Inspector(RunStore(gw.redis))


def _run_id(run_id: str) -> str:
    if not _RUN_ID.fullmatch(run_id):
        raise NotFound(f"no run {run_id[:64]}")
    return run_id


@router.get("/runs/{run_id}", response_class=HTMLResponse, include_in_schema=False)
async def page(run_id: str) -> HTMLResponse:
    """The page's shell; the script fills it once the viewer has given a key."""
    html = _templates.get_template("inspector.html").render(run_id=_run_id(run_id))
    return HTMLResponse(html, headers=PAGE_HEADERS)


@router.get("/runs/{run_id}/data", response_model=RunView, include_in_schema=False)
async def data(run_id: str, who: Viewer, gw: Objects) -> RunView:
    """What the inspector shows of a run: record, budgets, result when finished and each
    cited excerpt in its source while the evidence is kept."""
    return await _inspector(gw).view(who, _run_id(run_id))


@router.get("/runs/{run_id}/events", include_in_schema=False)
async def events(run_id: str, who: Viewer, gw: Objects, last_event_id: Annotated[str | None, Header()] = None):
    """The run's SSE events, as ``GET /v1/runs/{id}/events`` sends them, for the page."""
    after = parse_last_event_id(last_event_id)
    meta = await _inspector(gw).meta(who, _run_id(run_id))
    # The admin's streams count against the tenant it looks at; a key's, against its own limit too.
    async with gw.admission.hold("event_streams", who, tenant=meta.tenant_id, key_limit="stream") as held:
        return held.stream(gw.runs.events(meta, after))


@router.get("/inspector/static/{name}", include_in_schema=False)
async def static(name: str) -> FileResponse:
    if name not in STATIC:
        raise NotFound(f"no file {name[:64]}")
    return FileResponse(HERE / "static" / name, media_type=STATIC[name], headers=PAGE_HEADERS)
