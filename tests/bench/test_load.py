"""bench.load: what a level's measured CPU allows."""

from __future__ import annotations

from bench.load import cpu_bound


def test_the_overhead_floor_is_the_wall_the_cores_allow_less_the_model_time():
    # 50 clients, 100 ms of CPU a run on 2 cores: at most 20 runs a second, so each
    # client's run takes 2.5 s on average, 0.4 s of it the model's.
    bound = cpu_bound(50, 100.0, 0.4, 2, overheads_ms=(250,))
    assert bound.runs_per_s_max == 20.0
    assert bound.overhead_floor_ms == 2100.0
    assert bound.cores_for_ms == {250: 7.7}  # 50 x 100 ms in 650 ms


def test_a_level_the_cores_can_carry_has_no_floor():
    assert cpu_bound(2, 50.0, 0.4, 2).overhead_floor_ms == 0.0
