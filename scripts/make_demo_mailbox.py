"""Build the demo mailbox: real RFC 822 files under data/demo/<tenant>/<mailbox>/<folder>/.

The conversations are written by hand in ``data/demo/_source/*.txt`` (format below); this
script turns them into MIME with the stdlib ``email`` package, adds routine automated
mail (shipping notices, expense approvals, cloud invoices, stand-up notes) from
templates, renders PDF attachments with fpdf2 and photos with Pillow, and writes one
``NNN.eml`` per message. Output is deterministic for a given seed, so it is committed.

Source format::

    === thread-key            a conversation; "key: value" fields until a blank line
    tenant: acme              (tenant, mailbox, subject, date are inherited by messages)
    --- msg-key               a message; fields until a blank line, then the body
    from: Name <addr>         to / cc likewise; at: +1d2h30m after the previous message
    reply: other-key          In-Reply-To/References set, parent quoted (quote: no)
    forward: other-key        Fwd:, inline; "forward-as: attachment" for message/rfc822
    refs: none                In-Reply-To only, no References header
    header: X-Spam-Flag: YES  extra header (repeatable); folder: / mailbox: override
    also-in: Archive          the identical message (same Message-ID) in a second folder
    no-message-id: yes        no Message-ID header (the ingester derives one)
    charset: iso-8859-1       cte: quoted-printable; html: yes (HTML-only); alt-html: yes
    @@ attach name.pdf        in a body: an attachment block until "@@ end"
                              (.pdf rendered, .jpg a drawn photo, .txt/.csv/.html as is;
                              .xlsx/.docx/.pptx/.ics built with their libraries from the
                              block's lines, as documents.txt describes)

``documents.txt`` is built after the rest and the routine mail, with its own random draws
and fixed MIME boundaries, and its messages are dated after every other: adding it left
every earlier file byte for byte as it was.

Run: ``python scripts/make_demo_mailbox.py`` (add ``--out DIR`` to write elsewhere).
"""

from __future__ import annotations

import argparse
import hashlib
import html
import io
import random
import re
import shutil
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from email import policy
from email.message import EmailMessage
from email.utils import format_datetime, parseaddr
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LATER = "documents.txt"  # see the module's docstring
DEMO = ROOT / "data" / "demo"
SEED = 2024

OWNERS = {  # mailbox → its owner's address: mail from the owner is filed under Sent
    ("acme", "alice"): "alice@acme.example",
    ("acme", "bob"): "bob@acme.example",
    ("acme", "shared-claims"): "claims@acme.example",
    ("globex", "carol"): "carol@globex.example",
}


@dataclass
class Msg:
    key: str
    fields: dict[str, str]
    headers: list[tuple[str, str]]
    body: str
    attachments: list[tuple[str, str]]  # (filename, source text)
    date: datetime | None = None
    email: EmailMessage | None = None
    refs: list[str] = field(default_factory=list)
    sent: str = ""  # the body as sent, quote included

    def get(self, name: str, default: str = "") -> str:
        return self.fields.get(name, default)


# -- source parsing -------------------------------------------------------------------


def parse_source(text: str) -> list[Msg]:
    """Messages in file order, thread fields merged into each message's fields."""
    msgs: list[Msg] = []
    thread: dict[str, str] = {}
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("=== "):
            thread = {"thread": line[4:].strip()}
            i = _fields(lines, i + 1, thread, [])
        elif line.startswith("--- "):
            fields, headers = dict(thread), []
            i = _fields(lines, i + 1, fields, headers)
            start = i
            while i < len(lines) and not lines[i].startswith(("=== ", "--- ")):
                i += 1
            body, attachments = _body(lines[start:i])
            msgs.append(Msg(line[4:].strip(), fields, headers, body, attachments))
        else:
            i += 1  # comments and blank lines between blocks
    return msgs


def _fields(lines: list[str], i: int, into: dict[str, str], headers: list[tuple[str, str]]) -> int:
    while i < len(lines) and lines[i].strip():
        if not lines[i].startswith("#"):
            name, _, value = lines[i].partition(":")
            name, value = name.strip().lower(), value.strip()
            if name == "header":
                hname, _, hvalue = value.partition(":")
                headers.append((hname.strip(), hvalue.strip()))
            else:
                into[name] = value
        i += 1
    return i + 1


def _body(lines: list[str]) -> tuple[str, list[tuple[str, str]]]:
    body, attachments, current, name = [], [], None, ""
    for line in lines:
        if line.startswith("@@ attach "):
            current, name = [], line[len("@@ attach "):].strip()
        elif line.startswith("@@ end") and current is not None:
            attachments.append((name, "\n".join(current).strip("\n")))
            current = None
        elif current is not None:
            current.append(line)
        else:
            body.append(line)
    return "\n".join(body).strip("\n") + "\n", attachments


# -- dates and ids --------------------------------------------------------------------


def _tz(dt: datetime) -> timezone:
    """Central European time with 2024's summer-time dates (no tz database needed)."""
    summer = datetime(2024, 3, 31, 1) <= dt.replace(tzinfo=None) < datetime(2024, 10, 27, 1)
    return timezone(timedelta(hours=2 if summer else 1))


def _parse_date(value: str) -> datetime:
    naive = datetime.strptime(value, "%Y-%m-%d %H:%M")
    return naive.replace(tzinfo=_tz(naive))


def _offset(value: str) -> timedelta:
    parts = dict((u, int(n)) for n, u in re.findall(r"(\d+)([dhm])", value))
    return timedelta(days=parts.get("d", 0), hours=parts.get("h", 0), minutes=parts.get("m", 0))


def _message_id(msg: Msg, rng: random.Random) -> str:
    domain = parseaddr(msg.get("from"))[1].split("@")[-1] or "localhost"
    token = hashlib.sha256(f"{SEED}:{msg.key}:{rng.random()}".encode()).hexdigest()[:16]
    return f"{msg.date:%Y%m%d%H%M%S}.{token}@{domain}"


# -- attachments ----------------------------------------------------------------------

_PDF_SAFE = str.maketrans({"€": "EUR ", "–": "-", "—": "-", "’": "'", "‘": "'", "“": '"', "”": '"', "…": "..."})


def render_pdf(text: str, when: datetime) -> bytes:
    from fpdf import FPDF

    pdf = FPDF()
    pdf.set_creation_date(when)  # fixed, so reruns produce identical bytes
    pdf.set_author("pmsearch demo")
    pdf.add_page()
    lines = text.translate(_PDF_SAFE).encode("latin-1", "replace").decode("latin-1").splitlines()
    pdf.set_font("Helvetica", "B", 14)
    pdf.multi_cell(0, 8, lines[0] if lines else "", new_x="LMARGIN", new_y="NEXT")
    pdf.set_font("Helvetica", size=10)
    for line in lines[1:]:
        pdf.multi_cell(0, 5.5, line or " ", new_x="LMARGIN", new_y="NEXT")
    return bytes(pdf.output())


def render_photo(caption: str, seed: str) -> bytes:
    """A stand-in photo: a car-ish drawing with a dent and the caption burnt in."""
    from PIL import Image, ImageDraw

    rng = random.Random(seed)
    img = Image.new("RGB", (640, 480), (rng.randint(90, 140), rng.randint(100, 150), rng.randint(110, 170)))
    draw = ImageDraw.Draw(img)
    draw.rectangle((0, 330, 640, 480), fill=(70, 70, 72))  # asphalt
    draw.rounded_rectangle((90, 180, 560, 340), radius=40, fill=(200, 205, 210))  # body
    draw.ellipse((130, 300, 230, 400), fill=(25, 25, 25))
    draw.ellipse((420, 300, 520, 400), fill=(25, 25, 25))
    x, y = rng.randint(300, 460), rng.randint(220, 290)
    draw.polygon([(x, y), (x + 60, y + 10), (x + 40, y + 45), (x - 15, y + 30)], fill=(120, 122, 125))
    for n, line in enumerate(caption.splitlines()[:3]):
        draw.text((16, 16 + 18 * n), line, fill=(255, 255, 255))
    out = io.BytesIO()
    img.save(out, format="JPEG", quality=70)
    return out.getvalue()


def _sections(source: str) -> list[tuple[str, list[str]]]:
    """``## Heading`` blocks of an attachment's lines: (heading, its lines)."""
    sections: list[tuple[str, list[str]]] = []
    for line in source.splitlines():
        if line.startswith("## "):
            sections.append((line[3:].strip(), []))
        elif line.strip() and sections:
            sections[-1][1].append(line.strip())
    return sections


def _cells(line: str) -> list[object]:
    cells = [c.strip() for c in line.strip().strip("|").split("|")]
    return [int(c) if c.isdigit() else c for c in cells]


def _fixed_zip(data: bytes, when: datetime) -> bytes:
    """The package again with every entry dated ``when``: the Office libraries stamp
    entries with the time of writing, and the demo's bytes must not change on a rerun."""
    import zipfile

    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(data)) as src, zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as dst:
        for info in src.infolist():
            fixed = zipfile.ZipInfo(info.filename, date_time=when.timetuple()[:6])
            fixed.compress_type = zipfile.ZIP_DEFLATED
            dst.writestr(fixed, src.read(info))
    return out.getvalue()


def render_document(name: str, source: str, when: datetime) -> bytes:
    """An Office file from an attachment block, made by pmsearch.testing.attachments'
    builders (the libraries people's software writes these files with)."""
    from pmsearch.testing import attachments as build

    ext = name.lower().rsplit(".", 1)[-1]
    if ext == "xlsx":
        data = build.xlsx({title: [_cells(row) for row in rows] for title, rows in _sections(source)}, created=when)
    elif ext == "pptx":
        data = build.pptx(_sections(source))
    else:  # docx: paragraphs, and the "|" rows as one table where they stand
        lines = [line for line in source.splitlines() if line.strip()]
        rows = [line for line in lines if line.startswith("|")]
        first = lines.index(rows[0]) if rows else len(lines)
        after = " ".join(line for line in lines[first + len(rows):])
        data = build.docx(lines[:first], [[str(c) for c in _cells(r)] for r in rows] or None, after)
    return _fixed_zip(data, when)


def render_invitation(source: str) -> tuple[bytes, str]:
    """An invitation from an attachment block, and its METHOD."""
    from zoneinfo import ZoneInfo

    from pmsearch.testing import attachments as build

    fields: dict[str, list[str]] = {}
    for line in source.splitlines():
        key, _, value = line.partition(":")
        fields.setdefault(key.strip().lower(), []).append(value.strip())
    berlin = ZoneInfo("Europe/Berlin")

    def when(key: str) -> datetime:
        return datetime.strptime(fields[key][0], "%Y-%m-%d %H:%M").replace(tzinfo=berlin)

    method = fields["method"][0]
    return build.ics(
        method=method, uid=fields["uid"][0], summary=fields["summary"][0], start=when("start"),
        end=when("end"), location=fields["location"][0], organizer=parseaddr(fields["organizer"][0]),
        attendees=[parseaddr(a) for a in fields.get("attendee", [])], prodid="-//Globex Calendar//EN",
    ), method


def _attach(em: EmailMessage, name: str, source: str, when: datetime) -> None:
    from pmsearch.testing.attachments import CONTENT_TYPES

    ext = name.lower().rsplit(".", 1)[-1]
    if ext in {"xlsx", "docx", "pptx"}:
        maintype, subtype = CONTENT_TYPES[ext].split("/")
        em.add_attachment(render_document(name, source, when), maintype=maintype, subtype=subtype, filename=name)
    elif ext == "ics":
        invitation, method = render_invitation(source)
        em.add_attachment(invitation, maintype="text", subtype="calendar", filename=name, params={"method": method})
    elif ext == "pdf":
        em.add_attachment(render_pdf(source, when), maintype="application", subtype="pdf", filename=name)
    elif ext in {"jpg", "jpeg"}:
        em.add_attachment(render_photo(source, name), maintype="image", subtype="jpeg", filename=name)
    elif ext in {"html", "htm"}:
        em.add_attachment(source + "\n", subtype="html", filename=name)
    else:
        em.add_attachment(source + "\n", subtype="csv" if ext == "csv" else "plain", filename=name)


# -- building -------------------------------------------------------------------------


def _quote(parent: Msg) -> str:
    who = parseaddr(parent.get("from"))[0] or parseaddr(parent.get("from"))[1]
    own = parent.body.strip()  # the parent's own words; its quote is not quoted again
    quoted = "\n".join(("> " + ln).rstrip() for ln in own.splitlines())
    return f"\n\nOn {parent.date:%a, %d %b %Y at %H:%M}, {who} wrote:\n{quoted}\n"


def _plain_to_html(text: str) -> str:
    paras = [p for p in text.strip().split("\n\n") if p.strip()]
    inner = "\n".join(f"<p>{html.escape(p).replace(chr(10), '<br>')}</p>" for p in paras)
    return f"<html><body style=\"font-family: Arial, sans-serif\">\n{inner}\n</body></html>\n"


def build(msgs: list[Msg], rng: random.Random) -> None:
    """Resolve dates, parents, subjects and ids, then make each message's MIME."""
    by_key: dict[str, Msg] = {}
    last_in_thread: dict[str, Msg] = {}
    for msg in msgs:
        if msg.key in by_key:
            raise SystemExit(f"duplicate message key {msg.key}")
        prev = last_in_thread.get(msg.get("thread"))
        at = msg.get("at", "+0m")
        if at.startswith("+"):
            base = prev.date if prev else _parse_date(msg.get("date"))
            naive = (base + _offset(at) + timedelta(minutes=rng.randint(0, 9))).replace(tzinfo=None)
            msg.date = naive.replace(tzinfo=_tz(naive))
        else:
            msg.date = _parse_date(at)
        parent = by_key.get(msg.get("reply") or msg.get("forward"))
        if (msg.get("reply") or msg.get("forward")) and parent is None:
            raise SystemExit(f"{msg.key}: unknown parent")
        _make_email(msg, parent, rng)
        by_key[msg.key] = msg
        last_in_thread[msg.get("thread")] = msg


def _make_email(msg: Msg, parent: Msg | None, rng: random.Random) -> None:
    em = EmailMessage()
    em["From"] = msg.get("from")
    em["To"] = msg.get("to")
    if msg.get("cc"):
        em["Cc"] = msg.get("cc")
    subject = msg.get("subject")
    body = msg.body
    if parent is not None and msg.get("reply"):
        base_subject = parent.email["Subject"]
        subject = msg.fields.get("reply-subject") or (
            base_subject if base_subject.lower().startswith("re:") else f"Re: {base_subject}")
        em["In-Reply-To"] = f"<{parent.get('message-id')}>"
        msg.refs = [*parent.refs, parent.get("message-id")]
        if msg.get("refs") != "none":
            em["References"] = " ".join(f"<{r}>" for r in msg.refs)
        if msg.get("quote") != "no" and not msg.get("html"):
            body = body.rstrip("\n") + _quote(parent)
    elif parent is not None:  # forward
        subject = msg.fields.get("reply-subject") or f"Fwd: {parent.email['Subject']}"
        if msg.get("forward-as") != "attachment":
            pf = parent.email
            body = (body.rstrip("\n") + "\n\n---------- Forwarded message ---------\n"
                    f"From: {pf['From']}\nDate: {pf['Date']}\nSubject: {pf['Subject']}\nTo: {pf['To']}\n\n"
                    + parent.sent.strip() + "\n")
    em["Subject"] = subject
    em["Date"] = format_datetime(msg.date)
    msg.fields["message-id"] = msg.get("message-id") or _message_id(msg, rng)
    if msg.get("no-message-id") != "yes":
        em["Message-ID"] = f"<{msg.get('message-id')}>"
    for name, value in msg.headers:
        em[name] = value
    if msg.get("html") == "yes":
        em.set_content(body, subtype="html", charset=msg.get("charset") or "utf-8", cte=msg.get("cte") or None)
    else:
        em.set_content(body, charset=msg.get("charset") or "utf-8", cte=msg.get("cte") or None)
        if msg.get("alt-html") == "yes":
            em.add_alternative(_plain_to_html(body), subtype="html")
    msg.sent = body
    for name, source in msg.attachments:
        _attach(em, name, source, msg.date)
    if parent is not None and msg.get("forward"):
        for part in parent.email.iter_attachments():
            if msg.get("forward-as") != "attachment":
                em.add_attachment(part.get_content(), **_part_args(part))
        if msg.get("forward-as") == "attachment":
            em.add_attachment(parent.email)  # message/rfc822
    msg.email = em


def _part_args(part: EmailMessage) -> dict:
    args = {"filename": part.get_filename()}
    if part.get_content_maintype() != "text":
        args.update(maintype=part.get_content_maintype(), subtype=part.get_content_subtype())
    else:
        args.update(subtype=part.get_content_subtype())
    return args


# -- output ---------------------------------------------------------------------------


def place(msg: Msg) -> tuple[str, str, str]:
    tenant, mailbox = msg.get("tenant"), msg.get("mailbox")
    owner = OWNERS[(tenant, mailbox)]
    folder = msg.get("folder") or ("Sent" if parseaddr(msg.get("from"))[1].lower() == owner else "INBOX")
    return tenant, mailbox, folder


def write(msgs: list[Msg], out: Path) -> dict[tuple[str, str, str], int]:
    tenants = sorted({m.get("tenant") for m in msgs})
    for tenant in tenants:
        shutil.rmtree(out / tenant, ignore_errors=True)
    groups: dict[tuple[str, str, str], list[Msg]] = {}
    for msg in msgs:
        groups.setdefault(place(msg), []).append(msg)
        if msg.get("also-in"):  # the same message filed twice, as clients do on copy
            tenant, mailbox, _ = place(msg)
            groups.setdefault((tenant, mailbox, msg.get("also-in")), []).append(msg)
    for (tenant, mailbox, folder), items in groups.items():
        folder_dir = out / tenant / mailbox / folder
        folder_dir.mkdir(parents=True, exist_ok=True)
        for n, msg in enumerate(sorted(items, key=lambda m: (m.date, m.key)), start=1):
            (folder_dir / f"{n:03d}.eml").write_bytes(msg.email.as_bytes(policy=policy.default))
    return {k: len(v) for k, v in sorted(groups.items())}


# -- routine automated mail, from templates -------------------------------------------

_SUPPLIERS = ["Initech Office Supplies", "Fabrikam Print", "Northwind Traders", "Tailspin Toys", "Adatum Electronics"]
_STATUSES = ["picked up", "in transit", "out for delivery", "delivered to reception", "delayed by weather"]
_EXPENSES = [("Lukas Brandt", "taxi to Munich airport", 48.60), ("Dana Weber", "fuel for Sprinter M-AC 1190", 112.35),
             ("Alice Martin", "client dinner with Contoso", 186.00), ("Tom Richter", "train to Hamburg", 139.90),
             ("Priya Nair", "job fair booth materials", 74.20), ("Lukas Brandt", "hotel in Lyon, 2 nights", 298.00)]
_STANDUP = ["Warehouse scanner firmware update scheduled for Friday", "Two new pickers start Monday",
            "Van HH-GX 310 back from hail repair next week", "Customer Vandelay asked for weekend delivery",
            "Quarterly stock count: aisles 1-6 done", "Forklift training certificates renewed",
            "Late truck from Rotterdam, arrival moved to 14:00", "Printer on 2nd floor out of toner again"]


def routine_mail(rng: random.Random) -> str:
    """Source text for the everyday automated mail that fills a real inbox."""
    out: list[str] = []

    def add(key: str, tenant: str, mailbox: str, date: datetime, sender: str, to: str, subject: str,
            body: str, extra: str = "") -> None:
        out.append(f"=== routine-{key}\ntenant: {tenant}\nmailbox: {mailbox}\n\n--- {key}\nfrom: {sender}\n"
                   f"to: {to}\nsubject: {subject}\nat: {date:%Y-%m-%d %H:%M}\n{extra + chr(10) if extra else ''}\n"
                   f"{body.strip()}\n")

    start = datetime(2024, 2, 5, 8, 0)
    for n in range(10):  # parcel notices for Alice (8) and Carol (2)
        tenant, box, to = ("acme", "alice", "alice@acme.example") if n < 8 else ("globex", "carol", "carol@globex.example")
        track = f"PX{rng.randint(10**9, 10**10 - 1)}"
        status, supplier = rng.choice(_STATUSES), rng.choice(_SUPPLIERS)
        add(f"parcel-{n}", tenant, box, start + timedelta(days=9 * n, hours=rng.randint(0, 9)),
            "Parcelly Notifications <noreply@parcelly.example>", to, f"Shipment {track}: {status}",
            f"Hello,\n\nyour shipment {track} from {supplier} is {status}.\n"
            f"Expected delivery: {(start + timedelta(days=9 * n + 2)):%A, %d %B}.\n\n"
            f"Track it at https://track.parcelly.example/{track}\n\nParcelly - we move your things")
    for n in range(10):  # expense approvals for Bob
        who, what, amount = _EXPENSES[n % len(_EXPENSES)]
        amount = round(amount * (1 + rng.randint(-10, 10) / 100), 2)
        add(f"expense-{n}", "acme", "bob", start + timedelta(days=8 * n + 1, hours=3),
            "Acme Expenses <expenses@acme.example>", "bob@acme.example",
            f"Expense report EXP-2024-{41 + n:04d} ready for payout",
            f"Expense report EXP-2024-{41 + n:04d} by {who} was approved by the line manager.\n\n"
            f"Purpose: {what}\nAmount: EUR {amount:,.2f}\nCost centre: {rng.choice(['OPS-100', 'SAL-200', 'ADM-300'])}\n\n"
            "Please include it in the next payment run. This message was sent automatically.")
    for n, month in enumerate(["February", "March", "April", "May"]):  # HTML-only cloud invoices
        amount = 49.0 + 12.5 * n + rng.randint(0, 4)
        html_body = (f"<html><body><h2>Your Hooli Cloud invoice for {month} 2024</h2>"
                     f"<p>Invoice <b>HC-2024-{n + 2:02d}17</b> for account <i>acme-logistics</i> is ready.</p>"
                     f"<table><tr><th>Service</th><th>Amount</th></tr><tr><td>Storage (2 TB)</td><td>EUR {amount - 9:.2f}</td></tr>"
                     f"<tr><td>Backup</td><td>EUR 9.00</td></tr><tr><td><b>Total</b></td><td><b>EUR {amount:.2f}</b></td></tr></table>"
                     f"<p>The amount will be charged to the card ending 4417 on the 15th.</p>"
                     f"<p><a href=\"https://billing.hooli.example/invoices/HC-2024-{n + 2:02d}17\">View invoice</a></p></body></html>")
        add(f"hooli-{n}", "acme", "bob", datetime(2024, 2 + n, 1, 6, 5), "Hooli Cloud Billing <billing@hooli.example>",
            "bob@acme.example", f"Your Hooli Cloud invoice for {month} 2024", html_body, "html: yes")
    for n in range(8):  # weekly fleet reports with a CSV attachment, for the claims desk
        week = 10 + n
        golf = "in repair (Autohaus Berger)" if 11 <= week <= 14 else "in service"
        csv = ("vehicle,plate,km_this_week,status\n"
               f"VW Golf,M-AC 4821,{0 if 'repair' in golf else rng.randint(250, 600)},{golf}\n"
               f"Mercedes Sprinter,M-AC 1190,{rng.randint(900, 1600)},in service\n"
               f"Mercedes Sprinter,M-AC 1191,{rng.randint(900, 1600)},in service\n"
               f"Skoda Octavia,M-AC 3307,{rng.randint(200, 700)},in service")
        add(f"fleet-{n}", "acme", "shared-claims", datetime(2024, 3, 4, 7, 30) + timedelta(weeks=n),
            "Fleet Telematics <reports@fleetbox.example>", "claims@acme.example",
            f"Weekly fleet report, week {week}",
            f"Weekly fleet report for Acme Logistics, calendar week {week}.\n\nVW Golf M-AC 4821: {golf}.\n"
            f"All other vehicles in service.\n\n@@ attach fleet-week-{week}.csv\n{csv}\n@@ end")
    for n in range(10):  # Globex stand-up notes
        items = rng.sample(_STANDUP, 3)
        day = datetime(2024, 3, 4, 9, 15) + timedelta(days=7 * (n // 2) + 2 * (n % 2))
        add(f"standup-{n}", "globex", "carol", day, "Globex Ops Bot <standup@globex.example>", "carol@globex.example",
            f"Stand-up notes {day:%d %b}", "Notes from today's operations stand-up:\n\n" + "\n".join(f"- {i}" for i in items))
    for n, topic in enumerate(["Reading your commercial insurance policy", "Hail season: protect your fleet",
                               "Five tips for cheaper business travel"]):
        add(f"digest-{n}", "globex", "carol", datetime(2024, 3, 12, 6, 0) + timedelta(days=21 * n),
            "Harbor Business Digest <digest@harbormutual.example>", "carol@globex.example", f"Digest: {topic}",
            f"<html><body><h1>{topic}</h1><p>This month's digest for Harbor Mutual business customers.</p>"
            f"<p><a href=\"https://harbormutual.example/digest/{n + 1}\">Read the full article</a></p>"
            "<p style=\"font-size:10px\">You receive this because you are a Harbor Mutual policy holder.</p></body></html>",
            "html: yes")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=DEMO)
    ap.add_argument("--source", type=Path, default=DEMO / "_source")
    args = ap.parse_args(argv)
    random.seed(SEED)  # the email generator draws MIME boundaries from the global RNG
    rng = random.Random(SEED)
    msgs: list[Msg] = []
    for path in sorted(args.source.glob("*.txt")):
        if path.name != LATER:
            msgs.extend(parse_source(path.read_text(encoding="utf-8")))
    msgs.extend(parse_source(routine_mail(random.Random(SEED + 1))))
    build(msgs, rng)
    if (args.source / LATER).exists():
        later = parse_source((args.source / LATER).read_text(encoding="utf-8"))
        build(later, random.Random(SEED + 2))
        for msg in later:
            for n, part in enumerate(msg.email.walk()):
                if part.is_multipart():  # not from the global RNG, which the others' boundaries draw on
                    part.set_boundary(f"=_{msg.key}.{n}")
        msgs.extend(later)
    counts = write(msgs, args.out)
    for (tenant, mailbox, folder), n in counts.items():
        print(f"{tenant}/{mailbox}/{folder}: {n}")
    print(f"total: {sum(counts.values())} messages")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
