"""Costs computed on the robot from the profile's observation fields, as `robo_rl.robot.rewards` computes rewards:
the constraint a simulated task declares (`info["cost"]`, `robo_rl.cost_spec`), from what the robot's topics carry,
so that a constrained algorithm (PPO-Lagrangian, SAC-Lagrangian) keeps the same budget on the robot as in
simulation. `cost_for(profile, config)` picks it from the task's config: the constraint is a setting of the task
(e.g. rc_car/race's `cost_speed_limit`), not of the robot."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

from robo_rl.cost_spec import CostSpec, speed_near_edge
from robo_rl.real.profile import RobotProfile

Cost = Callable[[Mapping[str, float], float], float]
"""`(the link's fields, dt) -> this step's cost >= 0`."""


def rc_car_speed_near_edge(limit: float, distance: float) -> Cost:
    """rc_car/race's cost from the car's own topics: the forward speed (odometry's body-frame x, m/s) above `limit`
    while the car's centre is within `distance` of an edge of the track (its half width less |lateral offset|; off
    the track counts as near), else 0."""

    def cost(fields: Mapping[str, float], dt: float) -> float:
        del dt
        margin = fields["track.half_width"] - abs(fields["track.lateral_offset"])
        near = not margin >= distance  # NaN counts as near, as the simulator's
        excess = fields["odom.twist.twist.linear.x"] - limit
        return max(excess, 0.0) if near and math.isfinite(excess) else 0.0

    return cost


def cost_for(profile: RobotProfile, config: Any) -> tuple[CostSpec, Cost] | None:
    """The constraint the task's `config` declares, computed from the profile's fields; None where it declares
    none. ValueError for a constraint the robot cannot compute yet (it would train unconstrained)."""
    if profile.kind == "rc_car" and getattr(config, "cost_speed_limit", 0.0) > 0:
        limit, distance = config.cost_speed_limit, config.cost_edge_distance
        return speed_near_edge(limit, distance), rc_car_speed_near_edge(limit, distance)
    constraints = ("cost_speed_limit", "hazard_margin", "cost_force_limit", "cost_tilt_limit")
    declared = [name for name in constraints if getattr(config, name, 0.0)]
    if declared:
        raise ValueError(f"no on-robot cost for {profile.kind!r} robots with {declared[0]} set (have: rc_car)")
    return None
