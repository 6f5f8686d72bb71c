"""The quadrotor hover preset learns to pass a success gate, and its evaluation flights can be plotted."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
import torch

from robo_rl.build import build_runner
from robo_rl.experiment import quadrotor_hover_ppo
from robo_rl.runners.flight_plot import plot_flights, record_positions
from robo_rl.sim import make


@pytest.mark.slow
def test_hover_success_rate_rises_past_the_gate() -> None:
    base = quadrotor_hover_ppo()
    runner_cfg = replace(base.runner, max_iterations=150, eval_episodes=300, target_success_rate=0.9)
    runner = build_runner(replace(base, runner=runner_cfg), make)
    first = runner.evaluate().success_rate
    result = runner.learn()
    assert first is not None and first < 0.1  # an untrained policy does not hover
    assert result.reached_target and result.final_eval is not None
    assert result.final_eval.success_rate is not None and result.final_eval.success_rate >= 0.9


def test_flight_recording_stops_each_episode_at_its_end(tmp_path: Path) -> None:
    still = {"init_velocity_range": 0.0, "init_attitude_range": 0.0, "init_angular_velocity_range": 0.0}
    env = make("quadrotor/hover", num_envs=3, episode_length=0.05, **still)

    def fall(obs: torch.Tensor) -> torch.Tensor:
        return -torch.ones(obs.shape[0], 4)  # motors at minimum: the quad drops

    positions = record_positions(env, fall, seed=0)
    assert positions.shape == (6, 3, 3)  # reset obs + 5 steps of 0.01 s
    assert not torch.isnan(positions).any()
    assert bool((positions[-1, :, 2] < positions[0, :, 2]).all())  # z error decreases while falling
    plot_flights(positions, tmp_path / "flights.png", "falling")
    assert (tmp_path / "flights.png").stat().st_size > 10_000


def test_flight_recording_needs_a_position_error() -> None:
    with pytest.raises(ValueError, match="position_error_x"):
        record_positions(make("pendulum", num_envs=1), lambda obs: torch.zeros(1, 1), seed=0)
