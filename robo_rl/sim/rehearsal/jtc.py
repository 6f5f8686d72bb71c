"""joint_trajectory_controller's acceptance rule: the arm's stand-in in a rehearsal (`robo_rl.sim.rehearsal.arm`).

The rule is restated in our words from ros-controls/ros2_controllers, branch jazzy at commit
ed360c97d6e9e74cb884e3e39a949d987cd15c11 (2026-08-16), joint_trajectory_controller/src/joint_trajectory_controller.cpp,
`JointTrajectoryController::validate_trajectory_msg` (tests/real/test_joint_trajectory_rule.py lists its checks
and tests each): a rejected trajectory is dropped and the controller keeps its old reference (the arm freezes).
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

NS = 1_000_000_000
FLOAT_EPSILON = float.fromhex("0x1p-23")  # std::numeric_limits<float>::epsilon()


@dataclass(frozen=True)
class Point:
    time_from_start_ns: int
    positions: tuple[float, ...] = ()
    velocities: tuple[float, ...] = ()
    accelerations: tuple[float, ...] = ()
    effort: tuple[float, ...] = ()


@dataclass(frozen=True)
class Trajectory:
    stamp_ns: int
    joint_names: tuple[str, ...]
    points: tuple[Point, ...]


@dataclass(frozen=True)
class Controller:
    """The joint_trajectory_controller parameters the rule reads (defaults: jazzy's parameter file) and its clock."""

    joints: tuple[str, ...]
    now_ns: int
    allow_partial_joints_goal: bool = False
    allow_nonzero_velocity_at_trajectory_end: bool = False
    effort_command_interface: bool = False


def jtc_accepts(trajectory: Trajectory, controller: Controller) -> str:
    """ "" when the controller takes `trajectory`, else why it drops it (the module docstring names the source)."""
    names, points = trajectory.joint_names, trajectory.points
    if not controller.allow_partial_joints_goal and len(names) != len(controller.joints):
        return "joint count differs from the controller's"
    if not names or not points:
        return "no joint names" if not names else "no points"
    foreign = [name for name in names if name not in controller.joints]
    if foreign:
        return f"joint {foreign[0]} is not the controller's"
    if not controller.allow_nonzero_velocity_at_trajectory_end and any(
        abs(v) > FLOAT_EPSILON for v in points[-1].velocities
    ):
        return "last point moves"
    if trajectory.stamp_ns != 0 and trajectory.stamp_ns + points[-1].time_from_start_ns < controller.now_ns:
        return "ends in the past"
    for before, after in itertools.pairwise(points):
        if after.time_from_start_ns <= before.time_from_start_ns:
            return "time_from_start not increasing"
    for point in points:
        if len(point.positions) != len(names) or any(
            values and len(values) != len(names) for values in (point.velocities, point.accelerations)
        ):
            return "a point's values do not match the joint names"
        if point.effort and not controller.effort_command_interface:
            return "effort without an effort command interface"
    return ""


_POINT_FIELD = re.compile(r"points\[0\]\.(positions|velocities|accelerations|effort)\[(\d+)\]")


def one_point_trajectory(fields: Mapping[str, float], joint_names: Sequence[str], stamp_ns: int) -> Trajectory:
    """The JointTrajectory CommandOutput publishes from policy_node's message fields: one point, the profile's
    joint names, the given header stamp."""
    values: dict[str, dict[int, float]] = {}
    for path, value in fields.items():
        match = _POINT_FIELD.fullmatch(path)
        if match:
            values.setdefault(match[1], {})[int(match[2])] = value
    duration = int(fields["points[0].time_from_start.sec"]) * NS + int(fields["points[0].time_from_start.nanosec"])
    arrays = {kind: tuple(by_index[i] for i in sorted(by_index)) for kind, by_index in values.items()}
    return Trajectory(stamp_ns, tuple(joint_names), (Point(duration, **arrays),))
