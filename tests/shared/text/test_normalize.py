"""Normalisation for quote matching and its map back to the source."""

from __future__ import annotations

import pytest

from pmsearch.shared.text.normalize import find_phrase, normalize, normalize_with_map

SAME = {
    "case": ("The Claim", "the claim"),
    "curly double quotes": ("“x”", '"x"'),
    "guillemets": ("«x»", '"x"'),
    "curly apostrophe": ("we’ll", "we'll"),
    "modifier apostrophe": ("weʼll", "we'll"),
    "en dash": ("a–b", "a-b"),
    "em dash": ("a—b", "a-b"),
    "minus sign": ("a−b", "a-b"),
    "ellipsis": ("wait…", "wait..."),
    "no-break space": ("a\u00a0b", "a b"),
    "narrow no-break space": ("10\u202f000", "10 000"),
    "soft hyphen": ("pay\u00adment", "payment"),
    "zero-width space": ("pay\u200bment", "payment"),
    "zero-width joiner": ("pay\u200dment", "payment"),
    "bom": ("\ufeffpayment", "payment"),
    "line wrap": ("claim is\n  accepted", "claim is accepted"),
    "tabs and crlf": ("a\t\r\nb", "a b"),
    "html named entity": ("Tom &amp; Anna", "tom & anna"),
    "html numeric entity": ("it&#8217;s", "it's"),
    "html hex entity": ("&#x201C;x&#x201D;", '"x"'),
    "nbsp entity": ("a&nbsp;b", "a b"),
    "unknown entity stays": ("&bogus;", "&bogus;"),
    "nfkc full width": ("Ｇｏｌｆ", "golf"),
    "nfkc ligature": ("ﬁle", "file"),
    "composed vs decomposed": ("re\u0301sume\u0301", "résumé"),
    "sharp s": ("STRASSE", "straße"),
    "leading and trailing space": ("  x  ", "x"),
    "space around invisible": ("a \u200b b", "a b"),
}


@pytest.mark.parametrize("a,b", SAME.values(), ids=SAME.keys())
def test_equivalent(a: str, b: str) -> None:
    assert normalize(a) == normalize(b)


@pytest.mark.parametrize("a,b", [("claim", "claims"), ("a-b", "a b"), ("1,200", "1.200"), ("e", "é")])
def test_different(a: str, b: str) -> None:
    assert normalize(a) != normalize(b)


def test_offsets_map_back_to_the_source() -> None:
    source = "Dear Tom,\n\n“We’ll send the pay\u00adment\ntoday” &amp; more"
    norm = normalize_with_map(source)
    start, end = norm.source_span(*find_phrase(norm.text, normalize("we'll send the payment today")))
    assert source[start:end] == "We’ll send the pay\u00adment\ntoday"
    j = norm.text.find("&")
    assert source.__getitem__(slice(*norm.source_span(j, j + 1))) == "&amp;"


def test_whole_words_only() -> None:
    assert find_phrase(normalize("this is unacceptable"), "acceptable") is None
    assert find_phrase(normalize("acceptable, they said"), "acceptable") == (0, 10)
    assert find_phrase(normalize("costs €1,200.50."), normalize("€1,200.50")) is not None
    assert find_phrase("accept accepted", "accepted") == (7, 15)


def test_one_space_matches_a_run_of_spaces() -> None:
    source = normalize_with_map("the claim is\n\n   accepted").text
    assert find_phrase(source, "claim is accepted") == (4, len(source))
    assert find_phrase(source, "claim is accepted", 5) is None


def test_unspaced_scripts_match_inside_runs() -> None:
    assert find_phrase("保险公司已经接受了索赔", "接受了索赔") is not None
