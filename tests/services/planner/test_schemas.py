"""The search round's reply models: built from the ids a run has seen, once per set."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from pmsearch.services.planner.schemas import call_models, search_model


def test_the_same_ids_give_the_same_models_and_other_ids_their_own():
    ids, threads = ["m000000000001", "m000000000002"], ["T1", "T2"]
    calls = call_models(message_ids=ids, thread_ids=threads)
    assert calls == call_models(message_ids=list(ids), thread_ids=list(threads))
    assert search_model(calls) is search_model(list(calls))
    Reply = search_model(call_models(message_ids=ids, thread_ids=["T1"]))
    assert Reply.model_validate({"searches": [{"tool": "read_thread", "arguments": {"thread_id": "T1"}}]})
    with pytest.raises(ValidationError):
        Reply.model_validate({"searches": [{"tool": "read_thread", "arguments": {"thread_id": "T2"}}]})
