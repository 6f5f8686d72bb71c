"""End to end: a textbook geometric controller that reads only the observation flies the tasks, so observation,
action modes and dynamics agree on every sign convention."""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch

from robo_rl.sim.quadrotor import CtbrActionMap, HoverConfig, QuadrotorHover, QuadrotorTrack, TrackConfig

Policy = Callable[[torch.Tensor], torch.Tensor]


def _ctbr_controller(env: QuadrotorHover | QuadrotorTrack, kp: float, kd: float, k_attitude: float) -> Policy:
    """Position PD to a desired acceleration, thrust along the body z axis, body rates that turn z towards it."""
    p = env.params
    max_rate = torch.tensor(env.config.ctbr.max_body_rate)
    low, high = p.min_rotor_thrust, p.max_rotor_thrust

    def policy(obs: torch.Tensor) -> torch.Tensor:
        position_error, rotation, velocity_error = obs[:, 0:3], obs[:, 3:12].reshape(-1, 3, 3), obs[:, 12:15]
        acceleration = -kp * position_error - kd * velocity_error + torch.tensor([0.0, 0.0, p.gravity])
        body_z = rotation[:, :, 2]
        thrust = p.mass * (acceleration * body_z).sum(-1)
        turn = torch.linalg.cross(body_z, torch.nn.functional.normalize(acceleration, dim=-1), dim=-1)
        rates = k_attitude * (rotation.transpose(1, 2) @ turn.unsqueeze(-1)).squeeze(-1)
        rates[:, 2] = 0.0
        collective = (thrust - 2 * (high + low)) / (2 * (high - low))
        return torch.cat((collective.unsqueeze(-1), rates / max_rate), dim=-1).clamp(-1.0, 1.0)

    return policy


def _as_motor_actions(env: QuadrotorHover, ctbr_policy: Policy) -> Policy:
    """The same controller through the "motor" mode: ctbr rotor speeds converted to per-rotor thrust actions."""
    ctbr = CtbrActionMap(env.params, env.config.ctbr, "cpu", torch.float32)
    low, high = env.params.min_rotor_speed**2, env.params.max_rotor_speed**2

    def policy(obs: torch.Tensor) -> torch.Tensor:
        speed = ctbr(ctbr_policy(obs).T.contiguous(), obs[:, 15:18].T.contiguous()).T
        return (2 * (speed.square() - low) / (high - low) - 1).clamp(-1.0, 1.0)

    return policy


def _fly(env: QuadrotorHover | QuadrotorTrack, policy: Policy) -> tuple[int, torch.Tensor, torch.Tensor]:
    """One full episode of every env: (crashes, success at the end, tracking error over the last second)."""
    obs, crashes, errors = env.reset(seed=0), 0, []
    for _ in range(env.max_episode_steps):
        obs, _, terminated, truncated, info = env.step(policy(obs))
        crashes += int(terminated.sum())
        errors.append(info["tracking_error"])
    assert truncated.all()
    return crashes, info["success"], torch.stack(errors[-100:])


@pytest.mark.parametrize("action_mode", ["ctbr", "motor"])
def test_geometric_controller_hovers_every_env_from_random_starts(action_mode: str) -> None:
    env = QuadrotorHover(128, config=HoverConfig(action_mode=action_mode), seed=0)
    policy = _ctbr_controller(env, kp=2.0, kd=2.5, k_attitude=6.0)
    if action_mode == "motor":
        policy = _as_motor_actions(env, policy)
    crashes, success, errors = _fly(env, policy)
    assert crashes == 0 and success.all()
    assert errors.max() < 0.02


def test_geometric_controller_follows_the_figure_eight() -> None:
    env = QuadrotorTrack(128, config=TrackConfig(action_mode="ctbr"), seed=0)
    crashes, _, errors = _fly(env, _ctbr_controller(env, kp=6.0, kd=4.0, k_attitude=10.0))
    # Without acceleration feedforward a PD lags by about |reference acceleration| / kp = 1.6 / 6 m.
    assert crashes == 0 and errors.mean() < 0.35
    # A quadrotor parked at the centre of the figure would be this far from the reference on average.
    parked = torch.stack([env.reference(torch.full((128,), t))[0].norm(dim=-1) for t in torch.linspace(0, 5, 101)])
    assert parked.mean() > 2 * errors.mean()
