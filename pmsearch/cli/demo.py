"""Load the demo mailbox (or an evaluation set's own mail) into a running stack and make
one API key per user."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
from rich.console import Console

from pmsearch.cli.private import write_private
from pmsearch.cli.stack import Stack

# Who may see what in the demo: alice sees her own and the shared claims mailbox.
DEMO_KEYS = {
    "acme/alice": {"tenant_id": "acme", "principal": "alice@acme.example", "mailboxes": ["alice", "shared-claims"]},
    "acme/bob": {"tenant_id": "acme", "principal": "bob@acme.example", "mailboxes": ["bob"]},
    "globex/carol": {"tenant_id": "globex", "principal": "carol@globex.example", "mailboxes": ["carol"]},
}


# The embedded model reads 20-90 prompt tokens a second on two CPU cores (depending on
# the CPU), so one call with the passages in view takes 12-50 s. Most questions take one
# call; one that needs a search round takes three (attempt, search request, attempt).
# So the demo tenants get two steps and more time than the 8 s default (which suits a
# hosted model), more still on a machine whose model reads slower (the stack measures it
# when it starts the model). Measured with `pmsearch eval`: see docs/evaluation.md.
DEMO_BUDGETS = {"search.agentic_max_steps": 2, "search.agentic_max_seconds": 90}


def load_demo(stack: Stack, demo_dir: Path, console: Console) -> dict[str, str]:
    return load_mailboxes(stack, demo_dir, DEMO_KEYS, stack.var_dir / "demo-keys.json", console)


def load_mailboxes(
    stack: Stack, root: Path, key_specs: dict[str, dict], keys_file: Path, console: Console
) -> dict[str, str]:
    """Import every ``<tenant>/<mailbox>/<folder>/`` under ``root`` (already loaded mail is
    skipped), give its tenants the demo budgets and make the keys of ``key_specs``; the
    keys are kept in ``keys_file`` and returned by label."""
    from pmsearch.cli.client import Admin
    from pmsearch.cli.ingest import ingest_path
    from pmsearch.services.searcher.ingest.readers import demo_mailboxes
    from pmsearch.shared.settings import CliSettings

    settings = CliSettings(gateway_url=stack.gateway_url, admin_token=stack.secrets.admin_token)
    admin = Admin(settings)
    for tenant, mailbox, path in demo_mailboxes(root):
        totals = ingest_path(admin, path, tenant, mailbox, None, quiet=True)
        console.print(f"  {tenant}/{mailbox}: {totals['indexed']} new, {totals['duplicate'] + totals['unchanged']} already loaded")
    budgets = DEMO_BUDGETS
    if stack.run_seconds is not None:  # measured on this machine's model (pmsearch/cli/stack.py)
        budgets = {**budgets, "search.agentic_max_seconds": max(DEMO_BUDGETS["search.agentic_max_seconds"], stack.run_seconds)}
    for tenant in {spec["tenant_id"] for spec in key_specs.values()}:
        admin.call("PATCH", f"/v1/admin/tenants/{tenant}/settings", json=budgets)
    keys = json.loads(keys_file.read_text()) if keys_file.exists() else {}
    for label, spec in key_specs.items():
        if label in keys and _works(stack, keys[label]):
            continue
        keys[label] = admin.call("POST", "/v1/admin/keys", json=spec)["key"]
    write_private(keys_file, json.dumps(keys, indent=2))
    return keys


def _works(stack: Stack, key: str) -> bool:
    resp = httpx.post(
        f"{stack.gateway_url}/v1/search",
        json={"query": "hello", "mode": "keyword", "limit": 1},
        headers={"Authorization": f"Bearer {key}"},
        timeout=30,
    )
    return resp.status_code != 401
