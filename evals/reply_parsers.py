"""How well each way of finding a reply's own words does on the real-mail corpora.

Run from the repository root: ``.venv/bin/python evals/reply_parsers.py``. The libraries
compared besides :mod:`pmsearch.shared.mail_parts` are optional: ``pip install quotequail
email-reply-parser`` (mail-parser-reply is a dependency).

The truth is taken from the mail itself. For every message of ``evals/real/mail`` whose
parent (``In-Reply-To``) is in the corpus too, a line of the reply (20 characters or more)
that is marked ``>`` or repeats a line of the parent (marks and spaces aside) is quoted;
any other line that is no attribution and no line of a diff is the sender's own. A method is scored
by how many quoted lines leak into what it calls the reply's own words, and how many own
lines it keeps. Prints a table and, last, one JSON line.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from pmsearch.services.searcher.ingest.parser import parse_message  # noqa: E402
from pmsearch.shared.mail_parts import Kind, split_mail  # noqa: E402

MAIL = ROOT / "evals" / "real" / "mail"
MIN_CHARS = 20
_MARKS = re.compile(r"^[\s>|]+")
_ATTRIBUTION = re.compile(r"wrote:|writes:|a écrit|schrieb|^\s*(?:from|sent|to|subject|date|de|envoyé|von|gesendet)\s*:", re.I)


_DIFF = re.compile(r"^(?:[+\-@ ]|diff |index |\s*\S+\s+\|\s+\d)")


def _line(text: str) -> str:
    return " ".join(_MARKS.sub("", text).split())


def _lines(text: str) -> set[str]:
    return {x for x in (_line(t) for t in text.splitlines()) if len(x) >= MIN_CHARS}


def methods() -> dict[str, Callable[[str], str]]:
    found: dict[str, Callable[[str], str]] = {"pmsearch.shared.mail_parts": lambda body: split_mail(body).text(Kind.OWN, Kind.SIGNATURE)}
    from mailparser_reply import EmailReplyParser

    parser = EmailReplyParser(languages=["en", "de", "fr"])
    found["mail-parser-reply"] = lambda body: parser.parse_reply(body) or ""
    try:
        import quotequail

        found["quotequail"] = lambda body: "\n".join(t for shown, t in quotequail.quote(body) if shown)
    except ImportError:
        pass
    try:
        from email_reply_parser import EmailReplyParser as GitHubParser

        found["email-reply-parser"] = lambda body: GitHubParser.parse_reply(body)
    except ImportError:
        pass
    return found


def pairs() -> list[tuple[str, str]]:
    """(reply body, parent body) for every reply whose parent is in the corpus."""
    messages = {}
    for path in sorted(MAIL.glob("*/*/*/*.eml")):
        m = parse_message(path.read_bytes(), folder=path.parent.name)
        messages[m.rfc_message_id] = m
    out = []
    for m in messages.values():
        parent = messages.get((m.in_reply_to or "").strip("<> "))
        if parent is not None and m.body_text and parent.body_text:
            out.append((m.body_text, parent.body_text))
    return out


def main() -> int:
    cases = pairs()
    table = {}
    for name, own_words in methods().items():
        quoted = leaked = own = kept = 0
        for reply, parent in cases:
            parent_lines = _lines(parent)
            said = _lines(own_words(reply))
            for raw in reply.splitlines():
                line = _line(raw)
                if len(line) < MIN_CHARS:
                    continue
                if raw.lstrip().startswith(">") or line in parent_lines:
                    quoted += 1
                    leaked += line in said
                elif not _ATTRIBUTION.search(line) and not _DIFF.match(raw):
                    own += 1
                    kept += line in said
        table[name] = {"quoted_leaked": round(leaked / max(quoted, 1), 3), "own_kept": round(kept / max(own, 1), 3)}
    print(f"{len(cases)} replies whose parent is in the corpus")
    print(f"{'method':<22} {'quoted lines leaked':>20} {'own lines kept':>15}")
    for name, row in table.items():
        print(f"{name:<22} {row['quoted_leaked']:>20.3f} {row['own_kept']:>15.3f}")
    print(json.dumps({"replies": len(cases), "methods": table}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
