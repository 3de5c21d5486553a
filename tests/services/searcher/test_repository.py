"""What a run may read of one message: bounded, from its beginning (repository.bounded),
and which of a thread's messages is its latest."""

from __future__ import annotations

from datetime import UTC, datetime

from pmsearch.services.searcher.repository import bounded
from pmsearch.services.searcher.service import thread_latest
from pmsearch.shared.messages import EvidenceAttachment, EvidenceMessage, Hit


def _message(body: str, *attachments: str) -> EvidenceMessage:
    return EvidenceMessage(
        message_id="m1", tenant_id="acme", thread_id="t1", mailbox="alice", sender="x@example.org",
        date=datetime(2024, 3, 1, tzinfo=UTC), subject="s", body=body,
        attachments=[EvidenceAttachment(name=f"a{i}.txt", text=t) for i, t in enumerate(attachments)],
    )


def test_a_message_within_the_bound_is_kept_whole() -> None:
    m = _message("short body", "short attachment")
    assert bounded(m, 1000) is m


def test_a_huge_body_keeps_its_beginning_so_offsets_still_point_into_the_message() -> None:
    body = "common words " * 200_000  # 2.6 MB, like a stranger's stuffed mail
    cut = bounded(_message(body, "attachment text"), 32_000)
    assert cut.truncated and cut.body == body[:32_000]
    assert [(a.name, a.text) for a in cut.attachments] == [("a0.txt", "")]


def test_attachments_share_what_the_body_leaves_in_order() -> None:
    cut = bounded(_message("b" * 600, "x" * 300, "y" * 300), 1000)
    assert (len(cut.body), [len(a.text) for a in cut.attachments]) == (600, [300, 100])
    assert cut.truncated


def test_a_forged_reply_is_never_promoted_as_its_threads_latest() -> None:
    def msg(mid: str, day: int, auth: str = "none") -> EvidenceMessage:
        return _message(mid).model_copy(update={"message_id": mid, "date": datetime(2024, 3, day, tzinfo=UTC),
                                                "sender_auth": auth})

    class Thread:
        def thread(self, scope, thread_id, limit, *, latest=False):
            return [msg("m-first", 1), msg("m-reply", 2, "pass"), msg("m-forged", 3, "fail")][-limit:]

    hit = Hit(message_id="m-first", thread_id="t1", mailbox="alice", sender="x", date=None, subject="s",
              snippet="", score=1.0)
    assert [m.message_id for m in thread_latest(Thread(), None, [hit], 1)] == ["m-reply"]
