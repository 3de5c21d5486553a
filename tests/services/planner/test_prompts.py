"""The planner's follow-up when an answer leaves out what the question asks for."""

from __future__ import annotations

from services.planner.prompts import add_missing


def test_the_request_names_everything_left_out():
    text = add_missing(["time", "place"])
    assert "the time and the place" in text
    assert "unchanged" in text
