"""Filtered actions → command message fields, for the message type the robot can take."""

from __future__ import annotations

import importlib.util
import math
from collections.abc import Callable, Mapping, Sequence

import numpy as np

from robo_rl.real.frames import FLU_TO_FRD_SIGN
from robo_rl.real.profile import CommandSpec, RobotProfile

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


def command_fields(spec: CommandSpec, action_names: Sequence[str], command: np.ndarray) -> dict[str, float]:
    """Message field → value for a command `(action_dim,)` in action order: `offset + scale × command[action]`,
    its sign converted from FLU to the command's body frame for body-vector components (`axis`), and the yaw rate
    of an Ackermann car for `ackermann_yaw_rate` fields."""
    index = {name: i for i, name in enumerate(action_names)}
    linear = {f.field: f.offset + f.scale * float(command[index[f.action]]) for f in spec.fields}
    values = {}
    for f in spec.fields:
        value = linear[f.field]
        if f.transform == "ackermann_yaw_rate":
            value = linear[SPEED_FIELD] * math.tan(value) / spec.wheelbase
        if f.axis and spec.body_frame == "frd":
            value *= FLU_TO_FRD_SIGN[f.axis]
        values[f.field] = value
    return values


def command_actions(spec: CommandSpec, values: Mapping[str, float]) -> dict[str, float]:
    """The actions a command carries (action name → value), from its message fields (`command_fields` undone): what
    a simulated robot executes. An `ackermann_yaw_rate` field at zero speed carries no steering angle and is left
    out, as are fields absent from `values`."""
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
        actions[f.action] = (value - f.offset) / f.scale
    return actions
