"""What code may copy from a message into an answer (services/answerer/statements.py)."""

from __future__ import annotations

import pytest

from pmsearch.services.answerer.statements import quotable


@pytest.mark.parametrize(
    "sentence",
    [
        "$ make -C tools/testing check Signed-off-by: Jeff King <peff@peff.net>",
        "Cc: Junio C Hamano <gitster@pobox.com>",
        "Reviewed-by: Anna Weber <anna@example.org>",
        "foo.c | 2 +-",
        "Thanks, Peff",
    ],
    ids=["shell_and_trailer", "cc", "reviewed_by", "diffstat", "sign_off"],
)
def test_a_line_that_is_not_the_senders_prose_is_never_added_as_a_statement(sentence):
    assert not quotable(sentence)


def test_a_sentence_of_prose_may_be_added_as_a_statement():
    assert quotable("The fix moves the reset into probe, as Linus asked.")
