"""Filtered actions → command message fields, for the message type the robot can take."""

from __future__ import annotations

import importlib.util
from collections.abc import Callable, Sequence

import numpy as np

from robo_rl.real.profile import CommandSpec, RobotProfile


def package_available(package: str) -> bool:
    """Whether a Python package (e.g. a ROS message package such as `ackermann_msgs`) can be imported here."""
    try:
        return importlib.util.find_spec(package) is not None
    except (ImportError, ValueError):
        return False


def select_command(profile: RobotProfile, available: Callable[[str], bool] = package_available) -> CommandSpec:
    """The profile's first command whose message package is available; the last one when none is.

    The last choice is the fallback of the profile (e.g. Twist when ackermann_msgs is missing); a ROS node
    importing its message class gives the clear error when even that one is absent.
    """
    for spec in profile.commands:
        if available(spec.package):
            return spec
    return profile.commands[-1]


def command_fields(spec: CommandSpec, action_names: Sequence[str], command: np.ndarray) -> dict[str, float]:
    """Message field → value, `offset + scale × command[action]`, for a command `(action_dim,)` in action order."""
    index = {name: i for i, name in enumerate(action_names)}
    return {f.field: f.offset + f.scale * float(command[index[f.action]]) for f in spec.fields}
