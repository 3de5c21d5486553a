"""Text from mail, models or the server, made safe to print on a terminal.

Everything a command prints that it did not write itself goes through here: Rich would
read ``[...]`` in it as markup (a subject ``Invoice [/dim] paid`` crashes the print, a
``[link=...]`` makes a live link), and the terminal would obey escape sequences in it.
So such text is never formatted into a markup string; it is appended to a
:class:`rich.text.Text` after :func:`clean`.
"""

from __future__ import annotations

import html
import re

from rich.text import Text

# C0 and C1 controls but tab and newline (ESC starts terminal sequences, CR and BS
# overwrite what was printed), DEL, and the bidi controls that make text read in another
# order than it is stored.
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
_MARK = re.compile(r"(</?mark>)")

Part = str | tuple[str, str] | Text


def clean(value: object) -> str:
    """``value`` as a string without control characters (tab and newline kept)."""
    return _CONTROL.sub("", "" if value is None else str(value))


def line(*parts: Part) -> Text:
    """A printable line from untrusted strings, ``(string, style)`` pairs (the style
    is ours, the string is not) and Text already built by this module."""
    out = Text()
    for part in parts:
        if isinstance(part, Text):
            out.append_text(part)
        elif isinstance(part, tuple):
            out.append(clean(part[0]), style=part[1])
        else:
            out.append(clean(part))
    return out


def snippet(fragment: str, style: str = "bold yellow") -> Text:
    """A search hit's snippet (escaped HTML whose only tag is <mark>) as styled text."""
    out = Text()
    marked = False
    for piece in _MARK.split(fragment):
        if piece in ("<mark>", "</mark>"):
            marked = piece == "<mark>"
        elif piece:
            out.append(clean(html.unescape(piece)), style=style if marked else "")
    return out
