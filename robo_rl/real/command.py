"""Filtered actions → command message fields, for the message type the robot can take."""

from __future__ import annotations

import importlib.util
import math
from collections.abc import Callable, Mapping, Sequence

import numpy as np

from robo_rl.real.frames import FLU_TO_FRD_SIGN
from robo_rl.real.profile import JOINT_TRAJECTORY, CommandField, CommandSpec, RobotProfile

AUTO = "auto"
"""`command_type` value: the first of the profile's commands whose package is installed."""


def package_available(package: str) -> bool:
    """Whether a Python package (e.g. a ROS message package such as `ackermann_msgs`) can be imported here."""
    try:
        return importlib.util.find_spec(package) is not None
    except (ImportError, ValueError):
        return False


def select_command(
    profile: RobotProfile, available: Callable[[str], bool] = package_available, command_type: str = ""
) -> CommandSpec:
    """The profile's command of type `command_type` when given (ValueError naming the profile's types when it has
    none), else ("" or "auto") its first command whose message package is available, else its last one.

    The last choice is the fallback of the profile (e.g. Twist when ackermann_msgs is missing); a ROS node
    importing its message class gives the clear error when even that one is absent.
    """
    if command_type not in ("", AUTO):
        for spec in profile.commands:
            if spec.type == command_type:
                return spec
        types = ", ".join(spec.type for spec in profile.commands)
        raise ValueError(f"command_type {command_type!r}: profile {profile.name!r} commands {types}")
    for spec in profile.commands:
        if available(spec.package):
            return spec
    return profile.commands[-1]


SPEED_FIELD = "linear.x"
"""The Twist field an `ackermann_yaw_rate` field takes the speed from."""


def command_fields(
    spec: CommandSpec, action_names: Sequence[str], command: np.ndarray, measured: Mapping[str, float] | None = None
) -> dict[str, float]:
    """Message field → value for a command `(action_dim,)` in action order: `offset + scale × command[action]`
    (a `relative_to` field: `measured[relative_to] + scale × command[action]`, ValueError when `measured` lacks
    it), its sign converted from FLU to the command's body frame for body-vector components (`axis`), the yaw rate
    of an Ackermann car for `ackermann_yaw_rate` fields, then capped at the field's `ceiling` and sent as 0 below
    its `zero_below` (`cut_off`)."""
    index = {name: i for i, name in enumerate(action_names)}
    linear = {f.field: _origin(f, measured) + f.scale * float(command[index[f.action]]) for f in spec.fields}
    values = {}
    for f in spec.fields:
        value = linear[f.field]
        if f.transform == "ackermann_yaw_rate":
            value = linear[SPEED_FIELD] * math.tan(value) / spec.wheelbase
        if f.axis and spec.body_frame == "frd":
            value *= FLU_TO_FRD_SIGN[f.axis]
        values[f.field] = cut_off(value, f.ceiling, f.zero_below)
    return values


def _origin(field: CommandField, measured: Mapping[str, float] | None) -> float:
    """What a field's action is added to: its offset, or the measured value of its `relative_to` source."""
    if not field.relative_to:
        return field.offset
    value = None if measured is None else measured.get(field.relative_to)
    if value is None:
        raise ValueError(f"command field {field.field!r} is relative to {field.relative_to!r}, which is not measured")
    return value


def relative_actions(spec: CommandSpec, action_names: Sequence[str]) -> tuple[bool, ...]:
    """Per action in `action_names` order: whether it feeds a `relative_to` field (a step from a measured value)."""
    relative = {f.action for f in spec.fields if f.relative_to}
    return tuple(name in relative for name in action_names)


def cut_off(value: float, ceiling: float, zero_below: float) -> float:
    """`min(value, ceiling)`, or 0 when that lies below `zero_below` (e.g. a Crazyflie's legacy thrust: capped at
    the firmware's 60000, and 0, motors off, below the profile's cut-off)."""
    value = min(value, ceiling)
    return 0.0 if value < zero_below else value


def command_actions(
    spec: CommandSpec, values: Mapping[str, float], measured: Mapping[str, float] | None = None, targets: bool = False
) -> dict[str, float]:
    """The actions a command carries (action name → value), from its message fields (`command_fields` undone): what
    a simulated robot executes. A `relative_to` field gives `(value − measured[relative_to]) / scale`, the step
    from the measured value (left out when `measured` lacks it), or with `targets` its absolute target in action
    units, `value / scale`. An `ackermann_yaw_rate` field at zero speed carries no steering angle and is left
    out, as are fields absent from `values`. A field's `ceiling` and `zero_below` are not undone: a value sent as 0
    gives the action that maps to 0 (below the lowest action when `zero_below` > 0), which the simulator clips."""
    actions = {}
    for f in spec.fields:
        value = values.get(f.field)
        if value is None or f.scale == 0:
            continue
        if f.axis and spec.body_frame == "frd":
            value *= FLU_TO_FRD_SIGN[f.axis]
        if f.transform == "ackermann_yaw_rate":
            speed = values.get(SPEED_FIELD)
            if not speed:
                continue
            value = math.atan(spec.wheelbase * value / speed)
        origin = f.offset
        if f.relative_to and not targets:
            reference = None if measured is None else measured.get(f.relative_to)
            if reference is None:
                continue
            origin = reference
        actions[f.action] = (value - origin) / f.scale
    return actions


def stamped_now(command_type: str) -> bool:
    """Whether a command message with a header goes out with the send time as `header.stamp`: every type but a
    JointTrajectory. A trajectory keeps its zero stamp, which joint_trajectory_controller reads as "start on receipt,
    on my clock"; a non-zero one is a start time on the controller's clock, and a trajectory ending before the
    controller's now is dropped (ros-controls/ros2_controllers, jazzy,
    JointTrajectoryController::validate_trajectory_msg), so our clock running behind the robot's by more than a
    point's time_from_start (20 ms for the arm) would freeze the arm."""
    return command_type != JOINT_TRAJECTORY


TIME_FROM_START = ("points[0].time_from_start.sec", "points[0].time_from_start.nanosec")
"""The JointTrajectory fields of a one-point trajectory's duration (builtin_interfaces/Duration: s + ns)."""


def trajectory_timing(seconds: float) -> dict[str, float]:
    """`points[0].time_from_start` of a one-point JointTrajectory reaching its point `seconds` (>= 0) from now."""
    if not (math.isfinite(seconds) and seconds >= 0):
        raise ValueError(f"time_from_start: must be finite and >= 0 s, got {seconds}")
    sec, nanosec = divmod(round(seconds * 1e9), 1_000_000_000)
    return {TIME_FROM_START[0]: float(sec), TIME_FROM_START[1]: float(nanosec)}


def measured_actions(
    spec: CommandSpec, action_names: Sequence[str], held: Sequence[tuple[str, str]], fields: Mapping[str, float]
) -> list[float] | None:
    """The actions `(action_dim,)` that would command the measured pose: `held` pairs, per action in
    `action_names` order, the measured field (`joint_states.position[2]`) with the command field it feeds
    (`RobotProfile`'s `held_joint_sources`); None unless `fields` measures every one. An action of a
    `relative_to` field gives its absolute target (the measured value / scale), the units `SafetyFilter` holds and
    rate limits it in."""
    if not held or any(source not in fields for source, _ in held):
        return None
    actions = command_actions(spec, {field: fields[source] for source, field in held}, targets=True)
    return [actions[name] for name in action_names]
