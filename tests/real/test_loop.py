"""ControlLoop on an injected clock: the fixed grid, missed deadlines, latency statistics."""

from __future__ import annotations

import math

import pytest

from robo_rl.real.loop import ControlLoop

from .conftest import FakeClock

PERIOD = 0.01


def test_steps_run_on_a_fixed_grid(clock: FakeClock) -> None:
    starts: list[float] = []

    def step() -> None:
        starts.append(clock.now)
        clock.advance(0.003)  # compute time is absorbed by the sleep, not added to the period

    stats = ControlLoop(PERIOD, step, clock, clock.sleep).run(ticks=5)
    assert starts == pytest.approx([100.0 + k * PERIOD for k in range(5)])
    assert stats.ticks == 5 and stats.missed_deadlines == 0
    assert stats.latency_count == 0 and math.isnan(stats.latency_mean)


def test_overrunning_step_skips_and_counts_missed_ticks(clock: FakeClock) -> None:
    starts: list[float] = []
    durations = iter([0.002, 0.025, 0.002, 0.012, 0.002])

    def step() -> None:
        starts.append(clock.now)
        clock.advance(next(durations))

    stats = ControlLoop(PERIOD, step, clock, clock.sleep).run(ticks=5)
    # Tick 1 runs 100.01 → 100.035: ticks at 100.02 and 100.03 are missed; tick 3 at 100.05 runs to 100.062,
    # missing 100.06.
    assert [round(s - 100.0, 6) for s in starts] == [0.0, 0.01, 0.04, 0.05, 0.07]
    assert stats.missed_deadlines == 3


def test_latency_statistics(clock: FakeClock) -> None:
    latencies = iter([0.001, 0.003, None, 0.002])
    stats = ControlLoop(PERIOD, lambda: next(latencies), clock, clock.sleep).run(ticks=4)
    assert stats.latency_count == 3
    assert stats.latency_mean == pytest.approx(0.002)
    assert stats.latency_max == pytest.approx(0.003)
    assert stats.latency_p99 == pytest.approx(0.00298)


def test_should_stop_ends_the_loop(clock: FakeClock) -> None:
    calls: list[int] = []
    stats = ControlLoop(PERIOD, lambda: calls.append(1), clock, clock.sleep).run(should_stop=lambda: len(calls) >= 7)
    assert stats.ticks == 7


def test_period_must_be_positive(clock: FakeClock) -> None:
    with pytest.raises(ValueError, match="period: must be > 0, got -1"):
        ControlLoop(-1, lambda: None, clock, clock.sleep)


def test_default_clock_runs_in_real_time() -> None:
    stats = ControlLoop(0.002, lambda: None).run(ticks=5)
    assert stats.ticks == 5
