"""A message body read as mail: the sender's own words apart from what they quote,
forward, sign, attach as a patch, or what the list appends.

Replies on mailing lists answer inline: quoted lines (``>``) and the author's lines
alternate, so a splitter that cuts once at the attribution line ("On … X wrote:")
leaves the quotes inside the reply. Every line is classified instead, and runs of
lines of one kind become a :class:`Part`. Attribution lines in the languages
mail-parser-reply knows (its per-language patterns, Outlook's "From: … Sent: …" blocks
included) are recognised with that library's patterns; what it does not cover (wrapped
attributions, mutt's ``* X <x@y> [date]:``, git's patches and diffstats, list footers,
forwarded-message banners) is added here.

Both sides of the trust boundary read mail through this one module: the searcher's
index, the passages a model reads, the answerer's details and the verifier's support.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum

from mailparser_reply.constants import MAIL_LANGUAGES

from pmsearch.shared.textcache import cached_text


class Kind(StrEnum):
    OWN = "own"  # the sender's own words
    QUOTED = "quoted"  # an earlier message's words, ``>``-quoted or below an Outlook header block
    ATTRIBUTION = "attribution"  # "On … X wrote:", an Outlook "From: … Sent: …" block
    FORWARDED = "forwarded"  # a forwarded message: its banner, its headers and its text
    SIGNATURE = "signature"  # "-- " and what follows, a sign-off and the lines under it
    DIFFSTAT = "diffstat"  # git's "---" and " path | 12 +-" summary
    PATCH = "patch"  # diff hunks: searchable, never prose to quote as a claim
    FOOTER = "footer"  # a list's footer or a disclaimer


@dataclass(frozen=True)
class Part:
    kind: Kind
    text: str
    author: str = ""  # quoted, attribution and forwarded parts: who wrote it, when the mail says


@dataclass(frozen=True)
class MailText:
    parts: tuple[Part, ...]

    def text(self, *kinds: Kind) -> str:
        return "\n".join(p.text for p in self.parts if p.kind in kinds)

    @property
    def own(self) -> str:
        """The sender's own words."""
        return self.text(Kind.OWN)

    @property
    def searchable(self) -> str:
        """What a search should find this message by: its own words and its patch (a
        function name asked about must be found), not the text it quotes."""
        return self.text(Kind.OWN, Kind.PATCH, Kind.FORWARDED)


_LANGUAGES = ("en", "de", "fr", "es", "it", "nl")
_WROTE = re.compile(
    "|".join(f"(?:{MAIL_LANGUAGES[lang]['wrote_header']})" for lang in _LANGUAGES if lang in MAIL_LANGUAGES),
    re.I | re.M,
)
# The ends of an attribution the library's patterns miss: "X <x@y> wrote:", "X writes:",
# a wrapped "On …\nwrote:", "Le … a écrit :", "Am … schrieb X:", mutt's "* X <x@y> [date]:".
_WROTE_END = re.compile(
    r"(?:\b(?:wrote|writes|said|a\s+écrit|schrieb(?:\s+[^:]{1,80})?|escribió|ha\s+scritto|schreef)\s*:"
    r"|<[^<>\s@]+@[^<>\s]+>\s*(?:\[[^\]]{4,40}\])?\s*:|\[\d{4}-\d\d-\d\d[^\]]{0,20}\]\s*:)\s*$",
    re.I,
)
# A name alone before the verb, as Thunderbird writes it in French ("DANYACH-DESCHAMPS
# Myriam a écrit :"): capitalised words or an address, nothing a sentence would start with.
_NAME_WROTE = re.compile(
    r"^\s*(?:[A-ZÀ-Ý][\w.'’-]*|<?[\w.+-]+@[\w.-]+>?)(?:\s+(?:[A-ZÀ-Ý][\w.'’-]*|<?[\w.+-]+@[\w.-]+>?)){0,4}"
    r"\s+(?:a\s+écrit|wrote|schrieb)\s*:\s*$"
)
_QUOTE = re.compile(r"^[ \t]{0,3}>")
# How a wrapped attribution starts: "On <date>", "Le <date>", a mutt "* Name", or a name and address.
_OPENER = re.compile(r"^\s*(?:On|Le|Am|El|Il|Op|Den|\*)\s|^[^.!?]{0,80}<[^<>\s@]+@[^<>\s]+>\s*$", re.I)
# Outlook and its kin put a header block in front of the message they quote.
_ORIGINAL = re.compile(
    r"^\s*[-_]{3,}\s*(?:Original Message|Ursprüngliche Nachricht|Message d'origine|Mensaje original|Originalnachricht)"
    r"\s*[-_]{3,}\s*$",
    re.I,
)
_HEADER_FIELD = re.compile(
    r"^\s*\*?(?:From|Sent|To|Cc|Bcc|Subject|Date|Von|Gesendet|An|Betreff|Datum|De|Envoyé|À|A|Objet|Date)\s*\*?\s*:",
    re.I,
)
_SENT_FIELD = re.compile(r"^\s*\*?(?:Sent|Date|Gesendet|Datum|Envoyé|Date)\s*\*?\s*:\s*\S", re.I)
_FROM_FIELD = re.compile(r"^\s*\*?(?:From|Von|De)\s*\*?\s*:\s*(.+)$", re.I)
_FORWARD = re.compile(
    r"^\s*(?:-{2,}\s*(?:Forwarded message|Forwarded Message|Weitergeleitete Nachricht|Message transféré"
    r"|Mensaje reenviado|Messaggio inoltrato)\s*-{2,}"
    r"|Begin forwarded message:|Anfang der weitergeleiteten Nachricht:|Début du message réexpédié :?"
    r"|-{3,}\s*Forwarded by .{1,120})\s*$",
    re.I,
)
_SIGNATURE = re.compile(r"^-- ?$")
_SIGN_OFF = re.compile(
    r"^\s*(?:kind regards|best regards|warm regards|regards|best|thanks|thank you|many thanks|cheers|ciao"
    r"|viele grüße|viele grüsse|beste grüße|liebe grüße|gruß|grüße|mit freundlichen grüßen|mfg"
    r"|cordialement|bien cordialement|bien à vous|salutations|merci|amicalement|a\+|@\+)[,!.]?\s*$",
    re.I,
)
_SENT_FROM = re.compile(r"^\s*(?:Sent from my |Get Outlook for |Envoyé de mon |Gesendet von meinem )", re.I)
_DIFFSTAT_LINE = re.compile(r"^\s*\S.*\s\|\s+(?:\d+\s*[-+]*|Bin\b.*)\s*$")
# A cover letter's shortlog ("Yang Xiwen (2):" and its patches' subjects, indented) comes
# before its diffstat; b4 ends it with the commit the series applies to.
_SHORTLOG = re.compile(r"^\S.{0,60} \(\d+\):\s*$")
_SERIES_TAIL = re.compile(r"^(?:base-commit|change-id|prerequisite-[\w-]+):\s+\S+\s*$")
_DIFFSTAT_END = re.compile(r"^\s*\d+ files? changed(?:, \d+ insertions?\(\+\))?(?:, \d+ deletions?\(-\))?\s*$")
_PATCH_START = re.compile(r"^(?:diff --git |diff -[a-zA-Z]+ |Index: \S|--- (?:a/)?\S+.*$|@@ -\d+(?:,\d+)? \+\d+(?:,\d+)? @@)")
# OpenPGP's clear-signing armour and Mailman's marker for a scrubbed attachment.
_ARMOUR = re.compile(r"^-----(?:BEGIN PGP SIGNED MESSAGE|BEGIN PGP SIGNATURE|END PGP SIGNATURE)-----\s*$")
_NEXT_PART = re.compile(r"^-{5,} (?:next part|section suivante|nächster Teil) -{5,}\s*$", re.I)
_PATCH_LINE = re.compile(
    r"^(?:[ +\-@\\]|diff |index [0-9a-f]|new file mode|deleted file mode|old mode|new mode|similarity index"
    r"|rename (?:from|to) |copy (?:from|to) |Binary files|GIT binary patch|literal \d|delta \d|Index: |={5,}|$)"
)
_FOOTER_RULE = re.compile(r"^\s*_{10,}\s*$")
_FOOTER_TEXT = re.compile(
    r"mailing list|listinfo|mailman|unsubscribe|désinscri|abmelden|You received this message because"
    r"|To post to this group|liste de diffusion|Mailingliste",
    re.I,
)
# A footer without a rule over it starts as lists and groups word it.
_FOOTER_START = re.compile(
    r"^\s*(?:To unsubscribe|You received this message because|To post to this group|For more options, visit"
    r"|Pour vous désinscrire|Pour vous désabonner|Um (?:sich )?(?:von )?(?:der|dieser) Liste abzumelden"
    r"|\S*https?://\S*(?:listinfo|mailman)/)",
    re.I,
)
_SENTENCE = re.compile(r"\w\w[.!?]\s*$")
_ADDRESS = re.compile(r"<?[\w.+-]+@[\w-]+(?:\.[\w-]+)+>?")
_DATEISH = re.compile(r"\d")


def _attribution_at(lines: list[str], i: int) -> tuple[int, bool]:
    """(how many lines from ``i`` make an attribution, whether the unquoted rest of the
    body is the quoted message); (0, False) for none.

    A client's own attribution ("On … wrote:", "Le … a écrit :", "Am … schrieb X:")
    counts with or without ``>`` lines after it (some clients quote without marks); the
    looser endings ("X <x@y> writes:") only in front of a quote."""
    for n in (1, 2, 3):
        if i + n > len(lines) or not lines[i + n - 1].strip() or _QUOTE.match(lines[i + n - 1]):
            return 0, False
        if n > 1 and not _OPENER.match(lines[i]):
            return 0, False
        chunk = "\n".join(line.strip() for line in lines[i : i + n])
        if len(chunk) > 300:
            return 0, False
        quoted = _quote_follows(lines, i + n)
        client = _WROTE.match(chunk)
        if (client and client.end() >= len(chunk.rstrip()) - 1) or (n == 1 and _NAME_WROTE.match(chunk)):
            return n, not quoted
        if quoted and _WROTE_END.search(lines[i + n - 1].strip()):
            return n, False
    return 0, False


def _quote_follows(lines: list[str], j: int) -> bool:
    while j < len(lines) and not lines[j].strip():
        j += 1
    return j < len(lines) and bool(_QUOTE.match(lines[j]))


def _header_block(lines: list[str], i: int) -> int:
    """The length of an Outlook header block ("From: … Sent: … To: … Subject: …") at ``i``."""
    if not _FROM_FIELD.match(lines[i]):
        return 0
    # Fields wrap, indented or not (Lotus Notes wraps a long To: flush left); the block
    # ends at the first blank line.
    j = i + 1
    while j < len(lines) and j - i < 16 and lines[j].strip():
        j += 1
    fields = sum(1 for line in lines[i:j] if _HEADER_FIELD.match(line))
    dated = j > i + 1 and _SENT_FIELD.match(lines[i + 1])
    return j - i if fields >= 3 or (fields == 2 and dated) else 0


def author_of(attribution: str) -> str:
    """The name an attribution or header block gives its author, as written; "" when none."""
    for line in attribution.splitlines():
        field = _FROM_FIELD.match(line)
        if field:
            return _name(field.group(1))
    text = " ".join(attribution.split())
    german = re.search(r"schrieb\s+(.+?)\s*:\s*$", text, re.I)
    if german:
        return _name(german.group(1))
    return _name(re.sub(r"\s*(?:wrote|writes|said|a\s+écrit|schrieb|escribió|ha scritto|schreef)\s*:?\s*$", "", text, flags=re.I))


def _name(text: str) -> str:
    """A person's name out of "On Tue, 16 Nov 2010 06:51:17 -0800 Joe Perches <joe@x>":
    the words after the date and time, before the address."""
    text = re.split(r"\s+on\s+(?=\d)", text, maxsplit=1)[0]  # Lotus Notes: "X@ENRON on 12/12/2000 11:56 AM"
    before_address = _ADDRESS.split(text, maxsplit=1)[0]
    candidate = before_address if before_address.strip() else text
    candidate = re.sub(r"@\S*", "", candidate)  # "Leslie Lawner@ENRON", "Name/HOU/ECT@ECT"
    candidate = re.sub(r"(?<=\w)/[A-Z]{2,}\S*", "", candidate)
    words = candidate.replace(",", " , ").split()
    last_dated = max((k for k, w in enumerate(words) if _DATEISH.search(w)), default=-1)
    words = words[last_dated + 1 :]
    while words and (words[0] in {",", "AM", "PM", "am", "pm"} or words[0].casefold() in {"on", "le", "am", "el", "il", "op"}):
        words = words[1:]
    name = " ".join(w for w in words if w != ",").strip(" *\"'()[]:")
    return name if 1 < len(name) <= 80 else ""


@cached_text(maxsize=2048)
def split_mail(body: str) -> MailText:
    """The body's parts, in order. Pure: the same body always gives the same parts."""
    lines = body.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    kinds, authors = _classify(lines)
    return MailText(_group(lines, kinds, authors))


def forwarded(body: str) -> list[tuple[str, str]]:
    """(author, text) of each message ``body`` forwards, without its banner and header
    block: evidence in its author's words that the index may hold nowhere else."""
    out = []
    for part in split_mail(body).parts:
        if part.kind is Kind.FORWARDED:
            text = _after_headers(part.text.split("\n"))
            if text:
                out.append((part.author, text))
    return out


def _after_headers(lines: list[str]) -> str:
    """The text after a forward's banner and the header block under it (up to the first
    blank line after a header field); after the banner alone when there is no block."""
    fields = [k for k, line in enumerate(lines[:16]) if _HEADER_FIELD.match(line)]
    start = 1
    if fields:
        start = next((k for k in range(fields[0], len(lines)) if not lines[k].strip()), len(lines))
    return "\n".join(lines[start:]).strip()


def searchable_text(text: str) -> str:
    """What a search finds a piece of a body by (:attr:`MailText.searchable`); a piece
    that is all quote keeps its first lines, so that it can still be found when the
    message it quotes is not in the index."""
    found = split_mail(text).searchable.strip()
    return found or text[:300]


@cached_text(maxsize=1024)
def blank_except(body: str, *kinds: Kind) -> str:
    """``body`` with every line not of ``kinds`` blanked: the same length and offsets, so
    that an excerpt found in it is found at the same place in the message."""
    lines = body.split("\n")
    found, _ = _classify([line.rstrip("\r") for line in lines])
    return "\n".join(line if kind in kinds else " " * len(line) for line, kind in zip(lines, found))


def quotes_where(body: str, keep: Callable[[str], bool]) -> str:
    """``body`` with every line blanked but the quoted stretches (consecutive quoted
    lines of one author) that ``keep`` accepts, given each stretch's text, each with the
    attribution line above it (it names who is quoted), their quote markers blanked: the
    same length and offsets, like :func:`blank_except`."""
    lines = body.split("\n")
    found, authors = _classify([line.rstrip("\r") for line in lines])
    out = [" " * len(line) for line in lines]
    start = 0
    for k in range(1, len(lines) + 1):
        if k == len(lines) or found[k] != found[start] or authors[k] != authors[start]:
            if found[start] is Kind.QUOTED and keep("\n".join(lines[start:k])):
                first = start
                while first > 0 and found[first - 1] is Kind.ATTRIBUTION:
                    first -= 1
                out[first:k] = [_QUOTE_MARKS.sub(_spaces, line) for line in lines[first:k]]
            start = k
    return "\n".join(out)


# A quoted line's markers ("> ", ">> "), blanked so that a quoted sentence wrapped over
# lines reads as the words it is, as the passages show it.
_QUOTE_MARKS = re.compile(r"^[ \t]*(?:>[ \t]?)+")


def _spaces(mark: re.Match[str]) -> str:
    return " " * len(mark.group())


def _classify(lines: list[str]) -> tuple[list[Kind], list[str]]:
    """Each line's kind and, for quoted, attribution and forwarded lines, its author."""
    kinds: list[Kind] = [Kind.OWN] * len(lines)
    authors: list[str] = [""] * len(lines)
    i, n = 0, len(lines)
    while i < n:
        line = lines[i]
        if _FORWARD.match(line):
            author = ""
            for j in range(i + 1, min(n, i + 12)):
                field = _FROM_FIELD.match(lines[j])
                if field:
                    author = _name(field.group(1))
                    break
            _mark(kinds, authors, i, n, Kind.FORWARDED, author)
            break
        if _ORIGINAL.match(line) or _header_block(lines, i):
            start = i + (1 if _ORIGINAL.match(line) else 0)
            size = _header_block(lines, start) if start < n else 0
            author = author_of("\n".join(lines[start : start + size])) if size else ""
            _mark(kinds, authors, i, start + size, Kind.ATTRIBUTION, author)
            _mark(kinds, authors, start + size, n, Kind.QUOTED, author)
            break
        if _QUOTE.match(line):
            kinds[i] = Kind.QUOTED
            i += 1
            continue
        size, rest_quoted = _attribution_at(lines, i) if line.strip() else (0, False)
        if size:
            author = author_of("\n".join(lines[i : i + size]))
            _mark(kinds, authors, i, i + size, Kind.ATTRIBUTION, author)
            if rest_quoted:
                _mark(kinds, authors, i + size, n, Kind.QUOTED, author)
                break
            j = i + size
            while j < n and (not lines[j].strip() or _QUOTE.match(lines[j])):
                if _QUOTE.match(lines[j]):
                    authors[j] = author
                    kinds[j] = Kind.QUOTED
                j += 1
            i = j
            continue
        if _SHORTLOG.match(line) and _shortlog_end(lines, i) > i + 1:
            j = _shortlog_end(lines, i)
            _mark(kinds, authors, i, j, Kind.DIFFSTAT)
            i = j
            continue
        if line.rstrip() == "---" and i + 1 < n and (_DIFFSTAT_LINE.match(lines[i + 1]) or _DIFFSTAT_END.match(lines[i + 1])
                                                     or _SERIES_TAIL.match(lines[i + 1])):
            j = _diffstat_end(lines, i + 1)
            _mark(kinds, authors, i, j, Kind.DIFFSTAT)
            i = j
            continue
        if _DIFFSTAT_LINE.match(line) and any(_DIFFSTAT_END.match(x) for x in lines[i : _diffstat_end(lines, i)]):
            # A diffstat under a note after "---" ("v2: * Added notes ..."): its summary
            # line ("1 file changed, 8 insertions(+)") tells it from prose with a "|".
            j = _diffstat_end(lines, i)
            _mark(kinds, authors, i, j, Kind.DIFFSTAT)
            i = j
            continue
        if _PATCH_START.match(line) and _is_patch(lines, i):
            j = i
            while j < n and not _SIGNATURE.match(lines[j]) and (_PATCH_LINE.match(lines[j]) or _PATCH_START.match(lines[j])):
                j += 1
            _mark(kinds, authors, i, j, Kind.PATCH)
            i = j
            continue
        if _ARMOUR.match(line):
            if "SIGNED MESSAGE" in line:  # the armour line and its "Hash:" header
                j = i + 1
                while j < n and lines[j].strip():
                    j += 1
                _mark(kinds, authors, i, j, Kind.SIGNATURE)
                i = j
                continue
            j = i
            while j < n and not (lines[j].startswith("-----END PGP SIGNATURE") and j > i):
                j += 1
            _mark(kinds, authors, i, j + 1, Kind.SIGNATURE)
            i = j + 1
            continue
        if _NEXT_PART.match(line):
            _mark(kinds, authors, i, n, Kind.FOOTER)
            break
        if _SIGNATURE.match(line) or _SENT_FROM.match(line):
            j = _until_quote(lines, i)
            _mark(kinds, authors, i, j, Kind.SIGNATURE)
            i = j
            continue
        if _FOOTER_RULE.match(line) and any(_FOOTER_TEXT.search(x) for x in lines[i + 1 : i + 6]):
            _mark(kinds, authors, i, n, Kind.FOOTER)
            break
        if _FOOTER_START.match(line) and _rest_is_short(lines, i + 1, 4):
            _mark(kinds, authors, i, n, Kind.FOOTER)
            break
        if _SIGN_OFF.match(line) and (
            _rest_is_short(lines, i + 1, 6) or _rest_is_short(lines, i + 1, 8, sentences=False)
        ):
            j = _until_quote(lines, i)
            _mark(kinds, authors, i, j, Kind.SIGNATURE)
            i = j
            continue
        i += 1
    _fill_blanks(lines, kinds, authors)
    return kinds, authors


def _diffstat_end(lines: list[str], j: int) -> int:
    """Where a diffstat starting at ``j`` ends (its summary, git's mode lines and b4's
    "base-commit:" tail included)."""
    while j < len(lines) and (
        _DIFFSTAT_LINE.match(lines[j]) or _DIFFSTAT_END.match(lines[j]) or _SERIES_TAIL.match(lines[j])
        or lines[j].rstrip() == "---"
        or lines[j].lstrip().startswith(("create mode", "delete mode", "rename ", "mode change"))
    ):
        j += 1
    return j


def _shortlog_end(lines: list[str], i: int) -> int:
    """Where a cover letter's shortlog at ``i`` ends: its indented subjects, then the
    diffstat under them; ``i + 1`` when no indented subject follows."""
    j = i + 1
    while j < len(lines) and lines[j][:1] in (" ", "\t") and lines[j].strip():
        j += 1
    if j == i + 1:
        return j
    k = j
    while k < len(lines) and not lines[k].strip():
        k += 1
    return _diffstat_end(lines, k) if k < len(lines) and _DIFFSTAT_LINE.match(lines[k]) else j


def _is_patch(lines: list[str], i: int) -> bool:
    line = lines[i]
    if line.startswith(("diff ", "Index: ", "@@ ")):
        return True
    return line.startswith("--- ") and i + 1 < len(lines) and lines[i + 1].startswith("+++ ")


def _rest_is_short(lines: list[str], start: int, most: int, sentences: bool = True) -> bool:
    """At most ``most`` non-blank own lines follow before the end or the next quote: the
    tail of a sign-off (a name, a title, a phone number), not more of the message. A
    longer tail (an office's address block) is a signature only when none of its lines
    is a sentence (``sentences=False``)."""
    count = 0
    for k in range(start, len(lines)):
        line = lines[k]
        if _QUOTE.match(line) or _SIGNATURE.match(line) or _ORIGINAL.match(line) or _header_block(lines, k):
            break
        if line.strip() and _attribution_at(lines, k)[0]:
            break
        if line.strip():
            count += 1
            if count > most or (not sentences and _SENTENCE.search(line)):
                return False
    return True


def _until_quote(lines: list[str], i: int) -> int:
    """Where a signature starting at ``i`` ends: at the next quoted line's attribution or
    quote, else at the end (git's version line under a patch's "-- " included)."""
    j = i + 1
    while j < len(lines):
        if _QUOTE.match(lines[j]) or _attribution_at(lines, j)[0] or _FOOTER_RULE.match(lines[j]):
            break
        j += 1
    return j


def _mark(kinds: list[Kind], authors: list[str], start: int, end: int, kind: Kind, author: str = "") -> None:
    for k in range(start, min(end, len(kinds))):
        kinds[k] = kind
        authors[k] = author


def _fill_blanks(lines: list[str], kinds: list[Kind], authors: list[str] | None = None) -> None:
    for k in range(1, len(lines)):  # a blank line belongs to the run it sits in
        if not lines[k].strip() and kinds[k] is Kind.OWN:
            kinds[k] = kinds[k - 1]
            if authors is not None:
                authors[k] = authors[k - 1]


def _group(lines: list[str], kinds: list[Kind], authors: list[str]) -> tuple[Part, ...]:
    parts: list[Part] = []
    start = 0
    for k in range(1, len(lines) + 1):
        if k == len(lines) or kinds[k] != kinds[start] or authors[k] != authors[start]:
            text = "\n".join(lines[start:k]).strip("\n")
            if text.strip():
                parts.append(Part(kinds[start], text, authors[start]))
            start = k
    return tuple(parts)
