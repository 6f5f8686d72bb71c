"""Curriculum on the hover ranges, and a fixed action latency for held-out evaluation."""

from __future__ import annotations

import pytest
import torch

from robo_rl.sim.quadrotor import CurriculumConfig, HoverConfig, QuadrotorHover, RandomizationConfig
from robo_rl.sim.quadrotor.randomization import EPISODE_NAMES

LATENCY = EPISODE_NAMES.index("action_latency")
RANDOMIZED = RandomizationConfig(mass=0.3, thrust_coefficient=0.2, max_action_latency=2, disturbance_force=0.1)


def test_fraction_grows_linearly_to_one() -> None:
    curriculum = CurriculumConfig(steps=100, initial_fraction=0.2)
    assert [curriculum.fraction(k) for k in (0, 50, 100, 1000)] == pytest.approx([0.2, 0.6, 1.0, 1.0])
    assert CurriculumConfig().fraction(0) == 1.0  # off by default
    with pytest.raises(ValueError, match="initial_fraction"):
        CurriculumConfig(initial_fraction=1.5)
    with pytest.raises(ValueError, match="steps"):
        CurriculumConfig(steps=-1)


def test_curriculum_shrinks_initial_states_and_randomization_then_reaches_full_ranges() -> None:
    config = HoverConfig(
        randomization=RANDOMIZED, curriculum=CurriculumConfig(steps=10, initial_fraction=0.25), episode_length=0.05
    )
    env = QuadrotorHover(4000, config=config, seed=0)
    early_position = env.state[:, 0:3].abs().max().item()
    early_mass = (env.episode_params[:, 0] - 1).abs().max().item()
    assert 0.1 < early_position <= 0.125 + 1e-6  # 0.25 x 0.5 m
    assert 0.07 < early_mass <= 0.075 + 1e-6  # 0.25 x 0.3
    assert env.episode_params[:, LATENCY].max().item() == 0.0  # floor(0.25 x U{0, 1, 2}) = 0
    hover = torch.tensor(env.hover_action).expand(4000, 4)
    for _ in range(15):  # past the curriculum; every 5-step episode has reset since
        env.step(hover)
    assert env.curriculum_fraction == 1.0
    assert env.state[:, 0:3].abs().max().item() > 0.45
    assert (env.episode_params[:, 0] - 1).abs().max().item() > 0.28
    assert set(env.episode_params[:, LATENCY].tolist()) == {0.0, 1.0, 2.0}


def test_curriculum_clock_survives_a_state_dict_round_trip() -> None:
    config = HoverConfig(curriculum=CurriculumConfig(steps=100))
    env = QuadrotorHover(2, config=config, seed=0)
    for _ in range(30):
        env.step(torch.zeros(2, 4))
    resumed = QuadrotorHover(2, config=config, seed=1)
    resumed.load_state_dict(env.state_dict())
    assert resumed.control_steps == 30 and resumed.curriculum_fraction == env.curriculum_fraction


def test_fixed_latency_gives_every_env_the_same_delay() -> None:
    config = HoverConfig(randomization=RandomizationConfig(min_action_latency=2, max_action_latency=2))
    env = QuadrotorHover(256, config=config, seed=0)
    assert set(env.episode_params[:, LATENCY].tolist()) == {2.0}
    assert env.privileged_obs_spec.low[LATENCY] == env.privileged_obs_spec.high[LATENCY] == 2.0
    with pytest.raises(ValueError, match="min_action_latency"):
        RandomizationConfig(min_action_latency=3, max_action_latency=2)
