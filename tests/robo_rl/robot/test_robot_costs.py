"""The constraint on the robot (issue 54, item 1): rc_car/race's cost from the car's own fields (odometry's
body-frame forward speed, the localizer's lateral offset and half width), hand-worked; through `robo-rl train
--robot rc_car --robot-link sim` with the task's cost settings; refused where the robot cannot compute it."""

from __future__ import annotations

import math
from types import SimpleNamespace

import pytest
import torch

from robo_rl.api.envs import robot_env_factory
from robo_rl.config import ConfigError
from robo_rl.cost_spec import cost_spec_of
from robo_rl.envs import INFO_COST
from robo_rl.real.profile import load_profile
from robo_rl.robot.costs import cost_for, rc_car_speed_near_edge
from robo_rl.robot.operator import PursuitDriver


def _fields(speed: float, offset: float, half_width: float = 0.7) -> dict[str, float]:
    return {"odom.twist.twist.linear.x": speed, "track.lateral_offset": offset, "track.half_width": half_width}


def test_the_car_s_cost_by_hand() -> None:
    cost = rc_car_speed_near_edge(3.0, 0.55)
    assert cost(_fields(4.0, 0.2), 0.02) == pytest.approx(1.0)  # 0.5 m from the edge: 1 m/s over the limit
    assert cost(_fields(4.0, -0.1), 0.02) == 0.0  # 0.6 m from either edge: not near
    assert cost(_fields(2.5, 0.6), 0.02) == 0.0  # near, but under the limit
    assert cost(_fields(3.5, 0.9), 0.02) == pytest.approx(0.5)  # off the track counts as near
    assert cost(_fields(3.5, math.nan), 0.02) == pytest.approx(0.5)  # a lost localizer counts as near


def test_the_simulated_car_reports_the_cost_its_fields_imply() -> None:
    make = robot_env_factory("rc_car", link="sim", operator="resets")
    env = make("rc_car/race", 1, params=["cost_speed_limit=1.0", "cost_edge_distance=0.8"])  # the whole track
    spec = cost_spec_of(env)
    assert spec is not None and spec.name == "speed_near_edge"
    env.reset()
    link = env.link  # type: ignore[attr-defined]
    driver = PursuitDriver()
    costs, speeds = [], []
    for _ in range(100):
        info = env.step(torch.as_tensor(driver(link.fields())).float().unsqueeze(0))[4]
        costs.append(float(info[INFO_COST][0]))
        speeds.append(link.fields()["odom.twist.twist.linear.x"])
    assert max(costs) > 0.5  # the pursuit driver cruises above 1 m/s
    assert costs == pytest.approx([max(v - 1.0, 0.0) for v in speeds], abs=1e-6)


def test_a_cost_the_robot_cannot_compute_is_refused() -> None:
    """The peg's contact-force constraint needs a force the arm's topics do not carry yet: the robot must refuse it,
    not train unconstrained."""
    make = robot_env_factory("arm_peg", link="sim")
    with pytest.raises(ConfigError, match="no on-robot cost for 'arm' robots with cost_force_limit set"):
        make("mujoco/peg_insert", 1, params=["cost_force_limit=5.0"])
    assert cost_for(load_profile("rc_car"), SimpleNamespace(cost_speed_limit=0.0)) is None
