"""Properties of verification over generated text (hypothesis)."""

from __future__ import annotations

import string

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from pmsearch.services.verifier.decide import decide
from pmsearch.services.verifier.service import verify
from pmsearch.shared.mail_parts import Kind, blank_except
from pmsearch.shared.messages import Draft, DraftSentence, EvidenceMessage
from pmsearch.shared.text.normalize import collapse, find_phrase, normalize, normalize_with_map
from pmsearch.shared.text.quotes import DOUBLE_PAIRS
from pmsearch.shared.text.sentences import split_sentences
from tests.services.verifier.factory import M1, M2, message, request

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# Words of any script, without white space, control or mark characters, double quotes
# (the quote is wrapped in them) or square brackets (they could form a citation marker).
_QUOTE_MARKS = "".join(DOUBLE_PAIRS) + "".join(v for v in DOUBLE_PAIRS.values())
word = st.text(
    alphabet=st.characters(
        exclude_categories=("Z", "C", "M"), exclude_characters=_QUOTE_MARKS + "[]"
    ),
    min_size=1,
    max_size=8,
)
letters_word = st.text(
    alphabet=st.characters(categories=("Lu", "Ll", "Lo")), min_size=1, max_size=8
)
ascii_word = st.text(alphabet=string.ascii_lowercase[:6], min_size=1, max_size=5)


def parts_of(msg: EvidenceMessage) -> dict[str, str]:
    parts = {"body": msg.body, "subject": msg.subject}
    parts.update({f"attachment:{a.name}": a.text for a in msg.attachments})
    return parts


def quoted(words: list[str], data: st.DataObject, min_words: int = 1) -> tuple[str, str]:
    """A source made of ``words`` and a quote of whole consecutive words from it.

    The source must read as the sender's own words: generated text can start with ``>``
    or form an attribution line, and quoted mail is not the sender's to be quoted by.
    """
    assume(blank_except(" ".join(words), Kind.OWN) == " ".join(words))
    start = data.draw(st.integers(0, len(words) - min_words))
    end = data.draw(st.integers(start + min_words, len(words)))
    return " ".join(words), " ".join(words[start:end])


@SETTINGS
@given(words=st.lists(word, min_size=1, max_size=25), data=st.data())
def test_quote_taken_from_the_cited_source_passes(words: list[str], data: st.DataObject) -> None:
    body, quote = quoted(words, data)
    evidence = {M1: message(M1, body)}
    verdict = verify(Draft(text=f'Anna wrote "{quote}" [{M1}].'), evidence)
    assert len(verdict.kept) == 1, verdict.removed
    (citation,) = verdict.kept[0].citations
    excerpt = citation.excerpt
    assert parts_of(evidence[M1])[excerpt.part][excerpt.start : excerpt.end] == excerpt.text


@SETTINGS
@given(
    words=st.lists(word, min_size=2, max_size=10),
    other=st.lists(word, min_size=1, max_size=10),
    data=st.data(),
)
def test_quote_from_one_of_two_cited_sources_passes(words, other, data) -> None:
    body, quote = quoted(words, data)
    evidence = {M1: message(M1, " ".join(other)), M2: message(M2, body)}
    verdict = verify(Draft(text=f'It says "{quote}" [{M1}, {M2}].'), evidence)
    assert len(verdict.kept) == 1


@SETTINGS
@given(words=st.lists(letters_word, min_size=3, max_size=20), data=st.data())
def test_one_character_changed_to_a_digit_fails(words: list[str], data: st.DataObject) -> None:
    body, quote = quoted(words, data, min_words=3)
    digit = data.draw(st.sampled_from("0123456789"))
    assume(digit not in normalize(body))
    positions = [i for i, ch in enumerate(quote) if not ch.isspace()]
    i = data.draw(st.sampled_from(positions))
    forged = quote[:i] + digit + quote[i + 1 :]
    verdict = verify(Draft(text=f'Anna wrote "{forged}" [{M1}].'), {M1: message(M1, body)})
    assert not verdict.kept
    assert verdict.removed[0].reason == "quote_not_found"


@SETTINGS
@given(words=st.lists(ascii_word, min_size=3, max_size=20), data=st.data())
def test_one_letter_changed_fails(words: list[str], data: st.DataObject) -> None:
    body, quote = quoted(words, data, min_words=3)
    positions = [i for i, ch in enumerate(quote) if not ch.isspace()]
    i = data.draw(st.sampled_from(positions))
    # Another lower-case letter: never a case-only (normalisation-equivalent) change.
    letter = data.draw(st.sampled_from(string.ascii_lowercase).filter(lambda c: c != quote[i]))
    forged = quote[:i] + letter + quote[i + 1 :]
    assume(find_phrase(normalize(body), normalize(forged)) is None)  # not elsewhere in it
    verdict = verify(Draft(text=f'Anna wrote "{forged}" [{M1}].'), {M1: message(M1, body)})
    assert not verdict.kept
    assert verdict.removed[0].reason == "quote_not_found"


noisy = st.lists(
    st.one_of(
        st.text(max_size=20),
        st.sampled_from(
            [f"[{M1}]", f"[{M2}, {M1}]", "[mffffffffffff]", '"', "“", "”", "‘", "’", "'",
             ". ", "! ", "\n", "\n\n- ", "...", "…", "[", "]", "&amp;", "\u00ad", "\u200b",
             "Mr. ", "3.5", "e.g. ", "\u0301", "「", "」"]
        ),
    ),
    max_size=30,
).map("".join)


@SETTINGS
@given(draft=noisy, body=noisy, body2=st.text(), ending=st.sampled_from(["answer", "answer", "degraded"]))
def test_arbitrary_text_never_raises_nor_answers_unverified(draft, body, body2, ending) -> None:
    evidence = {M1: message(M1, body), M2: message(M2, body2, attachments={"a": body})}
    result = decide(request(text=draft, ending=ending), evidence)
    assert (result.outcome == "answered") == (result.answer is not None)
    if result.answer is not None:
        assert result.answer.sentences
        for sentence in result.answer.sentences:
            assert sentence.citations
            for citation in sentence.citations:
                assert citation.message_id in evidence
                ex = citation.excerpt
                assert parts_of(evidence[citation.message_id])[ex.part][ex.start : ex.end] == ex.text


@SETTINGS
@given(
    texts=st.lists(st.text(), max_size=4),
    cites=st.lists(st.sampled_from([M1, M2, "", "x y", "[m1]", "\u0000"]), max_size=3),
    body=st.text(),
)
def test_arbitrary_structured_drafts(texts, cites, body) -> None:
    draft = Draft(sentences=[DraftSentence(text=t, citations=cites) for t in texts])
    result = decide(request(sentences=draft.sentences), {M1: message(M1, body), M2: message(M2, "")})
    assert (result.outcome == "answered") == bool(result.answer and result.answer.sentences)


@SETTINGS
@given(text=st.text(alphabet=st.characters(exclude_categories=())), body=st.text(alphabet=st.characters(exclude_categories=())))
def test_surrogates_and_controls_never_raise(text: str, body: str) -> None:
    verify(Draft(text=text + f" [{M1}]"), {M1: message(M1, body)})


@SETTINGS
@given(text=st.text(), data=st.data())
def test_normalisation_map_stays_inside_the_source(text: str, data: st.DataObject) -> None:
    norm = normalize_with_map(text)
    assert collapse(norm.text) == normalize(text)
    if not norm.text:
        return
    a = data.draw(st.integers(0, len(norm.text) - 1))
    b = data.draw(st.integers(a + 1, len(norm.text)))
    start, end = norm.source_span(a, b)
    assert 0 <= start < end <= len(text)
    assert collapse(norm.text[a:b]) in normalize(text[start:end])
    assert normalize(text[slice(*norm.source_span(0, len(norm.text)))]) == normalize(text)


@SETTINGS
@given(text=noisy)
def test_splitter_spans_are_ordered_and_inside(text: str) -> None:
    last = 0
    for sentence in split_sentences(text):
        assert last <= sentence.start < sentence.end <= len(text)
        assert sentence.text.strip()
        last = sentence.end


# ------------------------------------------------------------- figures and content words

# Plain content words that never combine with a figure next to them (no month names,
# "am"/"pm", units, currency codes, "of").
VOCABULARY = (
    "claim invoice garage photos payment repair policy vehicle customer workshop deadline "
    "transfer bumper adjuster estimate settlement reference"
).split()


def _grouped(n: int, sep: str) -> str:
    digits = str(n)
    head = len(digits) % 3 or 3
    return sep.join([digits[:head]] + [digits[i : i + 3] for i in range(head, len(digits), 3)])


@st.composite
def amounts(draw) -> str:
    """An amount as a mail writes it: grouping style, decimals, currency sign or code."""
    whole = draw(st.integers(0, 9_999_999))
    cents = draw(st.one_of(st.none(), st.integers(0, 99)))
    thousands, decimal = draw(st.sampled_from([(",", "."), (".", ","), ("", "."), ("'", "."), ("\u2009", ",")]))
    number = _grouped(whole, thousands) if thousands else str(whole)
    if cents is not None:
        number += f"{decimal}{cents:02d}"
    before, after = draw(st.sampled_from([("", ""), ("EUR ", ""), ("€", ""), ("$", ""), ("", " EUR"), ("", "%")]))
    return f"{before}{number}{after}"


MONTH_NAMES = "January February March April May June July August September October November December".split()


@st.composite
def dates(draw) -> str:
    year, month, day = draw(st.integers(1990, 2030)), draw(st.integers(1, 12)), draw(st.integers(1, 28))
    name = MONTH_NAMES[month - 1]
    return draw(
        st.sampled_from(
            [
                f"{day} {name} {year}",
                f"{name} {day}, {year}",
                f"{name} {day}",
                f"{day} {name}",
                f"{year}-{month:02d}-{day:02d}",
                f"{day:02d}.{month:02d}.{year}",
                f"{day}/{month}/{year}",
                f"{name} {year}",
            ]
        )
    )


@st.composite
def times(draw) -> str:
    hour, minute = draw(st.integers(0, 23)), draw(st.sampled_from([0, 5, 30, 45]))
    half = "am" if hour < 12 else "pm"
    h12 = hour % 12 or 12
    return draw(st.sampled_from([f"{hour}:{minute:02d}", f"{hour:02d}:{minute:02d}", f"{h12}{half}", f"{h12}:{minute:02d} {half[0]}.m."]))


codes = st.builds(
    lambda prefix, a, b: f"{prefix}-{a}-{b:04d}",
    st.sampled_from(["INV", "CLM", "REF", "inv"]),
    st.integers(2000, 2030),
    st.integers(0, 99999),
)
addresses = st.builds(
    lambda user, host: f"{user}@{host}.example",
    st.text(alphabet=string.ascii_lowercase + ".", min_size=1, max_size=8).filter(
        lambda u: u[0] != "." and u[-1] != "." and ".." not in u
    ),
    st.sampled_from(["insurer", "garage", "mail.shop"]),
)
urls = st.builds(
    lambda scheme, path: f"{scheme}insurer.example/{path}",
    st.sampled_from(["https://", "http://", "www."]),
    st.text(alphabet=string.ascii_lowercase + string.digits + "/-", min_size=1, max_size=12).filter(
        lambda p: not p.startswith("/")
    ),
)
counts = st.integers(0, 10).map(str)
figures_st = st.one_of(amounts(), dates(), times(), codes, addresses, urls, counts)


@SETTINGS
@given(
    pairs=st.lists(st.tuples(st.sampled_from(VOCABULARY), figures_st), min_size=1, max_size=8),
    data=st.data(),
)
def test_words_and_figures_copied_from_the_source_pass(pairs, data) -> None:
    # The source alternates words and figures; the sentence copies some (word, figure)
    # pairs in any order, so no two figures meet in it that did not meet in the source.
    body = " ".join(f"{w} {f}" for w, f in pairs) + "."
    chosen = data.draw(st.lists(st.sampled_from(pairs), min_size=1, max_size=len(pairs)))
    sentence = " ".join(f"{w} {f}" for w, f in chosen)
    # No full stop after the marker: "a.m. [id]." would leave "." as a sentence of its own.
    verdict = verify(Draft(text=f"The {sentence} [{M1}]"), {M1: message(M1, body)})
    assert [r.model_dump() for r in verdict.removed] == []
    assert len(verdict.kept) == 1


@SETTINGS
@given(amount=amounts(), words=st.lists(st.sampled_from(VOCABULARY), min_size=2, max_size=6), data=st.data())
def test_one_digit_of_a_copied_amount_changed_fails(amount: str, words: list[str], data) -> None:
    positions = [i for i, ch in enumerate(amount) if ch.isdigit()]
    i = data.draw(st.sampled_from(positions))
    digit = data.draw(st.sampled_from("0123456789").filter(lambda d: d != amount[i]))
    forged = amount[:i] + digit + amount[i + 1 :]
    source = message(M1, f"The {' '.join(words)} is {amount} in total.")
    source.date = None  # its date's day and year would count as numbers too
    verdict = verify(Draft(text=f"The {' '.join(words)} is {forged} in total [{M1}]."), {M1: source})
    assert not verdict.kept
    assert verdict.removed[0].reason == "figure_not_found"
