"""Reply text to validated object: reasoning stripped, JSON found, strict validation."""

from __future__ import annotations

import pytest

from pmsearch.shared.llm.parsing import OutputError, extract_json_object, parse_structured, strip_reasoning
from tests.shared.llm.helpers import Pick


@pytest.mark.parametrize(
    "text",
    [
        '{"tool": "search", "limit": 3}',
        '  {"tool": "search", "limit": 3}\n',
        '```json\n{"tool": "search", "limit": 3}\n```',
        'Sure! Here is the plan:\n{"tool": "search", "limit": 3}\nHope this helps.',
        '<think>the user wants {"tool": "x"} maybe</think>\n{"tool": "search", "limit": 3}',
        'reasoning without an opening tag</think>{"tool": "search", "limit": 3}',
        '<THINK>a</THINK><think>b</think>```\n{"tool": "search", "limit": 3}```',
        '{"tool": "search", "limit": 3} and then {"tool": "other", "limit": 1}',
    ],
)
def test_accepts_the_object_wherever_it_sits(text):
    assert parse_structured(text, Pick) == Pick(tool="search", limit=3)


def test_strip_reasoning():
    assert strip_reasoning("<think>\nplan {x}\n</think>\n\nanswer") == "answer"
    assert strip_reasoning("no tags") == "no tags"


def test_extract_skips_non_objects_and_broken_starts():
    assert extract_json_object('[1, 2] { broken {"a": {"b": 1}} tail') == '{"a": {"b": 1}}'
    assert extract_json_object("nothing here") is None


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("", "empty"),
        ("<think>only thoughts</think>", "empty"),
        ("no json at all", "no JSON object"),
        ('{"tool": "search"}', "limit"),
        ('{"tool": "search", "limit": 3, "scope": "all tenants"}', "scope"),  # extra forbidden
        ('{"tool": "search", "limit": "3"}', "limit"),  # strict: no string-to-int coercion
    ],
)
def test_rejects_with_feedback_the_model_can_use(text, fragment):
    with pytest.raises(OutputError) as info:
        parse_structured(text, Pick)
    assert fragment in info.value.feedback
