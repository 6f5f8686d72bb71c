"""The quadrotor hover preset learns to pass a success gate, and its evaluation flights can be plotted."""

from __future__ import annotations

import json
from pathlib import Path

import onnx
import pytest
import torch
import yaml

from robo_rl.api.configs import preset
from robo_rl.build import build_runner
from robo_rl.config import apply_overrides
from robo_rl.runners.flight_plot import plot_flights, record_positions
from robo_rl.sim import make

HOVER_ITERATION_BOUND = 100
"""Iterations within which the preset must pass its gate: seeds 0-4 took 31-43 at issue 46 (docs/BENCHMARKS.md),
the preset before it 109 on seed 0."""


@pytest.mark.slow
def test_hover_preset_passes_its_gate_within_an_iteration_bound(trained_hover_run: Path) -> None:
    """The preset, trained in the shared session run (seed 0, as the preset says), starts from a policy that does not
    hover (its first pre-check stops at its first crashes, certain to fail, and no evaluation follows), and stops
    within `HOVER_ITERATION_BOUND` iterations at an evaluation of 1000 flights past its target (>= 97 %, above the
    95 % gate), whose policy is the run's best."""
    rows = [json.loads(line) for line in (trained_hover_run / "metrics.jsonl").read_text().splitlines()]
    first = rows[1]  # iteration 2, the first pre-check
    assert first["iteration"] == 2 and "eval_precheck_success_rate" not in first
    assert first.get("eval_success_rate") is None
    evaluations = [row["eval_success_rate"] for row in rows if row.get("eval_success_rate") is not None]
    loop = yaml.safe_load((trained_hover_run / "config.yaml").read_text())["runner"]["loop"]
    assert loop["target_success_rate"] >= 0.97 and loop["eval_episodes"] == 1000
    assert evaluations[-1] >= loop["target_success_rate"]
    assert len(rows) <= HOVER_ITERATION_BOUND
    assert (trained_hover_run / "checkpoints" / "best.pt").is_file()


X500_HOVER_ITERATION_BOUND = 150
"""Iterations within which `quadrotor_hover_x500_ppo` must pass its gate on seed 0: seeds 0-2 took 26, 42 and 58 at
issue 47 (the preset's docstring)."""


@pytest.mark.slow
def test_x500_hover_preset_passes_its_gate_and_records_its_frame(trained_x500_hover_run: Path) -> None:
    """The X500 preset (the hover preset on frame px4_x500 in the ctbr action mode), trained in the shared session run
    (seed 0), stops within `X500_HOVER_ITERATION_BOUND` iterations at an evaluation of 1000 flights past its target
    (>= 97 %, above the 95 % gate) on the X500, and its exported policy records that frame and action mode in
    `robo_rl.task_config`, which the quadrotor_px4 profile checks (robo_rl.real.airframe)."""
    rows = [json.loads(line) for line in (trained_x500_hover_run / "metrics.jsonl").read_text().splitlines()]
    evaluations = [row["eval_success_rate"] for row in rows if row.get("eval_success_rate") is not None]
    config = yaml.safe_load((trained_x500_hover_run / "config.yaml").read_text())
    loop = config["runner"]["loop"]
    assert loop["target_success_rate"] >= 0.97 and loop["eval_episodes"] == 1000
    assert evaluations[-1] >= loop["target_success_rate"] and len(rows) <= X500_HOVER_ITERATION_BOUND
    assert (config["task"]["config"]["frame"], config["task"]["config"]["action_mode"]) == ("px4_x500", "ctbr")
    props = {p.key: p.value for p in onnx.load(str(trained_x500_hover_run / "policy.onnx")).metadata_props}
    recorded = json.loads(props["robo_rl.task_config"])
    assert (recorded["frame"], recorded["action_mode"]) == ("px4_x500", "ctbr")
    assert recorded["position_integral_limit"] == 0.5


TD3_HOVER_ITERATION_BOUND = 8_000
"""Iterations (of 256 env steps and 8 updates each) within which `quadrotor_hover_td3` must pass its gate on seed 0:
it took 4,400 at issue 46 (seed 1 too: the preset's docstring); the bound leaves room for other arithmetic."""


@pytest.mark.slow
def test_td3_hover_preset_passes_its_gate_within_an_iteration_bound() -> None:
    """`quadrotor_hover_td3` (seed 0) reaches >= 97 % of 1000 deterministic evaluation flights within
    `TD3_HOVER_ITERATION_BOUND` iterations, from a policy that does not hover."""
    cfg = apply_overrides(preset("quadrotor_hover_td3"), ["seed=0"])
    loop = cfg.off_policy.loop
    assert loop.target_success_rate >= 0.97 and loop.eval_episodes == 1000
    cfg = apply_overrides(cfg, [f"off_policy.loop.max_iterations={TD3_HOVER_ITERATION_BOUND}"])
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # as measured; small networks run no faster on more
    try:
        result = build_runner(cfg, make).learn()
    finally:
        torch.set_num_threads(threads)
    assert result.reached_target
    assert result.iterations <= TD3_HOVER_ITERATION_BOUND


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
