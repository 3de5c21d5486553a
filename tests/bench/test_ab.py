"""bench.ab: which figures of a benchmark's JSON line a comparison reads."""

from __future__ import annotations

from bench.ab import LOAD_FIGURES, figures, with_stack_cpu


def test_a_dotted_path_with_stars_reads_every_matching_number():
    data = {"levels": {"10": {"overhead": {"p95_ms": 180.5, "n": 200}}, "50": {"overhead": {"p95_ms": 1290}}}}
    assert figures(data, "levels.*.overhead.p95_ms") == {"levels.10.overhead.p95_ms": 180.5, "levels.50.overhead.p95_ms": 1290.0}


def test_a_path_that_is_missing_or_not_a_number_reads_nothing():
    data = {"levels": {"10": {"overhead": {"p95_ms": "n/a"}}}, "no_5xx": True}
    assert figures(data, "levels.*.overhead.p95_ms") == {}
    assert figures(data, "no_5xx") == {}
    assert figures(data, "sizes.*.hybrid") == {}


def test_the_stack_cpu_of_a_load_level_leaves_out_the_client_and_the_model():
    data = with_stack_cpu({"levels": {"10": {"cpu_ms_per_run": {"planner": 20.0, "gateway": 10.5, "client": 5.0, "model": 2.0}}}})
    assert figures(data, LOAD_FIGURES[2]) == {"levels.10.stack_cpu_ms_per_run": 30.5}
