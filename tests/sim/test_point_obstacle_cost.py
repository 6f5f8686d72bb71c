"""point/obstacle's constraint (issue 54): a step costs 1 within `hazard_margin` of the obstacle's surface, as a
Safety-Gymnasium hazard costs 1 per step inside it (safety_gymnasium's hazards: `cost_hazards` adds 1 per hazard
the agent is inside). Hand-placed robots: the obstacle at the origin, radius 0.35 m, margin 0.2 m."""

from __future__ import annotations

import torch

from robo_rl.cost_spec import cost_spec_of
from robo_rl.envs import INFO_COST
from robo_rl.sim.point_obstacle.task import PointObstacle, PointObstacleConfig


def test_a_step_costs_one_within_the_margin_of_the_surface_and_nothing_outside() -> None:
    env = PointObstacle(4, config=PointObstacleConfig(hazard_margin=0.2), seed=0)
    spec = cost_spec_of(env)
    assert spec is not None and spec.unit == "1"
    env._obstacle = torch.zeros(4, 2)
    # clearances from the surface: 0.15 (inside the margin), 0.25 (outside), 0.19 diagonally (inside), 1.0 (outside)
    diagonal = (0.35 + 0.19) / 2**0.5
    env._position = torch.tensor([[0.5, 0.0], [0.0, -0.6], [diagonal, diagonal], [-1.35, 0.0]])
    _, _, terminated, _, info = env.step(torch.zeros(4, 2))
    torch.testing.assert_close(info[INFO_COST], torch.tensor([1.0, 0.0, 1.0, 0.0]))
    assert not terminated.any()  # near is not a collision: the reward and the episode do not change


def test_without_a_margin_the_task_declares_no_cost() -> None:
    env = PointObstacle(2, seed=0)
    assert cost_spec_of(env) is None
    assert INFO_COST not in env.step(torch.zeros(2, 2))[4]
