"""Deliveries that ended on a mail server: a message expunged from a folder, or moved
out of it, stops being found there (:class:`pmsearch.shared.messages.DeliveryWithdrawn`).

The message itself stays indexed: another mailbox or folder may still hold it, and a
move is a withdrawal here and a delivery there. One with no delivery left matches no
caller's mailboxes, so no search finds it.
"""

from __future__ import annotations

from collections.abc import Iterable

from pmsearch.services.searcher.index.base import IndexFilter, MailIndex


def withdraw(index: MailIndex, tenant_id: str, mailbox: str, folder: str, message_ids: Iterable[str]) -> int:
    """Remove the (mailbox, folder) delivery from each message; how many had it."""
    ids = tuple(dict.fromkeys(message_ids))
    if not ids:
        return 0
    heads = [
        p for p in index.scroll(IndexFilter(tenant_id=tenant_id, mailboxes=(mailbox,), message_ids=ids), limit=10_000)
        if p.kind == "body" and p.chunk_no == 0
    ]
    removed = 0
    for head in {p.message_id: p for p in heads}.values():
        fields = head.without_delivery(mailbox, folder)
        if fields is not None:
            index.set_message_fields(tenant_id, head.message_id, fields)
            removed += 1
    return removed
