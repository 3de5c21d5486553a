"""Mail read as mail: real messages of the real-mail corpora split into their parts, and
each attribution language and part kind with a case it splits and one it keeps."""

from __future__ import annotations

from pathlib import Path

import pytest

from pmsearch.services.searcher.ingest.parser import parse_message
from pmsearch.shared.mail_parts import Kind, author_of, quotes_where, searchable_text, split_mail

MAIL = Path(__file__).resolve().parents[2] / "evals" / "real" / "mail"


def _parts(path: str):
    raw = (MAIL / path).read_bytes()
    return split_mail(parse_message(raw, folder=Path(path).parent.name).body_text).parts


def _kind_of(parts, needle: str) -> Kind:
    found = [p.kind for p in parts if needle in p.text]
    assert found, f"{needle!r} is in no part"
    return found[0]


# (message, text, the part it belongs to, the author that part names)
REAL = [
    # English, inline answers between quotes, list mail
    ("de/schafkopf/INBOX/037.eml", "On Monday 07 March 2005 19:59, Michael Höchstetter wrote:", Kind.ATTRIBUTION, "Michael Höchstetter"),
    ("de/schafkopf/INBOX/037.eml", "> das 2. Paket hab ich nicht mit alien gemacht.", Kind.QUOTED, "Michael Höchstetter"),
    ("de/schafkopf/INBOX/037.eml", "Ich schätze am Samstag den 27. Februar.", Kind.OWN, ""),
    ("de/schafkopf/INBOX/037.eml", "Jupp, scheint so:", Kind.OWN, ""),
    ("de/schafkopf/INBOX/037.eml", "Frank S. Thomas", Kind.SIGNATURE, ""),
    # "X <x@y> writes:" in front of a quote
    ("lists/docs/INBOX/022.eml", "Alejandro Colomar <alx.manpages@gmail.com> writes:", Kind.ATTRIBUTION, "Alejandro Colomar"),
    ("lists/docs/INBOX/022.eml", "> I happen to be working on replacing getpass(3) in shadow-utils.", Kind.QUOTED, "Alejandro Colomar"),
    ("lists/docs/INBOX/022.eml", "I understand that in an old thread last fall", Kind.OWN, ""),
    # French: "Le … a écrit :" over a tab-indented quote
    ("fr/vitam/INBOX/001.eml", "Le 2017-01-06 16:12, CASIMIRIUS Thierry a écrit :", Kind.ATTRIBUTION, "CASIMIRIUS Thierry"),
    ("fr/vitam/INBOX/001.eml", "Nous avons bien pris en compte vos précisions", Kind.QUOTED, "CASIMIRIUS Thierry"),
    ("fr/vitam/INBOX/001.eml", "Suite à votre question, nous ne pouvons pas", Kind.OWN, ""),
    # French Outlook header block "De : … Envoyé : … À : … Objet :"
    ("fr/vitam/INBOX/009.eml", "Envoyé : mardi 3 janvier 2017 14:07", Kind.ATTRIBUTION, "CASIMIRIUS Thierry IDEF MINDEF"),
    ("fr/vitam/INBOX/009.eml", "En PJ, le dernier fichier des anomalies.", Kind.QUOTED, "CASIMIRIUS Thierry IDEF MINDEF"),
    ("fr/vitam/INBOX/009.eml", "Merci !", Kind.OWN, ""),
    # German: "Am … schrieb X:"
    ("de/schafkopf/INBOX/090.eml", "Am Saturday 02 June 2007 schrieb Stefan Diehm:", Kind.ATTRIBUTION, "Stefan Diehm"),
    ("de/schafkopf/INBOX/090.eml", "> servus Liste!", Kind.QUOTED, "Stefan Diehm"),
    ("de/schafkopf/INBOX/090.eml", "Vielen Dank für Deine Mail!", Kind.OWN, ""),
    # German Outlook: "-----Ursprüngliche Nachricht-----" and a wrapped "Von:" block
    ("de/teamfound/INBOX/026.eml", "-----Ursprüngliche Nachricht-----", Kind.ATTRIBUTION, None),
    ("de/teamfound/INBOX/026.eml", "das hoert sich gut an", Kind.QUOTED, None),
    ("de/teamfound/INBOX/026.eml", "Morgen 12:00 ist ok!", Kind.OWN, ""),
    # A git patch: prose, diffstat, diff, git's version under "-- "
    ("lists/docs/INBOX/014.eml", "Suggest readpassphrase(3bsd) as an alternative.", Kind.OWN, ""),
    ("lists/docs/INBOX/014.eml", "man3/getpass.3 | 9 +++++++--", Kind.DIFFSTAT, ""),
    ("lists/docs/INBOX/014.eml", "1 file changed, 7 insertions(+), 2 deletions(-)", Kind.DIFFSTAT, ""),
    ("lists/docs/INBOX/014.eml", "diff --git a/man3/getpass.3 b/man3/getpass.3", Kind.PATCH, ""),
    ("lists/docs/INBOX/014.eml", "2.33.1", Kind.SIGNATURE, ""),
    # A b4 cover letter: the shortlog, its diffstat and the commit the series applies to
    ("lists/kernel/Archive/013.eml", "Deassert the reset if it's available.", Kind.OWN, ""),
    ("lists/kernel/Archive/013.eml", "Yang Xiwen (2):", Kind.DIFFSTAT, ""),
    ("lists/kernel/Archive/013.eml", "watchdog: sp805_wdt: deassert the reset if available", Kind.DIFFSTAT, ""),
    ("lists/kernel/Archive/013.eml", "base-commit: 8d3dea210042f54b952b481838c1e7dfc4ec751d", Kind.DIFFSTAT, ""),
    # A diffstat under a note after "---"
    ("lists/kernel/INBOX/011.eml", "Not sure if this is stable material", Kind.OWN, ""),
    ("lists/kernel/INBOX/011.eml", "drivers/watchdog/wdat_wdt.c  | 2 +-", Kind.DIFFSTAT, ""),
    # Thunderbird's French attribution, a name alone, over a quote without marks; an
    # office's address block under "Cordialement"
    ("fr/vitam/INBOX/084.eml", "DANYACH-DESCHAMPS Myriam a écrit :", Kind.ATTRIBUTION, "DANYACH-DESCHAMPS Myriam"),
    ("fr/vitam/INBOX/084.eml", "Bilatérale Mindef/VITAM - Ateliers techniques VITAM", Kind.QUOTED, "DANYACH-DESCHAMPS Myriam"),
    ("fr/vitam/INBOX/084.eml", "Directeur de programme/Program head manager", Kind.SIGNATURE, ""),
    # Lotus Notes forward with a banner wrapped over two lines
    ("corp/allen/INBOX/007.eml", "Forwarded by Phillip K Allen/HOU/ECT on 12/12/2000", Kind.FORWARDED, "Leslie Lawner"),
    ("corp/allen/INBOX/007.eml", "I read these points and they definitely need some touch up.", Kind.OWN, ""),
    # A reply on top of a ">"-quoted Outlook original
    ("corp/allen/INBOX/004.eml", "I WILL TALK TO LUTZ ABOUT HIS SHARE OF THE LEGAL BILLS.", Kind.OWN, ""),
    ("corp/allen/INBOX/004.eml", "> -----Original Message-----", Kind.QUOTED, ""),
]


@pytest.mark.parametrize("path,text,kind,author", REAL, ids=[f"{p}:{t[:24]}" for p, t, _, _ in REAL])
def test_real_messages_split_into_their_parts(path, text, kind, author):
    parts = _parts(path)
    part = next((p for p in parts if text in p.text), None)
    assert part is not None, f"{text!r} is in no part of {path}"
    assert part.kind is kind
    if author is not None:
        assert part.author == author


def test_a_list_reply_keeps_its_own_lines_between_quotes_and_none_of_the_quotes():
    parts = _parts("de/schafkopf/INBOX/037.eml")
    own = "\n".join(p.text for p in parts if p.kind is Kind.OWN)
    assert "Ich schätze am Samstag" in own and "Jupp, scheint so" in own
    assert ">" not in own and "alien" not in own


SPLIT = [
    ("en", "Sure.\n\nOn Mon, 11 Mar 2024 at 17:05, Dana Weber <dana@x.example> wrote:\n> The photos are attached.\n", "Dana Weber"),
    ("en_wrapped", "Sure.\n\nOn Tue, 16 Nov 2010 06:51:17 -0800 Joe Perches <joe@perches.com>\nwrote:\n> The photos.\n", "Joe Perches"),
    ("fr", "D'accord.\n\nLe 3 mars 2020 à 10:12, Jean Dupont <jean@x.example> a écrit :\n> Les photos.\n", "Jean Dupont"),
    ("de", "Gut.\n\nAm 03.03.2020 um 10:12 schrieb Hans Müller:\n> Die Fotos.\n", "Hans Müller"),
    ("de_unquoted", "Gut.\n\nAm 03.03.2020 um 10:12 schrieb Hans Müller:\nDie Fotos anbei.\n", "Hans Müller"),
    ("mutt", "Sure.\n\n* Ingo Molnar <mingo@elte.hu> [2010-11-16 10:00]:\n> The photos.\n", "Ingo Molnar"),
    ("outlook", "Sure.\n\n-----Original Message-----\nFrom: Bounine, Alexandre\n"
                "Sent: Thursday, August 05, 2010 2:00 PM\nTo: Joe\nSubject: photos\n\nThe photos.\n", "Bounine Alexandre"),
]


@pytest.mark.parametrize("body,author", [(b, a) for _, b, a in SPLIT], ids=[i for i, _, _ in SPLIT])
def test_each_attribution_language_is_split_from_the_reply(body, author):
    parts = split_mail(body).parts
    assert parts[0] == parts[0].__class__(Kind.OWN, body.split("\n", 1)[0])
    assert [p.kind for p in parts[1:]] == [Kind.ATTRIBUTION, Kind.QUOTED]
    assert parts[1].author == parts[2].author == author
    assert "hoto" not in split_mail(body).own and "Foto" not in split_mail(body).own


KEPT = [
    ("wrote_without_quote", "As I wrote: the fix is in v3.\nNothing else changed.\n"),
    ("french_sentence", "Le comité a écrit : nous validons la version 2.\n"),
    ("german_sentence", "Er schrieb: das passt so.\n"),
    ("dashes_not_a_diffstat", "Agenda\n---\nItem one is the budget.\n"),
    ("minus_line_not_a_patch", "--- see below ---\nThe budget is fine.\n"),
    ("footer_words_in_a_sentence", "Please send the v3 to the mailing list at linux-watchdog@vger.kernel.org.\n"
                                   "I will review it there on Monday.\nThe binding needs a second look too.\n"
                                   "And the DT schema.\nAnd the example.\n"),
    ("thanks_mid_message", "Thanks!\n\nThe budget is fine, and the plan too.\nWe meet on Monday at ten.\nBring the slides.\n"
                           "And the minutes.\nAnd the coffee.\nAnd the keys.\nAnd the badge.\n"),
]


@pytest.mark.parametrize("body", [b for _, b in KEPT], ids=[i for i, _ in KEPT])
def test_lines_that_only_look_like_mail_furniture_stay_the_senders_own(body):
    assert [p.kind for p in split_mail(body).parts] == [Kind.OWN]


def test_a_list_footer_is_not_the_senders_words():
    body = ("The release is on Friday.\n\n_______________________________________________\n"
            "Teamfound-development mailing list\nhttp://lists.berlios.de/mailman/listinfo/teamfound-development\n")
    assert split_mail(body).own == "The release is on Friday."
    assert split_mail(body).parts[-1].kind is Kind.FOOTER


def test_a_signature_after_the_delimiter_is_not_the_senders_words():
    mail = split_mail("The release is on Friday.\n-- \nSabine Roth\n+49 40 8830 1456\n")
    assert mail.own == "The release is on Friday."
    assert mail.parts[-1].kind is Kind.SIGNATURE


def test_a_forwarded_message_names_its_author_and_is_not_the_forwarders_words():
    mail = split_mail("FYI, see below.\n\n---------- Forwarded message ---------\nFrom: Tom Richter <tom@x.example>\n"
                      "Date: Mon, 4 Mar 2024\nSubject: Budget\n\nThe budget is approved.\n")
    assert mail.own == "FYI, see below."
    assert mail.parts[-1].kind is Kind.FORWARDED and mail.parts[-1].author == "Tom Richter"


def test_a_patch_is_searchable_but_not_the_senders_prose():
    mail = split_mail(
        "Fix the race.\n\nSigned-off-by: A B <a@b.example>\n---\n drivers/wdt.c | 2 +-\n"
        " 1 file changed, 1 insertion(+), 1 deletion(-)\n\n"
        "diff --git a/drivers/wdt.c b/drivers/wdt.c\n--- a/drivers/wdt.c\n+++ b/drivers/wdt.c\n"
        "@@ -1,3 +1,3 @@ static int wdt_start(void)\n-\tlock();\n+\tspin_lock();\n"
    )
    assert "Fix the race." in mail.own
    assert "spin_lock" not in mail.own and "drivers/wdt.c |" not in mail.own
    assert "wdt_start" in mail.searchable and "spin_lock" in mail.searchable


def test_pgp_armour_is_not_the_senders_words():
    mail = split_mail("-----BEGIN PGP SIGNED MESSAGE-----\nHash: SHA1\n\nThe release is on Friday.\n"
                      "-----BEGIN PGP SIGNATURE-----\nVersion: GnuPG v1\n\niD8DBQFC\n-----END PGP SIGNATURE-----\n")
    assert mail.own == "The release is on Friday."


@pytest.mark.parametrize(
    "line,name",
    [
        ("On Tue, Nov 16, 2010 at 6:51 AM, Joe Perches <joe@x.example> wrote:", "Joe Perches"),
        ("Le 03/03/2020 à 10:12, Jean Dupont a écrit :", "Jean Dupont"),
        ("Am 03.03.2020 um 10:12 schrieb Hans Müller:", "Hans Müller"),
        ("From: Leslie Lawner@ENRON on 12/12/2000 11:56 AM CST\nTo: Christi", "Leslie Lawner"),
    ],
)
def test_the_author_is_read_off_the_attribution(line, name):
    assert author_of(line) == name


@pytest.mark.parametrize(
    "text,searchable",
    [
        ("Thanks, booked.\n\nOn Tue, 12 Mar 2024 at 16:40, Alice <a@x.example> wrote:\n> Can you book it?", "Thanks, booked."),
        ("Danke!\nAm 3. April 2024 schrieb Jürgen Hüber:\n> Hallo", "Danke!"),
        ("> only a quote", "> only a quote"),  # nothing else to find it by
        ("a > b is fine\nOn time delivery wrote records", "a > b is fine\nOn time delivery wrote records"),
    ],
    ids=["reply", "german_reply", "all_quote", "look_alikes"],
)
def test_a_piece_of_a_body_is_found_by_its_senders_words(text, searchable):
    assert searchable_text(text) == searchable


def test_kept_quoted_lines_lose_their_markers_and_keep_their_offsets():
    body = "Thanks.\n\nOn Monday, Anna wrote:\n> The payment is due\n>> on 5 May.\nBest, Tom"
    kept = quotes_where(body, lambda quote: True)
    assert len(kept) == len(body)
    assert "The payment is due" in kept and "on 5 May." in kept and ">" not in kept
    assert kept.index("on 5 May.") == body.index("on 5 May.")
