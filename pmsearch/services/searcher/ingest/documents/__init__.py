"""Text from the files people attach: Office and OpenDocument files, spreadsheets,
slides, RTF and calendar invitations, each read by a well-kept library inside the
parsing subprocess (``sandbox.py``: its time, memory and CPU limits hold here too).

Every reader takes the file's bytes and a character budget and returns ``(text, cut)``,
as the PDF reader does; one that must refuse a file (encrypted, a decompression bomb, a
legacy binary format) raises :class:`Unreadable` with the reason, which becomes a note on
the message while the rest of it is read. Text is laid out for the verifier's sentence
reader: prose as lines, a table's rows as ``cell | cell`` lines under their header row,
each sheet, slide or event introduced by a line naming it, a sheet's row numbered where
empty rows before it were left out (:mod:`pmsearch.shared.attachment_places`)."""

from __future__ import annotations

from collections.abc import Callable

from pmsearch.services.searcher.ingest.documents.errors import Unreadable
from pmsearch.services.searcher.ingest.documents.invitation import calendar_text
from pmsearch.services.searcher.ingest.documents.office import docx_text, pptx_text, xlsx_text
from pmsearch.services.searcher.ingest.documents.opendocument import odf_text
from pmsearch.services.searcher.ingest.documents.plain import rtf_text

Reader = Callable[[bytes, int], tuple[str | None, bool]]

# By file extension; the declared type decides only where the extension says nothing
# (many clients send every file as application/octet-stream, some name none).
BY_EXTENSION: dict[str, Reader] = {
    "docx": docx_text, "docm": docx_text,
    "xlsx": xlsx_text, "xlsm": xlsx_text,
    "pptx": pptx_text, "pptm": pptx_text,
    "odt": odf_text, "ods": odf_text, "odp": odf_text,
    "rtf": rtf_text,
    "ics": calendar_text, "ifb": calendar_text,
}
BY_TYPE: dict[str, Reader] = {
    "application/vnd.openxmlformats-officedocument.wordprocessingml.document": docx_text,
    "application/vnd.ms-word.document.macroenabled.12": docx_text,
    "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet": xlsx_text,
    "application/vnd.ms-excel.sheet.macroenabled.12": xlsx_text,
    "application/vnd.openxmlformats-officedocument.presentationml.presentation": pptx_text,
    "application/vnd.oasis.opendocument.text": odf_text,
    "application/vnd.oasis.opendocument.spreadsheet": odf_text,
    "application/vnd.oasis.opendocument.presentation": odf_text,
    "application/rtf": rtf_text, "text/rtf": rtf_text,
    "text/calendar": calendar_text, "application/ics": calendar_text,
}
# Old binary Office files: no kept library reads them without a network or a service.
LEGACY = {"doc", "xls", "ppt"}
LEGACY_TYPES = {"application/msword", "application/vnd.ms-excel", "application/vnd.ms-powerpoint"}
# Outlook's own message files: the one kept reader (extract-msg) is GPL, and no kept
# library writes one to test a reader with.
OUTLOOK_TYPE = "application/vnd.ms-outlook"


def reader_for(content_type: str, filename: str) -> Reader | None:
    """The reader for a file of this type and name, None when there is none."""
    ext = filename.lower().rsplit(".", 1)[-1] if "." in filename else ""
    if ext in BY_EXTENSION:
        return BY_EXTENSION[ext]
    if ext in LEGACY or content_type in LEGACY_TYPES:
        return legacy_office
    if ext == "msg" or content_type == OUTLOOK_TYPE:
        return outlook_message
    return BY_TYPE.get(content_type)


def legacy_office(data: bytes, room: int) -> tuple[str | None, bool]:
    raise Unreadable("a legacy binary Office file (.doc, .xls, .ppt): not read; save it as .docx, .xlsx or .pptx")


def outlook_message(data: bytes, room: int) -> tuple[str | None, bool]:
    raise Unreadable("an Outlook message file (.msg): not read; forward the message as an attachment (.eml) instead")


__all__ = ["Reader", "Unreadable", "reader_for"]
