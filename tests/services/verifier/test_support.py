"""Unsupported content: stems, content words, and the pure calibration function."""

from __future__ import annotations

import string

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pmsearch.services.verifier.decide import decide
from pmsearch.services.verifier.service import verify
from pmsearch.services.verifier.sources import Sources
from pmsearch.services.verifier.support import unsupported_words
from pmsearch.shared.messages import Draft
from pmsearch.shared.text.normalize import normalize
from pmsearch.shared.text.words import WORD as _WORD
from pmsearch.shared.text.words import stem, stems_of
from tests.services.verifier.factory import M1, M5, M6_BODY, evidence, message, request
from tests.services.verifier.test_properties import SETTINGS


def test_unsupported_words_counts_content_words_only() -> None:
    missing, total = unsupported_words(
        'The email looks good and the insurer accepted everything: "Your receipt for March".',
        [M6_BODY],
    )
    assert missing == ["looks", "good", "insurer", "accepted", "everything"]
    assert total == 7  # + receipt, march; "email" and stop words do not count


def test_unsupported_words_stems_both_sides() -> None:
    missing, total = unsupported_words(
        "The adjusters accepted the repairs quickly", ["The adjuster accepts a repair quick"]
    )
    assert (missing, total) == ([], 4)


def test_unsupported_words_leaves_figures_to_their_own_check() -> None:
    missing, total = unsupported_words(
        "Invoice INV-2024-0173 over EUR 2115.50 is due 3 April 2024 at 10am",
        ["invoice due"],
    )
    assert (missing, total) == ([], 2)


@pytest.mark.parametrize(
    ("sentence", "missing"),
    [
        ("We sent the photos on 2024-03-13 Wed.", []),  # the passage header's form
        ("We sent the photos on Wednesday, 13 March 2024.", []),
        ("We sent the photos on 2024-03-13 Thu.", ["thu"]),  # 13 March 2024 was a Wednesday
        ("We sent the photos on Wednesday, 13 March.", ["wednesday"]),  # no year: no calendar to check
    ],
)
def test_a_weekday_beside_a_dated_figure_is_part_of_it_when_the_date_falls_on_it(sentence, missing) -> None:
    assert unsupported_words(sentence, ["we sent the photos"])[0] == missing


def test_went_for_restates_go_for() -> None:
    assert stem("went") == stem("go")


def test_unsupported_words_uses_the_union_of_sources() -> None:
    assert unsupported_words("photos bumper accepted", ["photos", "bumper accepted"]) == ([], 3)
    assert unsupported_words("photos bumper accepted", ["photos"]) == (["bumper", "accepted"], 3)


def test_threshold_is_a_parameter() -> None:
    draft = Draft(text=f"The insurer suspects fraud and refuses any payment [{M1}].")
    assert not verify(draft, evidence()).kept
    assert verify(draft, evidence(), unsupported_threshold=1.0).kept
    req = request(text=draft.text)
    assert decide(req, evidence()).outcome == "insufficient_evidence"
    assert decide(req, evidence(), unsupported_threshold=1.0).outcome == "answered"


def test_the_question_is_no_free_pass() -> None:
    # The words come from the question; the cited settlement names the Golf claim (so the
    # sentence is on the question's matter) but says nothing of accepting everything.
    req = request(text=f"The insurer accepted everything for the Golf claim [{M5}].")
    req.question = "Did the insurer accept everything for the Golf claim?"
    result = decide(req, evidence())
    assert result.outcome == "insufficient_evidence"
    assert result.trace.removed_sentences[0].reason == "unsupported_claim"


ascii_word = st.text(alphabet=string.ascii_lowercase, min_size=1, max_size=9)


@SETTINGS
@given(
    body=st.lists(st.one_of(ascii_word, st.sampled_from(["photos", "copies", "stopped", "é", "-", "2"])), max_size=30),
    subject=st.lists(ascii_word, max_size=4),
    word=st.one_of(ascii_word, st.sampled_from(["photo", "copy", "stop", "copied", "stopping"])),
)
def test_message_lookup_equals_the_stem_set(body, subject, word) -> None:
    # Source.has_word looks words up without building the message's stem set; the
    # answer must be the one the stem set gives.
    msg = message(M1, " ".join(body), subject=" ".join(subject))
    source = Sources({M1: msg})[M1]
    texts = [msg.body, msg.subject, msg.sender]
    stems = stems_of(t for text in texts for t in _WORD.findall(normalize(text)))
    assert source.has_word(word, stem(word)) is (stem(word) in stems)
