"""A realistic synthetic mailbox for import benchmarks: ``python -m bench.mailgen OUT -n 100000``.

Demo-like mail (a small company's correspondence with suppliers, insurers, customers)
over twenty years, written as one Maildir per mailbox (``OUT/<mailbox>/``, Maildir++
subfolders ``Sent`` and ``Archive``): threads whose replies quote what they answer,
plain and HTML bodies, text, CSV and PDF attachments, invoice and claim numbers, amounts,
dates and links, the same message delivered to two mailboxes (a colleague in copy) and
filed twice in one (INBOX and Archive), and the odd message without a Message-ID. The
seed fixes every message's headers and text (MIME boundaries and Maildir file names are
random), and another seed makes other, new messages.
"""

from __future__ import annotations

import argparse
import mailbox
import random
from datetime import UTC, datetime, timedelta
from email.message import EmailMessage
from email.utils import format_datetime
from pathlib import Path

MAILBOXES = ("alice", "bob", "shared-claims")
DOMAIN = "acme.example"
PARTNERS = [
    ("Spedition Hüber", "dispo@huber-logistik.example"), ("Allianz Kfz", "schaden@insurer.example"),
    ("Fabrikam Ltd", "billing@fabrikam.example"), ("Contoso Print", "orders@contoso.example"),
    ("Northwind Energy", "service@northwind.example"), ("Globex Travel", "trips@globex.example"),
    ("Initech IT", "helpdesk@initech.example"), ("Stadtwerke", "kundenservice@stadtwerke.example"),
]
COLLEAGUES = [("Alice Becker", "alice"), ("Bob Meier", "bob"), ("Claims Team", "shared-claims"),
              ("Dana Roth", "dana"), ("Erik Vogel", "erik")]
TOPICS = {
    "invoice": ("Invoice {code} for {month}", ["Please find attached invoice {code} over {amount}.",
                "The amount of {amount} is due by {date}.", "Payment reference: {code}.",
                "Our bank details have not changed since last year.", "Late fees apply after 30 days."]),
    "claim": ("Claim {code}: {car}", ["We received your claim {code} for the {car}.",
              "Please send photos of the damage and the police report.", "The assessor visits on {date}.",
              "We will settle {amount} once the repair invoice arrives.", "The decision follows within 14 days."]),
    "delivery": ("Pickup schedule {month}", ["From {date} the driver picks up at gate {gate}.",
                 "Pallets must be wrapped and labelled with order {code}.", "Tracking: https://track.example/{code}",
                 "Please confirm the loading window by phone.", "The truck arrives between 7 and 9."]),
    "meeting": ("Meeting on {date}", ["Shall we meet on {date} at {time} in room {gate}?",
                "The agenda: budget, hiring and the {month} review.", "Dial-in: https://meet.example/{code}",
                "Please bring the figures for {month}.", "Lunch is booked for twelve people."]),
    "it": ("Ticket {code}: {device}", ["Your ticket {code} about the {device} is in progress.",
           "A technician comes on {date} between 9 and 12.", "The new password rules apply from {date}.",
           "Please restart the {device} and tell us if the error returns.", "We closed ticket {code}."]),
}
CARS = ["VW Golf M-AC 4821", "BMW 320d B-XY 100", "Audi A4 HH-ZZ 77", "Skoda Octavia K-PR 2020"]
DEVICES = ["laptop", "printer on floor 2", "VPN token", "meeting room display"]
MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September",
          "October", "November", "December"]
FILLER = ["Thanks for the quick reply.", "Let me know if anything is unclear.", "Kind regards.",
          "I am out of office next week; Dana covers for me.", "See the notes from our last call.",
          "We discussed this with the team this morning.", "Could you check this before Friday?"]


class Generator:
    def __init__(self, seed: int = 7, *, documents: bool = False) -> None:
        self.seed = seed
        # A third of the attachments become Office files and invitations, drawn from a
        # generator of their own: every message is otherwise as without documents.
        self.documents = random.Random(seed + 1) if documents else None
        self.rng = random.Random(seed)
        self.threads: list[dict] = []  # open conversations a reply may continue
        self.start = datetime(2006, 1, 2, 8, 0, tzinfo=UTC)

    def _fields(self, when: datetime) -> dict[str, str]:
        r = self.rng
        return {"code": f"{r.choice(['INV', 'CLM', 'ORD', 'TCK'])}-{when.year}-{r.randrange(10000):04d}",
                "amount": f"{r.randrange(80, 48000):,} EUR".replace(",", "."),
                "date": (when + timedelta(days=r.randrange(1, 40))).strftime("%d %B %Y"),
                "month": MONTHS[when.month - 1], "car": r.choice(CARS), "device": r.choice(DEVICES),
                "gate": str(r.randrange(1, 12)), "time": f"{r.randrange(8, 17)}:{r.choice(['00', '30'])}"}

    def message(self, n: int, total: int) -> tuple[bytes, list[tuple[str, str]]]:
        """Message ``n`` of ``total`` (dates rise with n) and the (mailbox, folder) copies it is filed as."""
        r = self.rng
        when = self.start + timedelta(days=7300 * n / max(total, 1), minutes=r.randrange(600))
        box = r.choice(MAILBOXES)
        me = next(c for c in COLLEAGUES if c[1] == box)
        partner = r.choice(PARTNERS)
        reply_to = self.threads[r.randrange(len(self.threads))] if self.threads and r.random() < 0.35 else None
        topic = reply_to["topic"] if reply_to else r.choice(list(TOPICS))
        subject_t, lines = TOPICS[topic]
        f = self._fields(when)
        outgoing = r.random() < 0.25
        msg = EmailMessage()
        sender = (me[0], f"{me[1]}@{DOMAIN}") if outgoing else partner
        rcpt = partner if outgoing else (me[0], f"{me[1]}@{DOMAIN}")
        msg["From"] = f"{sender[0]} <{sender[1]}>"
        msg["To"] = f"{rcpt[0]} <{rcpt[1]}>"
        copy = r.choice(MAILBOXES) if r.random() < 0.04 else None
        if copy and copy != box:
            msg["Cc"] = f"{copy}@{DOMAIN}"
        msg["Date"] = format_datetime(when)
        if r.random() > 0.003:  # a few old clients sent none
            msg["Message-ID"] = f"<g{self.seed}.{n}@gen.example>"
        body = [r.choice(lines).format(**f) for _ in range(r.randrange(2, 7))]
        body += r.sample(FILLER, r.randrange(0, 3))
        if reply_to:
            msg["Subject"] = "Re: " + reply_to["subject"]
            msg["In-Reply-To"] = reply_to["id"]
            msg["References"] = " ".join([*reply_to["refs"], reply_to["id"]])
            body += ["", f"On {reply_to['date']} {reply_to['from']} wrote:"] + [f"> {ln}" for ln in reply_to["body"]]
        else:
            msg["Subject"] = subject_t.format(**f)
        text = "\n".join(body) + "\n"
        if r.random() < 0.2:
            msg.set_content(text)
            msg.add_alternative("<html><body>" + "".join(f"<p>{ln}</p>" for ln in body) + "</body></html>",
                                subtype="html")
        else:
            msg.set_content(text)
        if r.random() < 0.12:
            self._attach(msg, topic, f)
            if self.documents is not None and self.documents.random() < 1 / 3:
                msg.get_payload().pop()  # the attachment just added
                _document(msg, topic, f, self.documents)
        if msg["Message-ID"] and r.random() < 0.6:
            self.threads.append({"id": msg["Message-ID"], "subject": str(msg["Subject"]).removeprefix("Re: "),
                                 "refs": (reply_to["refs"] + [reply_to["id"]])[-5:] if reply_to else [],
                                 "topic": topic, "body": body[:4], "date": msg["Date"], "from": sender[0]})
            self.threads = self.threads[-400:]
        folder = "Sent" if outgoing else ("Archive" if r.random() < 0.3 else "INBOX")
        copies = [(box, folder)]
        if copy and copy != box:
            copies.append((copy, "INBOX"))
        if folder == "INBOX" and r.random() < 0.01:
            copies.append((box, "Archive"))
        return bytes(msg), copies

    def _attach(self, msg: EmailMessage, topic: str, f: dict[str, str]) -> None:
        r = self.rng
        kind = r.random()
        if kind < 0.5:
            rows = "\n".join(f"{f['code']};item {i};{r.randrange(1, 99)};{r.randrange(5, 900)} EUR" for i in range(8))
            msg.add_attachment(f"code;item;qty;price\n{rows}\n".encode(), maintype="text", subtype="csv",
                               filename=f"{f['code']}.csv")
        elif kind < 0.8:
            note = f"Notes on {topic} {f['code']}\nAmount {f['amount']}, due {f['date']}.\n" * r.randrange(1, 6)
            msg.add_attachment(note.encode(), maintype="text", subtype="plain", filename=f"notes-{f['code']}.txt")
        else:
            msg.add_attachment(_pdf(f"{topic.title()} {f['code']}: {f['amount']} due {f['date']}"),
                               maintype="application", subtype="pdf", filename=f"{f['code']}.pdf")


def _document(msg: EmailMessage, topic: str, f: dict[str, str], r: random.Random) -> None:
    """A Word, Excel or PowerPoint file or a calendar invitation, made by the libraries
    that write them (pmsearch.testing.attachments), about the message's matter."""
    from zoneinfo import ZoneInfo

    from pmsearch.testing import attachments as files

    rows = [[f"{f['code']}-{i}", f"item {i}", r.randrange(1, 99), r.randrange(5, 900)] for i in range(r.randrange(5, 40))]
    kind = r.choice(["docx", "xlsx", "pptx", "ics"])
    if kind == "docx":
        data = files.docx([f"{topic.title()} {f['code']}", f"Amount {f['amount']}, due {f['date']}."] * r.randrange(1, 6),
                          [["code", "item", "qty", "price"], *[[str(c) for c in row] for row in rows[:10]]])
    elif kind == "xlsx":
        data = files.xlsx({"Items": [["code", "item", "qty", "price"], *rows], "Summary": [["total", f["amount"]]]})
    elif kind == "pptx":
        data = files.pptx([(f"{topic.title()} {f['code']}", [f"Amount {f['amount']}", f"Due {f['date']}"])
                           for _ in range(r.randrange(1, 8))])
    else:
        start = datetime(2024, 1, 1, 9, tzinfo=ZoneInfo("Europe/Berlin")) + timedelta(days=r.randrange(300))
        data = files.ics(summary=f"{topic.title()} {f['code']}", start=start, end=start + timedelta(hours=1),
                         location=f"Gate {f['gate']}", organizer=("Dana", f"dana@{DOMAIN}"),
                         attendees=[("Alice", f"alice@{DOMAIN}")])
    maintype, subtype = files.CONTENT_TYPES[kind].split("/")
    msg.add_attachment(data, maintype=maintype, subtype=subtype, filename=f"{f['code']}.{kind}")


def _pdf(text: str) -> bytes:
    """A one-page PDF showing ``text`` (what a scanner or an invoicing tool sends)."""
    safe = text.encode("latin-1", "replace").replace(b"\\", b"\\\\").replace(b"(", b"\\(").replace(b")", b"\\)")
    stream = b"BT /F1 12 Tf 72 720 Td (" + safe + b") Tj ET"
    objects = [b"<< /Type /Catalog /Pages 2 0 R >>", b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
               b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R "
               b"/Resources << /Font << /F1 5 0 R >> >> >>",
               b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream",
               b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>"]
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for i, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % i + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % o for o in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref)
    return bytes(out)


def write_maildirs(root: Path, count: int, *, seed: int = 7, documents: bool = False) -> dict[str, int]:
    """``count`` messages of the seed into one Maildir per mailbox under ``root`` (added to
    what is there). Returns the files written per mailbox (copies included)."""
    gen = Generator(seed, documents=documents)
    root.mkdir(parents=True, exist_ok=True)
    boxes: dict[str, mailbox.Maildir] = {}
    written: dict[str, int] = {}
    for n in range(count):
        raw, copies = gen.message(n, count)
        for name, folder in copies:
            if name not in boxes:
                boxes[name] = mailbox.Maildir(str(root / name), create=True)
            box = boxes[name]
            target = box if folder == "INBOX" else _folder(box, folder)
            target.add(raw)
            written[name] = written.get(name, 0) + 1
    return written


def _folder(box: mailbox.Maildir, name: str) -> mailbox.Maildir:
    return box.get_folder(name) if name in box.list_folders() else box.add_folder(name)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("-n", "--count", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    written = write_maildirs(args.out, args.count, seed=args.seed)
    print(" ".join(f"{k}={v}" for k, v in sorted(written.items())), "files")


if __name__ == "__main__":
    main()
