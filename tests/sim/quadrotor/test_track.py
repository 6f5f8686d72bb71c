"""QuadrotorTrack: the figure-eight reference, tracking error and the observation of the moving target."""

from __future__ import annotations

import math

import pytest
import torch

from robo_rl.envs import check_step_result
from robo_rl.sim.quadrotor import QuadrotorTrack, TrackConfig
from robo_rl.sim.quadrotor.reference import FigureEight

STILL = {
    "init_position_range": 0.0,
    "init_attitude_range": 0.0,
    "init_velocity_range": 0.0,
    "init_angular_velocity_range": 0.0,
}


def test_figure_eight_positions_and_velocities() -> None:
    figure = FigureEight(amplitude=1.2, period=4.0, height=0.5, random_phase=True, device="cpu", dtype=torch.float64)
    time = torch.linspace(0, 4, 41, dtype=torch.float64)
    phase = torch.full_like(time, 0.3)
    position, velocity = figure(time, phase)
    theta = 2 * math.pi * time / 4.0 + 0.3
    torch.testing.assert_close(position[0], 1.2 * torch.sin(theta))
    torch.testing.assert_close(position[1], 0.6 * torch.sin(2 * theta))
    torch.testing.assert_close(position[2], torch.full_like(time, 0.5))
    h = 1e-6
    ahead, _ = figure(time + h, phase)
    torch.testing.assert_close(velocity, (ahead - position) / h, rtol=0, atol=1e-5)
    assert figure.phase(torch.tensor([0.25])).item() == pytest.approx(math.pi / 2)


def test_observation_has_reference_velocity_and_velocity_error() -> None:
    env = QuadrotorTrack(8, config=TrackConfig(**STILL), seed=0)
    names = env.obs_spec.names
    assert env.obs_spec.dim == 25 and names[12] == "velocity_error_x"
    assert names[18:21] == ("reference_velocity_x", "reference_velocity_y", "reference_velocity_z")
    obs = env.reset(seed=0)
    _, reference_velocity = env.reference(torch.zeros(8))
    torch.testing.assert_close(obs[:, 18:21], reference_velocity)
    torch.testing.assert_close(obs[:, 12:15], env.state[:, 7:10] - reference_velocity)
    check_step_result(env, env.step(torch.zeros(8, 4)))


def test_tracking_error_is_zero_on_the_target() -> None:
    env = QuadrotorTrack(16, config=TrackConfig(**STILL), seed=0)
    assert env.tracking_error().abs().max() < 1e-6, "still starts exactly on the reference"
    for _ in range(7):
        env.step(torch.zeros(16, 4))
    position, velocity = env.reference(env.task.episode_time)
    state = env.state
    state[:, 0:3], state[:, 7:10] = position, velocity
    env.set_state(state)
    assert env.tracking_error().abs().max() < 1e-6
    assert (env.state[:, 0:3] - position).abs().max() < 1e-6


def test_tracking_error_of_a_hovering_quad_on_a_degenerate_figure_is_zero() -> None:
    env = QuadrotorTrack(4, config=TrackConfig(**STILL, amplitude=0.0, height=1.0), seed=0)
    hover = torch.tensor([env.hover_action]).expand(4, 4)
    for _ in range(100):
        _, _, terminated, _, info = env.step(hover)
        assert not terminated.any() and info["tracking_error"].max() < 1e-4
    torch.testing.assert_close(info["tracking_error"], info["final_obs"][:, :3].norm(dim=-1))
    assert env.state[:, 2].sub(1.0).abs().max() < 1e-4


def test_tracking_error_grows_when_the_quad_stays_behind() -> None:
    config = TrackConfig(**STILL, random_phase=False, amplitude=1.0, period=4.0)
    env = QuadrotorTrack(1, config=config, seed=0)
    state = env.state
    state[:, 7:10] = 0.0  # the episode starts at the reference's velocity: stop the quad at the centre
    env.set_state(state)
    hover = torch.tensor([env.hover_action])
    for _ in range(50):  # 0.5 s: the reference moved from the centre
        info = env.step(hover)[4]
    position, _ = env.reference(torch.tensor([0.5]))
    assert info["tracking_error"].item() == pytest.approx(position.norm().item(), abs=1e-3)
    assert info["tracking_error"].item() > 0.5


def test_random_phase_spreads_start_points_and_can_be_disabled() -> None:
    spread = QuadrotorTrack(64, config=TrackConfig(**STILL), seed=0)
    assert spread.state[:, 0].std() > 0.3
    centred = QuadrotorTrack(4, config=TrackConfig(**STILL, random_phase=False, height=0.7), seed=0)
    torch.testing.assert_close(centred.state[:, 0:3], torch.tensor([[0.0, 0.0, 0.7]]).expand(4, 3))


def test_state_dict_round_trip_continues_identically() -> None:
    config = TrackConfig(episode_length=0.4)
    env = QuadrotorTrack(8, config=config, seed=3)
    actions = torch.rand(90, 8, 4, generator=torch.Generator().manual_seed(0)) * 2 - 1
    for action in actions[:30]:
        env.step(action)
    saved = env.state_dict()
    expected = torch.stack([env.step(a)[0] for a in actions[30:]])
    resumed = QuadrotorTrack(8, config=config, seed=99)
    resumed.load_state_dict(saved)
    torch.testing.assert_close(torch.stack([resumed.step(a)[0] for a in actions[30:]]), expected, rtol=0, atol=0)
