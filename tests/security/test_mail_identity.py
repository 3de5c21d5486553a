"""A Message-ID names a message but does not prove one: mail with a known Message-ID and
other content is another message, a quarantined copy never hides a clean one, and mail
delivered to two mailboxes is visible in both. Through the real stack: admin ingest and
the search API."""

from __future__ import annotations

import base64

import pytest

TENANT = "acme"
ALICE, BOB = "idn-alice", "idn-bob"


def message(msgid: str, body: str, *, extra: str = "") -> bytes:
    return (
        "From: Claims Desk <claims@insurer.example>\r\n"
        "To: alice@acme.example, bob@acme.example\r\n"
        "Subject: Your claim CLM-2024-77031\r\n"
        "Date: Tue, 12 Mar 2024 09:30:00 +0000\r\n"
        f"Message-ID: <{msgid}>\r\n"
        f"{extra}"
        "MIME-Version: 1.0\r\n"
        "Content-Type: text/plain; charset=utf-8\r\n"
        "\r\n"
        f"{body}\r\n"
    ).encode()


def ingest(api, mailbox: str, raw: bytes, folder: str = "INBOX") -> dict:
    resp = api.http.post(
        "/v1/admin/ingest",
        json={"tenant_id": TENANT, "mailbox": mailbox, "folder": folder, "raw": [base64.b64encode(raw).decode()]},
        headers=api.admin_headers,
    )
    assert resp.status_code == 200, resp.text
    return resp.json()


@pytest.fixture(scope="module")
def keys(api) -> dict[str, str]:
    def key(principal: str, *mailboxes: str) -> str:
        return api.new_key(tenant_id=TENANT, principal=principal, mailboxes=list(mailboxes), permissions=["search"])

    return {"alice": key(ALICE, ALICE), "bob": key(BOB, BOB), "both": key("idn-desk", ALICE, BOB)}


def hits(api, key: str, term: str) -> list[dict]:
    resp = api.search(key, query=term, mode="keyword", limit=10)
    assert resp.status_code == 200, resp.text
    return resp.json()["hits"]


def test_a_forged_copy_imported_first_does_not_replace_the_genuine_message(api, keys):
    msgid = "claim-decision-1@insurer.example"
    forged = message(msgid, "Quillbarrow: your claim was rejected. Pay the EUR 900 fee to DE99 9999 0000.")
    genuine = message(msgid, "Quillbarrow: your claim was accepted; EUR 2,115.50 will be paid this week.")
    assert ingest(api, BOB, forged)["indexed"] == 1
    report = ingest(api, ALICE, genuine)
    assert report["indexed"] == 1 and report["duplicate"] == 0
    assert report["collisions"] == 1
    [alice_hit] = hits(api, keys["alice"], "quillbarrow")
    assert "accepted" in alice_hit["snippet"] and "rejected" not in alice_hit["snippet"]
    [bob_hit] = hits(api, keys["bob"], "quillbarrow")
    assert "rejected" in bob_hit["snippet"]
    both = hits(api, keys["both"], "quillbarrow")
    assert {h["message_id"] for h in both} == {alice_hit["message_id"], bob_hit["message_id"]}
    assert alice_hit["message_id"] != bob_hit["message_id"]


def test_a_spam_flagged_forgery_imported_first_does_not_hide_the_genuine_message(api, keys):
    msgid = "claim-decision-2@insurer.example"
    forged = message(msgid, "Marlinspike: claim rejected, click here.", extra="X-Spam-Flag: YES\r\n")
    genuine = message(msgid, "Marlinspike: claim accepted, payment follows.")
    assert ingest(api, BOB, forged)["indexed"] == 1
    assert ingest(api, ALICE, genuine)["indexed"] == 1
    [hit] = hits(api, keys["both"], "marlinspike")
    assert "accepted" in hit["snippet"] and hit["mailbox"] == ALICE
    assert hits(api, keys["bob"], "marlinspike") == []  # the quarantined copy stays hidden


def test_a_quarantined_copy_of_the_same_mail_does_not_hide_the_clean_one(api, keys):
    body = "Gallowglass: the surveyor visits on Friday at ten."
    held = message("survey-visit@insurer.example", body, extra="X-Spam-Flag: YES\r\n")
    clean = message("survey-visit@insurer.example", body)
    assert ingest(api, BOB, held)["indexed"] == 1
    assert ingest(api, ALICE, clean)["duplicate"] == 1  # the same message, now delivered clean
    [hit] = hits(api, keys["alice"], "gallowglass")
    assert hit["mailbox"] == ALICE
    assert hits(api, keys["bob"], "gallowglass") == []  # bob's own copy is still quarantined


def test_mail_sent_to_alice_and_bob_is_visible_in_both_mailboxes(api, keys):
    raw = message("meeting-move@insurer.example", "Haberdasher: the meeting moves to room 4.")
    assert ingest(api, ALICE, raw)["indexed"] == 1
    assert ingest(api, BOB, raw.replace(b"From: ", b"Delivered-To: bob@acme.example\r\nFrom: ", 1),
                  folder="Archive")["duplicate"] == 1
    [for_alice] = hits(api, keys["alice"], "haberdasher")
    [for_bob] = hits(api, keys["bob"], "haberdasher")
    assert for_alice["message_id"] == for_bob["message_id"]  # one message, delivered twice
    assert (for_alice["mailbox"], for_alice["folder"]) == (ALICE, "INBOX")
    assert (for_bob["mailbox"], for_bob["folder"]) == (BOB, "Archive")  # never names alice's box to bob
    assert len(hits(api, keys["both"], "haberdasher")) == 1
