"""What a reply quotes, the line that introduces it, a diffstat and a list footer are not
the replying sender's words: quoted or stated from them, a sentence citing the reply is
not kept. The quoted message itself, when cited, supports what it says."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from pmsearch.services.verifier.service import verify
from pmsearch.shared.messages import Draft, DraftSentence
from tests.services.verifier.factory import message

PARENT = message(
    "m-parent",
    "The lock in wdt_start() can go: the timer callback already holds it.\n\nJoe",
    subject="[PATCH v2] watchdog: drop the lock", sender="Joe Perches <joe@perches.example>",
    date=datetime(2010, 11, 16, 14, 51, tzinfo=UTC),
)
REPLY = message(
    "m-reply",
    "On Tue, 16 Nov 2010 06:51:17 -0800 Joe Perches <joe@perches.example>\nwrote:\n"
    "> The lock in wdt_start() can go: the timer callback already holds it.\n\n"
    "No: the callback runs without it on SMP. NAK.\n\n"
    "---\n drivers/watchdog/wdt.c | 12 ++++++------\n 1 file changed, 6 insertions(+), 6 deletions(-)\n\n"
    "-- \nWim Van Sebroeck\n\n_______________________________________________\n"
    "linux-watchdog mailing list\nhttp://lists.example/mailman/listinfo/linux-watchdog\n",
    subject="Re: [PATCH v2] watchdog: drop the lock", sender="Wim Van Sebroeck <wim@iguana.example>",
    date=datetime(2010, 11, 17, 9, 0, tzinfo=UTC),
)
EVIDENCE = {PARENT.message_id: PARENT, REPLY.message_id: REPLY}


def _kept(text: str, *cited: str, question: str = "What did the reviewer say about dropping the lock?") -> bool:
    verdict = verify(Draft(sentences=[DraftSentence(text=text, citations=list(cited))]), EVIDENCE, question=question)
    return bool(verdict.kept)


@pytest.mark.parametrize(
    "text",
    [
        'Wim wrote "On Tue, 16 Nov 2010 06:51:17 -0800 Joe Perches".',
        'The reply says "drivers/watchdog/wdt.c | 12 ++++++------".',
        'The reply says "1 file changed, 6 insertions(+), 6 deletions(-)".',
        'The reply says "linux-watchdog mailing list".',
    ],
    ids=["attribution", "diffstat_line", "diffstat_total", "list_footer"],
)
def test_mail_furniture_quoted_from_a_reply_is_not_kept(text):
    assert not _kept(text, "m-reply")


def test_words_a_reply_quotes_are_not_its_senders():
    assert not _kept('Wim said "the timer callback already holds it".', "m-reply")


def test_the_quoted_message_supports_its_own_words():
    assert _kept('Joe wrote that "the timer callback already holds it".', "m-parent")


def test_the_replys_own_words_are_kept():
    assert _kept('Wim objected: "the callback runs without it on SMP. NAK."', "m-reply")


def test_a_quote_of_a_message_not_in_the_evidence_supports_what_it_says_as_quoted():
    """The mailbox never held Joe's message: the reply's quote is the only copy of it."""
    draft = Draft(sentences=[DraftSentence(text='Joe wrote that "the timer callback already holds it".', citations=["m-reply"])])
    verdict = verify(draft, {REPLY.message_id: REPLY}, question="What did Joe say about the lock?")
    (kept,) = verdict.kept
    (citation,) = kept.citations
    assert citation.excerpt.part == "quoted"
    assert "the timer callback already holds it" in citation.excerpt.text
    assert REPLY.body[citation.excerpt.start : citation.excerpt.end] == citation.excerpt.text


def test_a_quote_of_a_message_in_the_evidence_supports_nothing_in_the_reply():
    draft = Draft(sentences=[DraftSentence(text='Joe wrote that "the timer callback already holds it".', citations=["m-reply"])])
    assert not verify(draft, EVIDENCE, question="What did Joe say about the lock?").kept


def test_every_quoted_sentence_the_passages_show_is_one_the_verifier_finds_as_quoted():
    from pmsearch.services.verifier.sources import Sources
    from pmsearch.shared import passages as P
    from pmsearch.shared.text.quotes import Quote

    unknown = message(
        "m-ping",
        "Ping?\n\nOn 10 Feb, Yang wrote:\n> Hi Michael,\n>\n> Would you please take this patch? The kernel\n"
        "> change has been upstreamed.\n>\n> > Acked-by: Michal Hocko <mhocko@example.org>\n",
        subject="Re: [PATCH v3] move_pages.2: positive return value", sender="Yang Shi <yang@example.org>",
        date=datetime(2020, 3, 10, tzinfo=UTC),
    )
    evidence = {**EVIDENCE, unknown.message_id: unknown}
    shown = P.build("Who acked the move_pages patch and did anyone object to the lock?", list(evidence.values()),
                    budget=10_000)
    quoted = [(p.message_id, text) for p in shown for part, text in p.sentences if part.startswith("quoted")]
    assert quoted, "the quote of a message the mailbox does not hold is shown"
    sources = Sources(evidence)
    for message_id, text in quoted:
        assert sources[message_id].find_quote(Quote(text, 0, len(text)).fragments()) is not None, text
