"""Questions answered from inside attached files, end to end on the scripted model: a
message with one file of each format is imported into a mailbox of its own through the
admin API, and an agentic run over that mailbox finds the file's text, answers from it,
and cites the attachment, and for a sheet, slide or event the place inside it. The
scripted model quotes the words around the answer's key from the passage that holds
them, so the verifier checks each quote against the attachment's stored text."""

from __future__ import annotations

import base64
from datetime import UTC, datetime
from email.message import EmailMessage
from email.utils import format_datetime

import pytest

from pmsearch.testing import attachments as files
from pmsearch.testing.brains import knowing

# A tenant of its own: the shared demo stack's other tests count acme's mail.
TENANT = "filesco"
MAILBOX = "files"
SENDER = "Dana Weber <dana.weber@acme.example>"

# format: (file name, its bytes, the question, the key the answer must quote, the place)
CASES = {
    "docx": ("brenner-quote.docx", lambda: files.docx(
        ["Brenner Hydraulics quote Q-7731.", "Quote Q-7731 is valid until 31 May 2027."]),
        "Until when is Brenner Hydraulics quote Q-7731 valid?", "31 May 2027", None),
    "xlsx": ("bremen-budget.xlsx", lambda: files.xlsx({"Bremen 2027": [
        ["Item", "Qty", "Unit price", "Total"], ["Trolley TR-55", 4, 830, 3320], ["Shelf SH-9", 12, 95, 1140]]}),
        "What is the total for the TR-55 trolleys in the Bremen budget?", "3320", "Sheet: Bremen 2027, row 2"),
    "pptx": ("hamburg-rollout.pptx", lambda: files.pptx([("Hamburg rollout", ["Scanner pilot starts on 14 September"])]),
        "When does the scanner pilot of the Hamburg rollout start?", "14 September", "Slide 1: Hamburg rollout"),
    "odt": ("canteen-notice.odt", lambda: files.odt(["Canteen notice.", "The Bremen canteen reopens on 2 June."]),
        "When does the Bremen canteen reopen?", "2 June", None),
    "ods": ("spare-parts.ods", lambda: files.ods("Spare parts", [["Part", "In stock"], ["Gasket GK-12", 340]]),
        "How many GK-12 gaskets are in stock?", "340", "Sheet: Spare parts, row 2"),
    "odp": ("kiel-roadmap.odp", lambda: files.odp([("Kiel roadmap", ["The Kiel depot opens in March 2028"])]),
        "When does the Kiel depot open?", "March 2028", "Slide 1: Kiel roadmap"),
    "rtf": ("offer-d5521.rtf", lambda: files.rtf(["Offer D-5521 for dock seals.", "Offer D-5521 is valid for 45 days."]),
        "For how many days is offer D-5521 valid?", "45 days", None),
    "ics": ("brenner-audit.ics", lambda: files.ics(
        summary="Brenner supplier audit", start=datetime(2027, 3, 4, 10, 0, tzinfo=files.PARIS),
        end=datetime(2027, 3, 4, 12, 0, tzinfo=files.PARIS), location="Room 4, Bremen depot",
        organizer=("Dana Weber", "dana.weber@acme.example"), attendees=[("Alice Martin", "alice@acme.example")]),
        "Where is the Brenner supplier audit held?", "Room 4, Bremen depot", "Event: Brenner supplier audit"),
}


def _message(n: int, name: str, data: bytes) -> bytes:
    msg = EmailMessage()
    msg["From"], msg["To"] = SENDER, "Alice Martin <alice@acme.example>"
    msg["Subject"], msg["Message-ID"] = f"File for you: {name}", f"<file-{n}@acme.example>"
    msg["Date"] = format_datetime(datetime(2024, 5, 6, 9, n, tzinfo=UTC))
    msg.set_content(f"Hi Alice,\n\nplease find {name} attached.\n\nDana")
    msg.add_attachment(data, maintype="application", subtype="octet-stream", filename=name)
    return bytes(msg)


@pytest.fixture(scope="module")
def files_key(api):
    raw = [base64.b64encode(_message(n, name, make())).decode() for n, (name, make, *_) in enumerate(CASES.values())]
    resp = api.http.post("/v1/admin/ingest", json={"tenant_id": TENANT, "mailbox": MAILBOX, "raw": raw},
                         headers=api.admin_headers)
    resp.raise_for_status()
    assert resp.json()["indexed"] == len(CASES), resp.json()
    return api.new_key(tenant_id=TENANT, principal="files-reader", mailboxes=[MAILBOX], permissions=["search:agentic"])


@pytest.mark.parametrize("kind", list(CASES))
def test_a_question_is_answered_from_inside_an_attached_file(api, stack_model, files_key, kind):
    name, _, question, key, place = CASES[kind]
    stack_model.set_script(knowing({question: (key,)}))
    resp = api.search(files_key, query=question, mode="agentic")
    assert resp.status_code == 200, resp.text
    result = resp.json()
    assert result["outcome"] == "answered", result
    assert key in result["answer"]["text"]
    excerpts = [c["excerpt"] for s in result["answer"]["sentences"] for c in s["citations"]]
    assert any(e["part"] == f"attachment:{name}" and e["place"] == place for e in excerpts), excerpts
