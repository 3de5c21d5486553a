"""The verifier's sentence splitter, construct by construct."""

from __future__ import annotations

import pytest

from pmsearch.shared.text.sentences import prose_sentences, split_sentences, table_sentences

CASES = {
    "two plain sentences": ("The claim was filed. It was accepted.", ["The claim was filed.", "It was accepted."]),
    "question and exclamation": ("Was it paid? Yes! Done.", ["Was it paid?", "Yes!", "Done."]),
    "interrobang run counts once": ("Paid?! Really.", ["Paid?!", "Really."]),
    "titles": (
        "Mr. Meier and Dr. Jones met Prof. Li. They agreed.",
        ["Mr. Meier and Dr. Jones met Prof. Li.", "They agreed."],
    ),
    "company suffix mid-sentence": (
        "Example Insurance Inc. paid on Monday. Done.",
        ["Example Insurance Inc. paid on Monday.", "Done."],
    ),
    "company suffix ends a sentence": (
        "The payer was Example Insurance Inc. The claim is closed.",
        ["The payer was Example Insurance Inc.", "The claim is closed."],
    ),
    "e.g. and i.e.": (
        "Send proof, e.g. Photos or receipts, i.e. Originals. Then wait.",
        ["Send proof, e.g. Photos or receipts, i.e. Originals.", "Then wait."],
    ),
    "etc. before lower case": ("Photos, receipts etc. were sent. Done.", ["Photos, receipts etc. were sent.", "Done."]),
    "etc. ends a sentence": ("Photos, receipts etc. The rest follows.", ["Photos, receipts etc.", "The rest follows."]),
    "No. before a number": ("Claim No. 4711 was paid. Done.", ["Claim No. 4711 was paid.", "Done."]),
    "No. as an answer": ("The answer was No. They refused.", ["The answer was No.", "They refused."]),
    "vs.": ("Meier vs. Insurer Ltd. was settled.", ["Meier vs. Insurer Ltd. was settled."]),
    "initials": ("J. R. Smith signed it. Done.", ["J. R. Smith signed it.", "Done."]),
    "decimals": ("The rate is 3.5 percent. Done.", ["The rate is 3.5 percent.", "Done."]),
    "amounts": ("They paid €1,200.50 and $3.99. Done.", ["They paid €1,200.50 and $3.99.", "Done."]),
    "amount at sentence end": ("They paid €1,200.50. Then they left.", ["They paid €1,200.50.", "Then they left."]),
    "times": ("We met at 10:30 a.m. on Monday. Done.", ["We met at 10:30 a.m. on Monday.", "Done."]),
    "time ends a sentence": ("We met at 10:30 a.m. The call was short.", ["We met at 10:30 a.m.", "The call was short."]),
    "dates": (
        "Filed on 29.11.2025, paid Nov. 30, 2025 and closed 2025-12-01. Done.",
        ["Filed on 29.11.2025, paid Nov. 30, 2025 and closed 2025-12-01.", "Done."],
    ),
    "urls": (
        "See https://insurer.example/claims/4711.html?x=1.2 for details. Done.",
        ["See https://insurer.example/claims/4711.html?x=1.2 for details.", "Done."],
    ),
    "url at sentence end": (
        "See https://insurer.example/a.b. Then call.",
        ["See https://insurer.example/a.b.", "Then call."],
    ),
    "e-mail addresses": (
        "Write to anna.schmidt@insurer.example. She answers.",
        ["Write to anna.schmidt@insurer.example.", "She answers."],
    ),
    "ellipsis before lower case": ("He waited... and then left. Done.", ["He waited... and then left.", "Done."]),
    "ellipsis ends a sentence": ("He waited… Nothing came.", ["He waited…", "Nothing came."]),
    "quote ends a sentence": (
        'She said "The claim is accepted." Then she hung up.',
        ['She said "The claim is accepted."', "Then she hung up."],
    ),
    "typographic quote ends a sentence": (
        "She said “It is done.” Then she left.",
        ["She said “It is done.”", "Then she left."],
    ),
    "question inside a quote continues": (
        '"Is it paid?" she asked. Yes.',
        ['"Is it paid?" she asked.', "Yes."],
    ),
    "stops inside a quote do not split": (
        'She wrote "Photo 1 received. Photo 2 missing." and left. Done.',
        ['She wrote "Photo 1 received. Photo 2 missing." and left.', "Done."],
    ),
    "parenthesis ends a sentence": ("(See the invoice.) Then pay.", ["(See the invoice.)", "Then pay."]),
    "stop after a parenthesis": ("It was paid (in full). Done.", ["It was paid (in full).", "Done."]),
    "bullet list": (
        "Findings:\n- The claim was accepted\n- Photos were sent\n* Payment is due\n• Closed",
        ["Findings:", "The claim was accepted", "Photos were sent", "Payment is due", "Closed"],
    ),
    "numbered list": (
        "1. First point. Still first.\n2) Second point\n(3) Third point\na) Fourth",
        ["First point.", "Still first.", "Second point", "Third point", "Fourth"],
    ),
    "heading": ("## Summary\nThe claim was accepted.", ["Summary", "The claim was accepted."]),
    "soft line wrap": ("The claim was\naccepted on Monday. Done.", ["The claim was accepted on Monday.", "Done."]),
    "blank line ends a block": ("The claim was accepted\n\nPhotos were sent", ["The claim was accepted", "Photos were sent"]),
    "windows line breaks": ("One.\r\nTwo.\r\n\r\nThree", ["One.", "Two.", "Three"]),
    "marker after the stop": (
        "The claim was accepted. [m3f9a2c1b0d4e] Photos were sent [m0a1b2c3d4e5f].",
        ["The claim was accepted. [m3f9a2c1b0d4e]", "Photos were sent [m0a1b2c3d4e5f]."],
    ),
    "markers after the stop before lower case": (
        "It was accepted. [m3f9a2c1b0d4e][m0a1b2c3d4e5f] then paid.",
        ["It was accepted. [m3f9a2c1b0d4e][m0a1b2c3d4e5f]", "then paid."],
    ),
    "marker before the stop": (
        "It was accepted [m3f9a2c1b0d4e]. Paid.",
        ["It was accepted [m3f9a2c1b0d4e].", "Paid."],
    ),
    "marker alone on the next line joins": (
        "It was accepted.\n[m3f9a2c1b0d4e]",
        ["It was accepted. [m3f9a2c1b0d4e]"],
    ),
    "ids with dots are not stops": (
        "It was accepted. [<a.b@c.d>] See [msg.1.2]. Done.",
        ["It was accepted. [<a.b@c.d>]", "See [msg.1.2].", "Done."],
    ),
    "cjk stops without spaces": ("索赔已接受。照片已收到！好吗？", ["索赔已接受。", "照片已收到！", "好吗？"]),
    "lower case after a stop stays": ("It costs approx. ten euros. ok then.", ["It costs approx. ten euros. ok then."]),
    "caseless script after a stop": ("Paid. שולם. Done.", ["Paid.", "שולם.", "Done."]),
    "empty text": ("", []),
    "only white space": (" \n\t\n ", []),
    "no terminator": ("just words", ["just words"]),
}


@pytest.mark.parametrize("text,expected", CASES.values(), ids=CASES.keys())
def test_split(text: str, expected: list[str]) -> None:
    assert [s.text for s in split_sentences(text)] == expected


def test_spans_point_into_the_text() -> None:
    text = "Intro line.\n- First [m1].\n- Second. [m2]\n\nLast one"
    for sentence in split_sentences(text):
        raw = text[sentence.start : sentence.end]
        assert " ".join(raw.split()) == sentence.text


def test_mail_prose_joins_wrapped_lines_and_keeps_list_items_apart() -> None:
    text = "The training is on\n4 April. Please confirm.\n- Forklift certificates renewed\n- Two pickers start Monday"
    assert prose_sentences(text) == [
        "The training is on 4 April.", "Please confirm.", "- Forklift certificates renewed",
        "- Two pickers start Monday",
    ]


def test_a_sheets_row_mark_is_no_sentence_and_the_table_goes_on_under_its_header() -> None:
    text = "Route | Rate\nLyon | 980\n(row 9)\nPrague | 1180"
    assert table_sentences("rates.xlsx", text) == [
        "Route | Rate", "Route | Rate ... Lyon | 980", "Route | Rate ... Prague | 1180",
    ]


def test_a_table_row_is_a_sentence_with_its_header() -> None:
    text = "KPI | March | February\nOn-time delivery | 94.1% | 95.6%\n\nAll figures are provisional."
    assert table_sentences("kpis.md", text) == [
        "KPI | March | February", "KPI | March | February ... On-time delivery | 94.1% | 95.6%",
        "All figures are provisional.",
    ]
    assert table_sentences("kpis.csv", "kpi,march\nontime,94.1%") == ["kpi,march", "kpi,march ... ontime,94.1%"]
