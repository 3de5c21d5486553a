"""``pmsearch runs list|show|cancel``: runs kept for inspection, through the gateway's
run administration API. Listing needs the admin token; ``show`` uses the admin token,
or an API key (``--key``, or ``PM_API_KEY`` without an admin token) for the key's own
runs; ``cancel`` is the run owner's, with its API key, or any run's with ``--admin``."""

from __future__ import annotations

import json
import sys
from datetime import UTC, datetime
from typing import Any, Literal

import typer

from pmsearch.cli.client import Admin, Gateway, _admin_token, _api_key, fail, out
from pmsearch.cli.untrusted import line
from pmsearch.shared.settings import CliSettings, cli_settings

runs_app = typer.Typer(no_args_is_help=True, help="List, show and cancel agentic runs.")

OutcomeFilter = Literal["answered", "insufficient_evidence", "budget_exhausted", "degraded", "cancelled", "running"]
URL_HELP = "Gateway URL (default PM_GATEWAY_URL)"


def _when(stamp: float | None) -> str:
    if stamp is None:
        return "-"
    return datetime.fromtimestamp(stamp, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _row(run: dict[str, Any]) -> None:
    state = run["outcome"] or run["status"]
    fields = [run["run_id"], _when(run["created_at"]), f"{run['tenant_id']}/{run['principal']}", state]
    if run.get("reason"):
        fields.append(run["reason"])
    _say("  ".join(fields), "  ", json.dumps(run["question"], ensure_ascii=False))


def _say(*parts: Any) -> None:
    out.print(line(*parts), highlight=False, soft_wrap=True)


def _dump(data: Any) -> None:
    sys.stdout.write(json.dumps(data, ensure_ascii=False, indent=2) + "\n")


@runs_app.command("list")
def runs_list(
    tenant: str | None = typer.Option(None, "--tenant", "-t", help="Only this tenant's runs"),
    principal: str | None = typer.Option(None, "--principal", "-p", help="Only this principal's runs"),
    outcome: OutcomeFilter | None = typer.Option(None, help="Only runs that ended so, or are still running"),
    since: str | None = typer.Option(None, help="Started at or after (RFC 3339, or Unix seconds)"),
    until: str | None = typer.Option(None, help="Started at or before (RFC 3339, or Unix seconds)"),
    limit: int = typer.Option(50, min=1, max=200, help="Runs per page"),
    cursor: str | None = typer.Option(None, help="Go on from this cursor (printed after a full page)"),
    all_pages: bool = typer.Option(False, "--all", help="Follow every page"),
    as_json: bool = typer.Option(False, "--json", help="Print the pages as JSON"),
    url: str | None = typer.Option(None, help=URL_HELP),
) -> None:
    """Runs kept for inspection, newest first: id, start, tenant/principal, outcome, reason, question."""
    admin = Admin(cli_settings(), url)
    params = {"tenant_id": tenant, "principal": principal, "outcome": outcome, "since": since, "until": until,
              "limit": limit, "cursor": cursor}
    pages = []
    while True:
        query = {k: v for k, v in params.items() if v is not None}
        page = admin.call("GET", "/v1/admin/runs", expect="runs", params=query)
        pages.append(page)
        if not as_json:
            for run in page["runs"]:
                _row(run)
        if not (all_pages and page["next_cursor"]):
            break
        params["cursor"] = page["next_cursor"]
    if as_json:
        _dump(pages if all_pages else pages[0])
    elif pages[-1]["next_cursor"]:
        _say(f"more: --cursor {pages[-1]['next_cursor']}")


def _reader(settings: CliSettings, key: str | None, url: str | None) -> tuple[Gateway, bool]:
    """The client ``show`` reads with, and whether it is the admin's."""
    base = url or settings.gateway_url
    has_admin = settings.admin_token is not None or (settings.var_dir / "secrets.json").exists()
    if key or (settings.api_key and not has_admin):
        return Gateway(base, _api_key(settings, key)), False
    return Gateway(base, _admin_token(settings)), True


@runs_app.command("show")
def runs_show(
    run_id: str = typer.Argument(..., help="The run's id (as `pmsearch runs list` or X-Run-Id shows it)"),
    key: str | None = typer.Option(None, help="Read it as this API key's own run, not as the admin"),
    as_json: bool = typer.Option(False, "--json", help="Print the run as JSON"),
    url: str | None = typer.Option(None, help=URL_HELP),
) -> None:
    """One run: its status and, once finished, outcome, reason, answer and evidence."""
    gateway, as_admin = _reader(cli_settings(), key, url)
    if as_admin:
        view = gateway.call("GET", f"/v1/admin/runs/{run_id}", expect="run")
        summary, result = view["run"], view["result"]
    else:
        result = gateway.call("GET", f"/v1/runs/{run_id}", expect="run_id")
        summary = None
        if result.get("status") == "running":
            summary, result = result, None
    if as_json:
        _dump({"run": summary, "result": result} if as_admin else (result or summary))
        return
    if summary is not None and as_admin:
        _row(summary)
    if result is None:
        _say(f"run {run_id} is running")
        return
    _say(f"outcome: {result['outcome']}", f" ({result['reason']})" if result.get("reason") else "")
    if result.get("answer"):
        _say("answer: ", result["answer"]["text"])
    usage = result.get("usage", {})
    _say(
        f"steps {usage.get('steps', 0)}, model calls {usage.get('model_calls', 0)}, "
        f"evidence {len(result.get('evidence', []))}"
    )
    for ev in result.get("evidence", []):
        _say("  ", ev["message_id"], "  ", ev["sender"], "  ", ev["subject"])


@runs_app.command("cancel")
def runs_cancel(
    run_id: str = typer.Argument(..., help="The run's id"),
    key: str | None = typer.Option(None, help="The run owner's API key (default PM_API_KEY)"),
    admin: bool = typer.Option(False, "--admin", help="Cancel any tenant's run with the admin token"),
    url: str | None = typer.Option(None, help=URL_HELP),
) -> None:
    """Cancel a running run (as its owner, or any run with --admin): it ends once, with
    outcome `cancelled`."""
    settings = cli_settings()
    base = url or settings.gateway_url
    if admin:
        body = Gateway(base, _admin_token(settings)).call("DELETE", f"/v1/admin/runs/{run_id}", expect="run_id")
    else:
        body = Gateway(base, _api_key(settings, key)).call("DELETE", f"/v1/runs/{run_id}", expect="run_id")
    if body.get("status") == "cancelling":
        _say(f"cancelling run {run_id}; its result follows shortly")
    elif body.get("outcome") == "cancelled":
        _say(f"cancelled run {run_id}")
    else:
        fail(f"run {run_id} ended {body.get('outcome')}")
