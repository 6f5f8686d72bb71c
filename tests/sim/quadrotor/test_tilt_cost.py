"""The drone's constraint for safe RL (issue 54): quadrotor/hover's `cost_tilt_limit` costs a step the tilt of the
body z axis from world up above the limit. Checked against SciPy's rotation of the state's quaternion (w, x, y, z):
the angle between the rotated body z axis and world z."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from scipy.spatial.transform import Rotation

from robo_rl.cost_spec import cost_spec_of
from robo_rl.envs import INFO_COST
from robo_rl.sim.quadrotor import QuadrotorHover
from robo_rl.sim.quadrotor.dynamics import QUATERNION
from robo_rl.sim.quadrotor.hover_config import HoverConfig

LIMIT = 0.1


def _scipy_tilt(state: torch.Tensor) -> np.ndarray:
    w, x, y, z = state[:, QUATERNION].double().numpy().T
    body_z = Rotation.from_quat(np.stack([x, y, z, w], axis=1)).apply([0.0, 0.0, 1.0])
    return np.arccos(np.clip(body_z[:, 2], -1.0, 1.0))


def test_each_step_costs_the_tilt_above_the_limit() -> None:
    env = QuadrotorHover(64, config=HoverConfig(cost_tilt_limit=LIMIT, init_attitude_range=0.8), seed=3)
    spec = cost_spec_of(env)
    assert spec is not None and spec.unit == "rad"
    generator = torch.Generator().manual_seed(0)
    checked = costed = 0
    for _ in range(5):
        action = torch.rand(64, 4, generator=generator) * 0.4 - 0.2
        _, _, terminated, truncated, info = env.step(action)
        kept = ~(terminated | truncated)  # an ended env's state is already the next episode's
        expected = np.maximum(_scipy_tilt(env.state)[kept.numpy()] - LIMIT, 0.0)
        np.testing.assert_allclose(info[INFO_COST][kept].double().numpy(), expected, atol=2e-6)
        checked += int(kept.sum())
        costed += int((expected > 0).sum())
    assert checked > 200 and 20 < costed < checked  # tilted and level envs alike


def test_no_limit_no_cost_and_the_numba_step_refuses_one() -> None:
    env = QuadrotorHover(4, seed=0)
    _, _, _, _, info = env.step(torch.zeros(4, 4))
    assert cost_spec_of(env) is None and INFO_COST not in info
    with pytest.raises(ValueError, match=r"no cost \(cost_tilt_limit 0\)"):
        HoverConfig(cost_tilt_limit=0.2, backend="numba")
    with pytest.raises(ValueError, match="cost_tilt_limit"):
        HoverConfig(cost_tilt_limit=-math.pi)
