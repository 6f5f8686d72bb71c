"""The car's constraint (issue 54, item 3): a speed limit near the track's edge. A step costs the forward speed above
`cost_speed_limit` while the car is within `cost_edge_distance` of an edge; recomputed here from each step's final
observation (vx, lateral_offset and half_width, noise-free without randomization)."""

from __future__ import annotations

import pytest
import torch

from robo_rl.envs import INFO_COST, INFO_FINAL_OBS, task_specs
from robo_rl.sim import make


def test_speed_near_the_edge_costs_its_excess_and_nothing_elsewhere() -> None:
    env = make("rc_car/race", 16, seed=3, config={"cost_speed_limit": 1.5, "cost_edge_distance": 0.3})
    assert env.cost_spec is not None and task_specs(env).cost == env.cost_spec
    names = list(env.obs_spec.names)
    vx, offset, half = (names.index(name) for name in ("vx", "lateral_offset", "half_width"))
    generator = torch.Generator().manual_seed(0)
    costly = free = 0
    for _ in range(300):  # full throttle, weaving: fast near the edges and fast near the middle both happen
        steer = 0.6 * torch.sin(torch.rand(16, generator=generator) * 6.28)
        info = env.step(torch.stack((steer, torch.ones(16)), dim=-1))[4]
        final = info[INFO_FINAL_OBS]
        near = final[:, half] - final[:, offset].abs() < 0.3
        expected = (final[:, vx] - 1.5).clamp_min(0.0) * near
        torch.testing.assert_close(info[INFO_COST], expected, atol=1e-5, rtol=0)
        costly += int((info[INFO_COST] > 0).sum())
        free += int(((final[:, vx] > 1.5) & ~near).sum())
    assert costly > 0 and free > 0, (costly, free)


def test_without_a_limit_the_task_declares_no_cost_and_the_numba_step_refuses_one() -> None:
    plain = make("rc_car/race", 2, seed=0)
    assert getattr(plain, "cost_spec", None) is None and INFO_COST not in plain.step(torch.zeros(2, 2))[4]
    with pytest.raises(ValueError, match="no cost"):
        make("rc_car/race", 2, seed=0, config={"cost_speed_limit": 1.0, "backend": "numba"})
