"""Render the shipped Redis ACL template with this installation's passwords."""

from __future__ import annotations

import hashlib
import re
import secrets
from pathlib import Path

TEMPLATE = Path(__file__).resolve().parents[2] / "deploy" / "redis" / "users.acl.in"
USERS = ("admin", "gateway", "searcher", "planner", "answerer", "verifier", "sync")
# The users of the machinery around pmsearch, never of a service: Sentinel and a replica
# on the data servers, the one every service asks the sentinels with, and an
# autoscaler's (KEDA) reader of the stages' stream lag.
INFRA_USERS = ("sentinel", "replica", "discovery", "keda")
ACCOUNTS = USERS + INFRA_USERS


def _user_lines(template: Path) -> list[str]:
    """The template's ``user`` lines, each with its indented continuation lines joined."""
    lines: list[str] = []
    for raw in template.read_text().splitlines():
        if not raw.strip() or raw.lstrip().startswith("#"):
            continue
        if raw[0].isspace() and lines:
            lines[-1] += " " + raw.strip()
        else:
            lines.append(raw.strip())
    return lines


def render(passwords: dict[str, str], template: Path = TEMPLATE) -> str:
    def sub(m: re.Match[str]) -> str:
        return "#" + hashlib.sha256(passwords[m.group(1)].encode()).hexdigest()

    return "\n".join(re.sub(r"@PASSWORD:(\w+)@", sub, ln) for ln in _user_lines(template)) + "\n"


def rules(user: str, password: str, template: Path = TEMPLATE) -> list[str]:
    """One user's rules as ``ACL SETUSER <user> reset <rules...>`` arguments, each
    selector ``(...)`` one argument."""
    line = next(ln for ln in _user_lines(template) if ln.split()[:2] == ["user", user])
    line = line.replace(f"@PASSWORD:{user}@", f">{password}")
    return re.findall(r"\([^)]*\)|\S+", line)[2:]


def compose_secrets(passwords: dict[str, str]) -> dict[str, str]:
    """The .env entries docker-compose.yml requires: every secret, freshly made."""
    values = {f"PM_REDIS_PASSWORD_{u.upper()}": pw for u, pw in passwords.items()}
    values["PM_SCOPE_KEY"] = secrets.token_urlsafe(32)
    values["PM_ADMIN_TOKEN"] = "adm_" + secrets.token_urlsafe(32)
    values["PM_QDRANT_API_KEY"] = secrets.token_urlsafe(32)
    values["PM_GRAFANA_ADMIN_PASSWORD"] = secrets.token_urlsafe(24)
    return values


def merge_env(old: str, values: dict[str, str]) -> str:
    """``old`` .env text with ``values`` set; the operator's other lines (model URL, ...) stay."""
    kept = [ln for ln in old.splitlines() if ln.partition("=")[0].strip() not in values]
    return "\n".join(kept + [f"{k}={v}" for k, v in values.items()]) + "\n"


# What may be sent to a sentinel itself, for its sentinel.conf: the other sentinels
# everything (they share the failover's state); a service only ask who the primary is
# (redis-py asks SENTINEL MASTERS, then each one's replicas or the primary's address).
_DISCOVERY = (
    "+ping +sentinel|get-master-addr-by-name +sentinel|masters +sentinel|master +sentinel|slaves "
    "+sentinel|replicas +sentinel|sentinels"
)


def sentinel_users(passwords: dict[str, str]) -> list[str]:
    """The ``user`` lines of a sentinel's configuration: nobody as the default user."""
    return [
        "user default off",
        f"user sentinel on >{passwords['sentinel']} allchannels +@all",
        f"user discovery on >{passwords['discovery']} resetchannels -@all {_DISCOVERY}",
    ]
