"""bench.path: a run's hops from its stream entries."""

from __future__ import annotations

from bench.path import Run, hops
from pmsearch.shared import streams


def test_each_hop_is_named_for_the_stage_that_held_the_run_and_the_model_time_is_left_out():
    run = Run(sent_ms=1000.0, done_ms=1700.0, run_id="r", model_calls=2)
    entries = [(1010, streams.RUNS), (1015, streams.TOOLS), (1050, streams.OBSERVATIONS),
               (1480, streams.ANSWERS), (1490, streams.DRAFTS_FROM_ANSWERER)]
    assert hops(run, entries, latency_ms=200) == [
        ("gateway → runs", 10),
        ("planner → tools", 5),
        ("searcher → observations", 35),
        ("planner → answers", 30),  # 430 ms less two 200 ms calls
        ("answerer → drafts:answerer", 10),
        ("verifier + relay → done", 210),
    ]


def test_a_draft_the_answerer_wrote_itself_has_its_model_call_left_out_there():
    run = Run(sent_ms=0.0, done_ms=300.0, run_id="r", model_calls=1)
    entries = [(5, streams.RUNS), (10, streams.TOOLS), (30, streams.OBSERVATIONS), (40, streams.ANSWERS),
               (260, streams.DRAFTS_FROM_ANSWERER)]
    took = dict(hops(run, entries, latency_ms=200))
    assert took["planner → answers"] == 10 and took["answerer → drafts:answerer"] == 20
