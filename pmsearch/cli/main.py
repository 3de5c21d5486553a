"""The ``pmsearch`` command: start the stack, ingest mail, search, manage keys, audit.

Errors end with a non-zero exit and one readable line, never a stack trace.
"""

from __future__ import annotations

import json
import secrets
import signal
import sys
import time
from datetime import UTC
from pathlib import Path
from typing import Literal

import typer

from pmsearch.cli.client import (  # noqa: F401 (re-exported)
    EXIT_CODES,
    UNREACHABLE,
    Admin,
    Gateway,
    _admin_token,
    _api_key,
    document_exit_codes,
    err,
    fail,
    out,
)
from pmsearch.cli.runs import runs_app
from pmsearch.cli.sync import sync_app
from pmsearch.cli.untrusted import line, snippet
from pmsearch.shared.settings import CliSettings, cli_settings

app = typer.Typer(add_completion=False, no_args_is_help=True, help=__doc__, epilog=EXIT_CODES)
keys_app = typer.Typer(no_args_is_help=True, help="Manage API keys.")
tenants_app = typer.Typer(no_args_is_help=True, help="Manage tenant settings.")
app.add_typer(keys_app, name="keys")
app.add_typer(tenants_app, name="tenants")
app.add_typer(runs_app, name="runs")
app.add_typer(sync_app, name="sync")

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
URL_HELP = "Gateway URL (default PM_GATEWAY_URL)"
SearchMode = Literal["keyword", "semantic", "hybrid"]


@app.command()
def ingest(
    path: Path = typer.Argument(..., help=".eml file, mbox, Maildir folder or folder of .eml files"),
    tenant: str = typer.Option(..., "--tenant", "-t", help="The tenant to import into"),
    mailbox: str = typer.Option(..., "--mailbox", "-m", help="The tenant's mailbox the mail belongs to"),
    folder: str | None = typer.Option(None, help="Folder for every message (default: from the source)"),
    full: bool = typer.Option(False, "--full", help="Send every message, not only those not imported before"),
    url: str | None = typer.Option(None, help=URL_HELP),
) -> None:
    """Import mail into a tenant's mailbox. Idempotent by Message-ID; a re-import of the
    same source sends only what it has not imported before."""
    from pmsearch.cli.ingest import ingest_path

    settings = cli_settings()
    totals = ingest_path(Admin(settings, url), path, tenant, mailbox, folder, full=full)
    out.print(f"indexed {totals['indexed']}, already present {totals['duplicate']}, "
              f"unchanged since the last import {totals['unchanged']}, skipped {totals['errors']}", soft_wrap=True)
    if totals["errors"]:
        raise typer.Exit(1)


@app.command()
def reembed(
    data: Path | None = typer.Option(None, help="The searcher's data folder (default PM_DATA_DIR)"),
) -> None:
    """Move the index to the embedder configured now (PM_EMBEDDING_BACKEND,
    PM_EMBEDDING_MODEL), with the searcher stopped; a cut run goes on where it stopped."""
    from pmsearch.services.searcher.embedding import embedder_id, make_embedder
    from pmsearch.services.searcher.errors import ReembedRefused
    from pmsearch.services.searcher.onnx_embedder import EmbedderUnavailable
    from pmsearch.services.searcher.reembed import reembed as move
    from pmsearch.shared.settings import SearcherSettings

    # Re-embedding reads and writes the index alone: no scope is signed or verified.
    settings = SearcherSettings(scope_key=secrets.token_urlsafe(32), **({"data_dir": data} if data else {}))
    try:
        embedder = make_embedder(settings)
        report = move(settings.data_dir, embedder, embedder_id(settings),
                      progress=lambda n: out.print(f"\r{n} points embedded", end=""))
    except (ReembedRefused, EmbedderUnavailable, ValueError) as exc:
        fail(str(exc).splitlines()[0])
    out.print(f"\nre-embedded {report.embedded} points ({report.carried} from a cut run) with "
              f"{embedder_id(settings)}, was {report.previous or 'unrecorded'}"
              + (f"; the old index is kept at {report.kept_at}" if report.kept_at else ""), soft_wrap=True)


@keys_app.command("create")
def keys_create(
    tenant: str = typer.Option(..., "--tenant", "-t", help="The key's tenant"),
    principal: str = typer.Option(..., "--principal", "-p", help="Who uses the key (a person or an agent)"),
    mailbox: list[str] = typer.Option(..., "--mailbox", "-m", help="Repeat for each mailbox in scope"),
    permission: list[str] = typer.Option(
        ["search", "search:agentic"], "--permission", help="Repeat for each permission: search, search:agentic"
    ),
    expires_in_days: float | None = typer.Option(None, min=0, help="The key stops working after this many days"),
    url: str | None = typer.Option(None, help=URL_HELP),
) -> None:
    """Create an API key; it is printed once and stored only as a hash."""
    from datetime import datetime, timedelta

    body = {"tenant_id": tenant, "principal": principal, "mailboxes": mailbox, "permissions": permission}
    if expires_in_days is not None:
        body["expires_at"] = (datetime.now(UTC) + timedelta(days=expires_in_days)).isoformat()
    created = Admin(cli_settings(), url).call("POST", "/v1/admin/keys", expect="key", json=body)
    out.print(created["key"], markup=False, highlight=False, soft_wrap=True)


@keys_app.command("list")
def keys_list(
    tenant: str | None = typer.Option(None, "--tenant", "-t", help="Only this tenant's keys"),
    url: str | None = typer.Option(None, help=URL_HELP),
) -> None:
    """List API keys: id, status, tenant, principal, permissions, mailboxes, expiry. Never the keys."""
    params = {"tenant_id": tenant} if tenant else None
    keys = Admin(cli_settings(), url).call("GET", "/v1/admin/keys", expect="keys", params=params)["keys"]
    for k in keys:
        fields = (
            k["key_id"], k["status"], k["tenant_id"], k["principal"], ",".join(k["permissions"]),
            ",".join(k["mailboxes"]), f"expires {k['expires_at']}" if k["expires_at"] else "no expiry",
        )
        out.print(line("  ".join(fields)), highlight=False, soft_wrap=True)
    if not keys:
        err.print("no API keys", markup=False, highlight=False)


@keys_app.command("revoke")
def keys_revoke(
    key_id: str = typer.Argument(..., help="The key's id, as `pmsearch keys list` shows it"),
    url: str | None = typer.Option(None, help=URL_HELP),
) -> None:
    """Revoke an API key; it gets 401 from then on."""
    revoked = Admin(cli_settings(), url).call("DELETE", f"/v1/admin/keys/{key_id}", expect="key_id")
    out.print(line(f"revoked {revoked['key_id']} ({revoked['tenant_id']}/{revoked['principal']})"), highlight=False, soft_wrap=True)


@tenants_app.command("set")
def tenants_set(
    tenant: str = typer.Argument(..., help="The tenant's id"),
    daily_cap: int | None = typer.Option(None, help="Agentic searches a day (search.agentic_daily_cap)"),
    max_steps: int | None = typer.Option(None, help="Steps a run may take (search.agentic_max_steps)"),
    max_seconds: float | None = typer.Option(None, help="Seconds a run may take (search.agentic_max_seconds)"),
    url: str | None = typer.Option(None, help=URL_HELP),
) -> None:
    """Change a tenant's agentic budgets or daily cap."""
    patch = {
        k: v
        for k, v in {
            "search.agentic_daily_cap": daily_cap,
            "search.agentic_max_steps": max_steps,
            "search.agentic_max_seconds": max_seconds,
        }.items()
        if v is not None
    }
    path = f"/v1/admin/tenants/{tenant}/settings"
    out.print_json(data=Admin(cli_settings(), url).call("PATCH", path, expect="search.agentic_daily_cap", json=patch))


@app.command()
def search(
    query: str = typer.Argument(..., help="Words, a phrase or an identifier to look for"),
    mode: SearchMode = typer.Option("hybrid", help="How to match: keyword, semantic or hybrid"),
    limit: int = typer.Option(10, min=1, max=100, help="At most this many hits"),
    key: str | None = typer.Option(None, help="API key (default PM_API_KEY)"),
    url: str | None = typer.Option(None, help=URL_HELP),
) -> None:
    """Search with an API key and print the hits."""
    settings = cli_settings()
    gateway = Gateway(url or settings.gateway_url, _api_key(settings, key), timeout=30)
    found = gateway.call("POST", "/v1/search", expect="hits", json={"query": query, "mode": mode, "limit": limit})
    for hit in found["hits"]:
        # Subjects, senders and snippets are the mail's own text: never markup.
        when = hit["date"] or ""
        heading = line((hit["subject"], "bold"), f"  {hit['sender']}  {when}  ", (hit["message_id"], "dim"))
        out.print(heading, highlight=False)
        out.print(line("   ", snippet(hit["snippet"])), highlight=False)


@app.command()
def ask(
    question: str = typer.Argument(..., help="A question about the mail in the key's scope"),
    as_json: bool = typer.Option(False, "--json", help="Print only the finished run (the verified result) as JSON"),
    key: str | None = typer.Option(None, help="API key (default PM_API_KEY)"),
    url: str | None = typer.Option(None, help=URL_HELP),
) -> None:
    """Ask a question of the mail; steps, evidence and the verified answer stream live."""
    from pmsearch.cli.ask import ask as run_ask

    settings = cli_settings()
    api_key = _api_key(settings, key)
    result = run_ask(None if as_json else out, url or settings.gateway_url, api_key, question)
    if result is None:
        fail("the run's event stream ended before it finished")
    if as_json:
        sys.stdout.write(json.dumps(result, ensure_ascii=False, indent=2) + "\n")

@app.command()
def mcp(
    key: str | None = typer.Option(None, help="API key (default PM_API_KEY)"),
    url: str | None = typer.Option(None, help="Gateway URL (default PM_GATEWAY_URL)"),
) -> None:
    """Serve MCP over stdio for an agent, relayed to the gateway's /mcp with this key."""
    from pmsearch.cli.mcp import serve

    settings = cli_settings()
    serve(url or settings.gateway_url, _api_key(settings, key))


@app.command()
def acl(
    out_file: Path = typer.Option(Path("deploy/redis/users.acl"), "--out", help="Where to write the Redis ACL file"),
    env_file: Path = typer.Option(Path(".env"), "--env", help="Where to write the matching passwords for compose"),
) -> None:
    """Make fresh secrets for compose: the Redis ACL file, and in .env the Redis passwords,
    scope key, admin token, Qdrant API key and Grafana password (other .env lines stay)."""
    import secrets as _secrets

    from pmsearch.cli.acl import ACCOUNTS, compose_secrets, merge_env, render
    from pmsearch.cli.private import write_private

    passwords = {u: _secrets.token_urlsafe(24) for u in ACCOUNTS}
    old_env = env_file.read_text() if env_file.exists() else ""
    write_private(out_file, render(passwords))
    write_private(env_file, merge_env(old_env, compose_secrets(passwords)))
    out.print(f"wrote {out_file} and {env_file} (both readable by you only)")


@app.command()
def verify(
    run_or_draft: str = typer.Argument(..., help="A run id (stored result), or a draft JSON file"),
    evidence: Path | None = typer.Option(None, help="Evidence JSON file (a list of messages) for a draft file"),
) -> None:
    """Re-verify a stored run or a draft against its evidence; print the verdict as JSON."""
    from pmsearch.services.verifier.audit import verify_command
    from pmsearch.shared.errors import PmError
    from pmsearch.shared.settings import VerifierSettings

    settings = cli_settings()
    redis_settings = VerifierSettings()
    secrets_file = settings.var_dir / "secrets.json"
    if redis_settings.redis_username is None and secrets_file.exists():
        # Audit a local stack with the verifier's own (read-only for evidence) Redis user.
        password = json.loads(secrets_file.read_text())["passwords"]["verifier"]
        redis_settings = VerifierSettings(
            redis_url=f"redis://127.0.0.1:{settings.redis_port}/0", redis_username="verifier", redis_password=password
        )
    try:
        verdict = verify_command(run_or_draft, evidence, redis_settings)
    except PmError as exc:
        fail(exc.detail)
    except Exception as exc:  # e.g. Redis unreachable: one line, not a trace
        fail(f"{type(exc).__name__}: {exc}")
    out.print_json(data=verdict)


def local_stack(settings: CliSettings, *, sentinel: bool = False):
    """The stack ``pmsearch up`` runs (not started): ports, var dir and model from the
    settings; with ``sentinel``, Redis as a primary, a replica and three sentinels."""
    from pmsearch.cli.stack import Stack

    model_env = settings.model_env()
    sync = {"PM_SYNC_CONFIG": str(settings.sync_config.resolve())} if settings.sync_config else {}
    return Stack(
        settings.var_dir,
        redis_port=settings.redis_port,
        gateway_port=settings.gateway_port,
        local_model=not model_env.get("PM_MODEL_BASE_URL"),
        extra_env=model_env | sync,
        services=("searcher", "verifier", "planner", "answerer", *(("sync",) if sync else ())),
        sentinel=sentinel,
    )


@app.command()
def up(
    no_demo: bool = typer.Option(False, "--no-demo", help="Do not load the demo mailbox"),
    sentinel: bool = typer.Option(
        False, "--sentinel", help="Run Redis as a primary, a replica and three sentinels (a failover demo)"
    ),
) -> None:
    """Start Redis, the services and the gateway on this machine; load the demo mailbox."""
    from pmsearch.cli.demo import load_demo
    from pmsearch.cli.supervisor import Supervisor

    settings = cli_settings()
    stack = local_stack(settings, sentinel=sentinel)
    # Stopped by a supervisor (systemd, a container runtime, `kill`) or by a closed
    # terminal, stop as on Ctrl-C: every process the stack started, then exit.
    for sig in STOP_SIGNALS:
        signal.signal(sig, signal.default_int_handler)
    try:
        out.print(f"starting pmsearch in {settings.var_dir}/ (logs in {settings.var_dir}/log/)")
        stack.start()
        if not no_demo:
            keys = load_demo(stack, settings.demo_dir, out)
            out.print("\n[bold green]pmsearch is running[/bold green] at " + stack.gateway_url + "  (OpenAPI: /docs)")
            for label, key in keys.items():
                out.print(f"  demo key {label}: {key}")
            alice, bob = keys["acme/alice"], keys["acme/bob"]
            out.print("\nTry:")
            for line in (
                f"PM_API_KEY={bob} .venv/bin/pmsearch search INV-2024-0173 --mode keyword",
                f"PM_API_KEY={alice} .venv/bin/pmsearch ask 'Did the insurer accept the Golf claim after we sent the photos?'",
                f"curl -N {stack.gateway_url}/v1/search -H 'Authorization: Bearer {alice}' -H 'Accept: text/event-stream' "
                "-H 'Content-Type: application/json' -d '{\"query\": \"Who is handling the Golf claim?\", \"mode\": \"agentic\"}'",
            ):
                out.print("  " + line, highlight=False, soft_wrap=True, markup=False)
            if stack.model_speed is None:
                out.print("The embedded model takes 15-90 s a question on two CPU cores, depending on the CPU "
                          "(its speed could not be measured here).")
            else:
                out.print(f"The embedded model reads {stack.model_speed:.0f} prompt tokens a second here: about "
                          f"{1000 / stack.model_speed:.0f} s for a question's passages; runs may take "
                          f"{stack.run_seconds:.0f} s.")
        out.print("\nCtrl-C stops everything.")
        Supervisor(stack, report=lambda text: out.print(time.strftime("%H:%M:%S ") + text, markup=False, highlight=False)).run()
    except KeyboardInterrupt:
        out.print("stopping")
    except (RuntimeError, TimeoutError) as exc:
        fail(str(exc).splitlines()[0] + f" (logs in {stack.log_dir}/)")
    finally:
        # A second Ctrl-C or SIGTERM must not cut the stop short and leave processes behind.
        for sig in STOP_SIGNALS:
            signal.signal(sig, signal.SIG_IGN)
        stack.stop()


@app.command("eval")
def eval_(
    set_path: Path = typer.Option(Path("evals/demo.yaml"), "--set", help="The labelled question set (YAML)"),
    gateway: str | None = typer.Option(None, help="Gateway URL (default PM_GATEWAY_URL)"),
    keys: Path | None = typer.Option(None, help="Demo keys file, label -> key (default <var>/demo-keys.json)"),
    only: str | None = typer.Option(None, help="Only these question ids, comma-separated, or @file of ids "
                                    "(evals/quick.txt: a 32-question sample)"),
    kinds: str | None = typer.Option(None, help="Only these kinds, comma-separated"),
    limit: int | None = typer.Option(None, min=1, help="At most this many questions"),
    baseline: bool = typer.Option(False, "--baseline", help="Also run every question with the single-shot strategy"),
    out_dir: Path | None = typer.Option(None, "--out", help="Reports go to <out>/<timestamp>/ (default <var>/eval)"),
    timeout: float = typer.Option(300.0, help="Seconds allowed per question"),
    concurrency: int = typer.Option(1, min=1, help="Questions in flight (the embedded model is serial)"),
    start: bool = typer.Option(False, "--start", help="Start the local stack as `pmsearch up` does and load the demo"),
    min_precision: float | None = typer.Option(None, help="Gate: exit 1 if citation precision is lower"),
    max_wrongly_answered: int | None = typer.Option(None, help="Gate: exit 1 if more questions are wrongly answered"),
    min_answered_right: float | None = typer.Option(None, help="Gate: exit 1 if the answered-right share is lower"),
) -> None:
    """Measure answer quality on a labelled question set; the last line of stdout is JSON."""
    from pmsearch.cli.evaluation.command import EvalOptions, GatewayUnreachable, question_ids, run_eval, split_csv
    from pmsearch.cli.evaluation.questions import EvalInputError

    try:
        opts = EvalOptions(
            set_path=set_path, gateway=gateway, keys=keys, only=question_ids(only), kinds=split_csv(kinds), limit=limit,
            baseline=baseline, out=out_dir, timeout=timeout, concurrency=concurrency, start=start,
            min_precision=min_precision, max_wrongly_answered=max_wrongly_answered, min_answered_right=min_answered_right,
        )
        failed = run_eval(opts, cli_settings(), out, err)
    except GatewayUnreachable as exc:
        fail(str(exc), UNREACHABLE)
    except EvalInputError as exc:
        fail(str(exc))
    except (RuntimeError, TimeoutError) as exc:  # --start: a service did not come up
        fail(str(exc).splitlines()[0])
    if failed:
        fail("gate failed: " + "; ".join(failed))


document_exit_codes(app)  # after the last command: every --help lists the exit codes


def main() -> None:  # pragma: no cover - console entry point
    try:
        app()
    except KeyboardInterrupt:
        sys.exit(130)


if __name__ == "__main__":
    main()
