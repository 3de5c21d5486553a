"""Calendar invitations (``.ics``, ``text/calendar``), by icalendar: each event as when,
where and who, not as raw iCalendar lines; a cancellation says so."""

from __future__ import annotations

import datetime as dt
from typing import Any

from pmsearch.services.searcher.ingest.documents.errors import Unreadable
from pmsearch.services.searcher.ingest.documents.layout import Budget

Extracted = tuple[str | None, bool, list[str]]
MAX_EVENTS = 500
MAX_ATTENDEES = 50

METHODS = {
    "REQUEST": "An invitation",
    "CANCEL": "A cancellation: this event is cancelled",
    "REPLY": "A reply to an invitation",
    "COUNTER": "A proposal of another time",
    "PUBLISH": "A published calendar entry",
}


def calendar_text(data: bytes, room: int) -> Extracted:
    from icalendar import Calendar

    try:
        calendar = Calendar.from_ical(data.decode("utf-8", errors="replace"))
    except Exception as exc:  # noqa: BLE001 - a broken file costs only itself
        raise Unreadable(f"not a readable calendar file ({type(exc).__name__})") from None
    method = str(calendar.get("METHOD", "")).upper()
    out = Budget(room)
    events = [c for c in calendar.walk("VEVENT")][:MAX_EVENTS]
    if method in METHODS:
        out.add(f"{METHODS[method]} ({method}).")
    for event in events:
        out.gap()
        if not _event(event, method, out):
            break
    return (*out.text(), [])


def _when(value: Any) -> str:
    """A start or end with its time zone: ``2027-03-04 10:00 (Europe/Paris)``; a date
    alone for an all-day event."""
    moment = getattr(value, "dt", value)
    if isinstance(moment, dt.datetime):
        zone = getattr(moment.tzinfo, "key", None) or (moment.tzname() if moment.tzinfo else None)
        text = moment.strftime("%Y-%m-%d %H:%M")
        return f"{text} ({zone})" if zone else f"{text} (floating time, no time zone)"
    if isinstance(moment, dt.date):
        return f"{moment.isoformat()} (all day)"
    return str(moment)


def _person(value: Any) -> str:
    address = str(value).removeprefix("mailto:").removeprefix("MAILTO:")
    name = getattr(value, "params", {}).get("CN")
    return f"{name} <{address}>" if name else address


def _event(event: Any, method: str, out: Budget) -> bool:
    lines = []
    status = str(event.get("STATUS", "")).upper()
    summary = " ".join(str(event.get("SUMMARY", "")).split())
    cancelled = status == "CANCELLED" or method == "CANCEL"
    lines.append(f"Event{' (cancelled)' if cancelled else ''}: {summary or '(no title)'}")
    if event.get("DTSTART") is not None:
        lines.append(f"Starts: {_when(event.get('DTSTART'))}")
    if event.get("DTEND") is not None:
        lines.append(f"Ends: {_when(event.get('DTEND'))}")
    elif event.get("DURATION") is not None:
        lines.append(f"Lasts: {getattr(event.get('DURATION'), 'dt', event.get('DURATION'))}")
    if event.get("LOCATION"):
        lines.append(f"Where: {' '.join(str(event.get('LOCATION')).split())}")
    if event.get("ORGANIZER"):
        lines.append(f"Organiser: {_person(event.get('ORGANIZER'))}")
    attendees = event.get("ATTENDEE") or []
    attendees = attendees if isinstance(attendees, list) else [attendees]
    if attendees:
        shown = ", ".join(_person(a) for a in attendees[:MAX_ATTENDEES])
        more = f" and {len(attendees) - MAX_ATTENDEES} more" if len(attendees) > MAX_ATTENDEES else ""
        lines.append(f"Attendees: {shown}{more}")
    if event.get("RRULE"):
        lines.append(f"Repeats: {event.get('RRULE').to_ical().decode(errors='replace')}")
    description = " ".join(str(event.get("DESCRIPTION", "")).split())
    if description:
        lines.append(description)
    return all(out.add(line) for line in lines)
