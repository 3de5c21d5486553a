"""A question set's own mail: a set that brings its mail keeps it beside its question
files as ``mail/<tenant>/<mailbox>/<folder>/*.eml`` and is asked with one key per
mailbox, labelled ``tenant/mailbox``, that sees that mailbox alone."""

from __future__ import annotations

from pathlib import Path


def set_corpus(set_path: Path) -> Path | None:
    """The mail folder a set brings (``mail/`` beside the question file), or None for a
    set asked of the demo mailbox."""
    corpus = set_path.parent / "mail"
    return corpus if corpus.is_dir() else None


def corpus_keys(corpus: Path) -> dict[str, dict]:
    """label -> key spec (as ``POST /v1/admin/keys`` takes it) for every mailbox in ``corpus``."""
    from pmsearch.services.searcher.ingest.readers import demo_mailboxes

    return {
        f"{tenant}/{mailbox}": {"tenant_id": tenant, "principal": f"{mailbox}@{tenant}.example", "mailboxes": [mailbox]}
        for tenant, mailbox, _path in demo_mailboxes(corpus)
    }
