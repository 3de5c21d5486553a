"""The reply schema sent to the provider: pydantic's, generated once per model."""

from __future__ import annotations

from pmsearch.shared import prompts
from pmsearch.shared.llm.dialects import schema_of


def test_the_schema_is_a_fresh_copy_each_time():
    model = prompts.answer_model(["P1", "P2"], "AnswerDraft")
    first = schema_of(model)
    assert first == model.model_json_schema()
    first["properties"].clear()  # a caller changing its request body
    assert schema_of(model) == model.model_json_schema()
