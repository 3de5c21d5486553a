"""Render the shipped Redis ACL template with this installation's passwords."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

TEMPLATE = Path(__file__).resolve().parent.parent / "deploy" / "redis" / "users.acl.in"
USERS = ("admin", "gateway", "searcher", "planner", "answerer", "verifier")


def render(passwords: dict[str, str], template: Path = TEMPLATE) -> str:
    text = template.read_text()

    def sub(m: re.Match[str]) -> str:
        return "#" + hashlib.sha256(passwords[m.group(1)].encode()).hexdigest()

    lines = [ln for ln in text.splitlines() if ln.strip() and not ln.lstrip().startswith("#")]
    return "\n".join(re.sub(r"@PASSWORD:(\w+)@", sub, ln) for ln in lines) + "\n"
