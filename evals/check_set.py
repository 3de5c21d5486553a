"""Check a question set against its mail: evals/demo.yaml against the demo mailbox, or a
set that brings its own mail (``mail/<tenant>/<mailbox>/<folder>/`` beside it, as
``evals/real/``; one key per mailbox, labelled ``tenant/mailbox``).

Run from the repository root: ``.venv/bin/python evals/check_set.py [evals/demo.yaml]``.

Asserts the shape (fields, kinds, keys, tags, unique ids), that every supporting
Message-ID exists in a folder the asking key can see (not Quarantine/Junk, no
``X-Spam-Flag: YES``), and, reading the mail with the project's own parser:

- each fact of an answerable case has a spelling found in its supporting messages;
- no ``never`` string appears in the supporting messages (a right answer could not avoid it);
- for ``other_mailbox`` / ``other_tenant`` and quarantine cases, no ``never`` string is
  visible to the key, and at least one is found where the case says the answer lives
  (the others may be other spellings of it).

Prints counts per kind, key and tag.
"""

from __future__ import annotations

import re
import sys
from collections import Counter
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from pmsearch.services.searcher.ingest.parser import parse_message  # noqa: E402

DEMO = ROOT / "data" / "demo"
KEYS = {
    "acme/alice": ("acme", {"alice", "shared-claims"}),
    "acme/bob": ("acme", {"bob"}),
    "globex/carol": ("globex", {"carol"}),
}
KINDS = {"answerable", "unanswerable", "other_mailbox", "other_tenant", "injected"}
TAGS = {"worded_unlike", "latest_in_thread", "attachment", "figures", "dates", "codes", "links", "contradiction",
        "near_miss", "injection", "quarantine", "isolation", "thread", "multi_message", "charset", "html",
        # what a real-mail question exercises
        "quoted", "patch", "signature", "forward", "newsletter", "notification", "list", "french", "german"}
FIELDS = {"id", "key", "kind", "question", "facts", "supporting", "never", "tags"}
OPTIONAL = {"note"}


def norm(s: str) -> str:
    return re.sub(r"\s+", " ", s).strip().casefold()


def set_corpus(set_path: Path) -> tuple[Path, dict[str, tuple[str, set[str]]]]:
    """The mail and the keys a set is asked with: its own (``keys.yaml`` and ``mail/``
    beside it) or the demo mailbox's."""
    corpus = set_path.parent / "mail"
    if not corpus.is_dir():
        return DEMO, KEYS
    from pmsearch.cli.evaluation.corpus import corpus_keys

    return corpus, {label: (s["tenant_id"], set(s["mailboxes"])) for label, s in corpus_keys(corpus).items()}


def load_mail(corpus: Path) -> list[dict]:
    out = []
    for p in sorted(corpus.glob("*/*/*/*.eml")):
        tenant, mailbox, folder = p.parts[-4], p.parts[-3], p.parts[-2]
        m = parse_message(p.read_bytes(), folder=folder)
        when = f"{m.date:%d %B %Y %H:%M} {m.date:%Y-%m-%d}" if m.date else ""
        text = "\n".join([m.subject or "", m.sender.name, m.sender.email, when, m.body_text or ""]
                         + [f"{a.filename}\n{a.text or ''}" for a in m.attachments])
        out.append({"id": m.rfc_message_id, "tenant": tenant, "mailbox": mailbox, "folder": folder,
                    "visible": not m.quarantined, "text": norm(text), "path": str(p.resolve().relative_to(ROOT))})
    return out


def main(path: str) -> int:
    cases = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    assert isinstance(cases, list) and cases, "the file must be a non-empty YAML list"
    corpus, keys_by_label = set_corpus(Path(path))
    mail = load_mail(corpus)
    by_id: dict[str, list[dict]] = {}
    for m in mail:
        by_id.setdefault(m["id"], []).append(m)

    def visible_to(key: str) -> list[dict]:
        tenant, boxes = keys_by_label[key]
        return [m for m in mail if m["visible"] and m["tenant"] == tenant and m["mailbox"] in boxes]

    errors: list[str] = []
    seen: set[str] = set()
    for c in cases:
        cid = c.get("id", "?")
        err = lambda msg, cid=cid: errors.append(f"{cid}: {msg}")  # noqa: E731
        keys = set(c)
        if not FIELDS <= keys or keys - FIELDS - OPTIONAL:
            err(f"fields {sorted(keys)}")
            continue
        if cid in seen:
            err("duplicate id")
        seen.add(cid)
        if c["key"] not in keys_by_label:
            err(f"unknown key {c['key']}")
            continue
        if c["kind"] not in KINDS:
            err(f"unknown kind {c['kind']}")
        if not isinstance(c["question"], str) or not c["question"].strip():
            err("empty question")
        if set(c["tags"]) - TAGS:
            err(f"unknown tags {set(c['tags']) - TAGS}")
        facts, supporting, never = c["facts"], c["supporting"], c["never"]
        if not all(isinstance(f, list) and f and all(isinstance(s, str) and s.strip() for s in f) for f in facts):
            err("each fact must be a non-empty list of strings")
        if not all(isinstance(s, str) and s.strip() for s in never):
            err("never must be strings")
        if c["kind"] == "answerable" and (not facts or not supporting):
            err("answerable needs facts and supporting")
        if c["kind"] in {"unanswerable", "other_mailbox", "other_tenant"} and (facts or supporting):
            err("facts and supporting must be empty for this kind")
        if bool(facts) != bool(supporting):
            err("facts and supporting go together")

        # supporting ids: exist, and visible to the key
        tenant, boxes = keys_by_label[c["key"]]
        texts = []
        for sid in supporting:
            where = by_id.get(sid)
            if not where:
                err(f"supporting id not in the mail: {sid}")
                continue
            ok = [m for m in where if m["visible"] and m["tenant"] == tenant and m["mailbox"] in boxes]
            if not ok:
                err(f"supporting id not visible to {c['key']}: {sid} ({[m['path'] for m in where]})")
                continue
            texts.append(ok[0]["text"])
        blob = "\n".join(texts)
        for f in facts:
            if texts and not any(norm(s) in blob for s in f):
                err(f"fact {f[:3]}... found in none of the supporting messages")
        for s in never:  # an injection case may cite the injected mail itself
            if texts and norm(s) in blob and "injection" not in c["tags"]:
                err(f"never string {s!r} occurs in a supporting message")

        # hidden answers: not visible to the key, but present where the kind says
        if c["kind"] in {"other_mailbox", "other_tenant"} or "quarantine" in c["tags"]:
            if not never:
                err("needs never strings naming the hidden answer")
            seen_text = "\n".join(m["text"] for m in visible_to(c["key"]))
            if c["kind"] == "other_mailbox":
                hidden = [m for m in mail if m["visible"] and m["tenant"] == tenant and m["mailbox"] not in boxes]
            elif c["kind"] == "other_tenant":
                hidden = [m for m in mail if m["visible"] and m["tenant"] != tenant]
            else:  # quarantined in the key's own mailboxes
                hidden = [m for m in mail if not m["visible"] and m["tenant"] == tenant and m["mailbox"] in boxes]
            hidden_text = "\n".join(m["text"] for m in hidden)
            for s in never:
                if norm(s) in seen_text:
                    err(f"never string {s!r} is visible to {c['key']}")
            if never and not any(norm(s) in hidden_text for s in never):
                err("none of the never strings is found where the hidden answer should be")

    if errors:
        print("\n".join(errors))
        print(f"{len(errors)} problem(s)")
        return 1
    print(f"{len(cases)} cases OK")
    print("kinds:", dict(Counter(c["kind"] for c in cases)))
    print("keys: ", dict(Counter(c["key"] for c in cases)))
    print("answerable by key:", dict(Counter(c["key"] for c in cases if c["kind"] == "answerable")))
    print("tags: ", dict(sorted(Counter(t for c in cases for t in c["tags"]).items())))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1] if len(sys.argv) > 1 else str(ROOT / "evals" / "demo.yaml")))
