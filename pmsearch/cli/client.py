"""The CLI's side of the gateway: one place that turns every way a call can go wrong
(nobody listening, something that is not a pmsearch gateway, a problem+json refusal)
into one readable line on stderr and a documented exit code."""

from __future__ import annotations

import json
from typing import Any, NoReturn

import httpx
import typer
from rich.console import Console
from typer.models import DefaultPlaceholder

from pmsearch.cli.untrusted import line
from pmsearch.shared.settings import CliSettings

out = Console()
err = Console(stderr=True, soft_wrap=True)  # one line per message, whatever the width

# Exit codes, also under every command's `--help` and in the README.
OK = 0
FAILED = 1  # the gateway refused the request (its problem is printed), or the command found a problem
USAGE = 2  # a wrong option or argument (click's own code)
UNREACHABLE = 3  # no pmsearch gateway at the URL: nothing listening, a timeout, or another kind of server
INTERRUPTED = 130  # Ctrl-C

EXIT_CODES = (
    "Exit codes: 0 done; 1 the gateway refused the request or the command found a problem "
    "(one line on stderr says which); 2 a wrong option or argument; 3 no pmsearch gateway at "
    "the URL (nothing listening, a timeout, or another kind of server); 130 interrupted."
)

PROBLEM_MEDIA_TYPE = "application/problem+json"


def document_exit_codes(app: typer.Typer) -> None:
    """Put :data:`EXIT_CODES` under every command's and group's ``--help``: a user reads
    the help of the command they run, not only ``pmsearch --help``. Call it once every
    command is registered."""
    for command in app.registered_commands:
        command.epilog = command.epilog or EXIT_CODES
    for group in app.registered_groups:
        # add_typer's own value wins over the sub-app's, so set it there (unless given).
        if isinstance(group.epilog, DefaultPlaceholder) or not group.epilog:
            group.epilog = EXIT_CODES
        if group.typer_instance is not None:
            document_exit_codes(group.typer_instance)


def fail(message: str, code: int = FAILED) -> NoReturn:
    # The message may quote the server or mail (a problem's detail): text, not markup.
    err.print(line(("error:", "red"), " ", message), highlight=False)
    raise typer.Exit(code)


def admin_token_if_any(settings: CliSettings) -> str | None:
    """``PM_ADMIN_TOKEN``, else the local stack's (``<var>/secrets.json``), else None."""
    if settings.admin_token:
        return settings.admin_token.get_secret_value()
    try:
        return json.loads((settings.var_dir / "secrets.json").read_text())["admin_token"]
    except (OSError, ValueError, KeyError):
        return None


def _admin_token(settings: CliSettings) -> str:
    token = admin_token_if_any(settings)
    if token is None:
        fail("no admin token: set PM_ADMIN_TOKEN or run from the folder where `pmsearch up` ran")
    return token


def _api_key(settings: CliSettings, key: str | None) -> str:
    api_key = key or (settings.api_key.get_secret_value() if settings.api_key else None)
    if not api_key:
        fail("no API key: pass --key or set PM_API_KEY")
    return api_key


def _one_line(text: str, limit: int = 200) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def unreachable(base_url: str, exc: Exception) -> NoReturn:
    """A transport failure: nothing (or nothing that speaks HTTP) at ``base_url``."""
    if isinstance(exc, (httpx.InvalidURL, httpx.UnsupportedProtocol)):
        fail(f"{base_url} is not a usable gateway URL ({_one_line(str(exc))})", UNREACHABLE)
    if isinstance(exc, httpx.TimeoutException):
        reason = "it did not answer in time"
    elif isinstance(exc, httpx.ConnectError):
        reason = _one_line(str(exc)) or "connection failed"
    else:
        reason = _one_line(str(exc)) or type(exc).__name__
    fail(f"cannot reach the gateway at {base_url}: {reason}", UNREACHABLE)


def refused(resp: httpx.Response) -> NoReturn:
    """A 4xx/5xx answer: the gateway's problem in one line, or, when the body is not a
    problem, a server that is not a pmsearch gateway."""
    media_type = resp.headers.get("content-type", "").split(";")[0].strip()
    body: Any = None
    if media_type in (PROBLEM_MEDIA_TYPE, "application/json"):
        try:
            body = resp.json()
        except ValueError:
            body = None
    if media_type == PROBLEM_MEDIA_TYPE and isinstance(body, dict):
        fail(_one_line(f"{resp.status_code} {body.get('title', '')}: {body.get('detail', '')}", 400))
    not_pmsearch(resp)


def not_pmsearch(resp: httpx.Response) -> NoReturn:
    media_type = resp.headers.get("content-type", "").split(";")[0].strip() or "no content type"
    fail(
        f"{resp.request.url} answered {resp.status_code} with {media_type}, which a pmsearch gateway does not send; "
        "check --url or PM_GATEWAY_URL",
        UNREACHABLE,
    )


def json_body(resp: httpx.Response) -> dict[str, Any]:
    """A successful answer's JSON object, or the exit for a server that is not pmsearch."""
    if resp.status_code >= 400:
        refused(resp)
    try:
        body = resp.json()
    except ValueError:
        not_pmsearch(resp)
    if not isinstance(body, dict):
        not_pmsearch(resp)
    return body


class Gateway:
    """A small gateway client: every failure ends the command with one line."""

    def __init__(self, base_url: str, token: str, timeout: float = 600) -> None:
        self.base_url = base_url
        self.client = httpx.Client(base_url=base_url, headers={"Authorization": f"Bearer {token}"}, timeout=timeout)

    def call(self, method: str, path: str, *, expect: str | None = None, **kwargs: Any) -> dict[str, Any]:
        """The answer's JSON object; with ``expect``, one that has that member (another
        JSON API answering 200 is not the gateway)."""
        try:
            resp = self.client.request(method, path, **kwargs)
        except (httpx.HTTPError, httpx.InvalidURL) as exc:
            unreachable(self.base_url, exc)
        body = json_body(resp)
        if expect is not None and expect not in body:
            not_pmsearch(resp)
        return body


class Admin(Gateway):
    """The admin API, with the admin token."""

    def __init__(self, settings: CliSettings, url: str | None = None) -> None:
        super().__init__(url or settings.gateway_url, _admin_token(settings))
