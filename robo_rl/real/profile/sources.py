"""What a robot profile's observation sources mean: the field paths of messages, previous actions, integrals and
units.

A source is a flat message field (`odom.twist.twist.linear.x`: input `odom`, then the message's path),
`previous_action[K].NAME` (the action commanded K + 1 periods ago) or `integral(FIELD)` (FIELD's running integral).
"""

from __future__ import annotations

import math
import re

# Linear conversions source unit → (SI unit, factor): value_si = factor × value_source.
UNIT_CONVERSIONS: dict[tuple[str, str], float] = {
    ("deg", "rad"): math.pi / 180.0,
    ("deg/s", "rad/s"): math.pi / 180.0,
    ("rpm", "rad/s"): 2.0 * math.pi / 60.0,
    ("mm", "m"): 1e-3,
    ("cm", "m"): 1e-2,
    ("mm/s", "m/s"): 1e-3,
    ("cm/s", "m/s"): 1e-2,
    ("km/h", "m/s"): 1.0 / 3.6,
    ("g", "m/s^2"): 9.80665,
}

FIELD_PATH = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\[[0-9]+\])?(\.[A-Za-z_][A-Za-z0-9_]*(\[[0-9]+\])?)*$")
"""A message field path: dotted names, each with an optional index (`points[0].positions[2]`)."""
_HISTORY_SOURCE = re.compile(r"^previous_action\[([0-9]+)\]\.(.+)$")
_INTEGRAL_SOURCE = re.compile(r"^integral\((.+)\)$")
INTEGRAL_UNIT_SUFFIX = "*s"
"""The unit of an `integral(FIELD)` observation is FIELD's unit times seconds (`m*s` for a position error in m)."""


def unit_factor(source_unit: str, unit: str) -> float:
    """Factor turning a value in `source_unit` into `unit`; raises KeyError when no conversion is known."""
    if source_unit == unit:
        return 1.0
    return UNIT_CONVERSIONS[(source_unit, unit)]


def history_source(source: str) -> tuple[int, str] | None:
    """`(steps_back, action_name)` for a `previous_action[K].NAME` source (K = 0 is the last command), else None."""
    match = _HISTORY_SOURCE.match(source)
    return (int(match.group(1)), match.group(2)) if match else None


def integral_source(source: str) -> str | None:
    """The field of an `integral(FIELD)` source, else None: the observation is FIELD's running integral over the
    policy's control periods, clipped to the policy's bound (`robo_rl.real.assembler.ObservationAssembler`)."""
    match = _INTEGRAL_SOURCE.match(source)
    return match.group(1) if match else None


def source_field(source: str) -> str | None:
    """The message field an observation source reads: the source itself, or an integral's field; None for a
    `previous_action[K].NAME` source (the assembler's own record)."""
    if history_source(source) is not None:
        return None
    return integral_source(source) or source


def source_input(source: str) -> str:
    """The input a source reads: its first segment (`odom` for `odom.twist.twist.linear.x`, `track` for
    `track.lookahead[3]`, `state` for `integral(state.position_error.x)`)."""
    return re.split(r"[.\[]", integral_source(source) or source, maxsplit=1)[0]


def joint_index(path: str) -> int | None:
    """i of a per-joint field (`joint_states.position[i]`, `points[0].positions[i]`), else None."""
    match = re.search(r"(?:position|velocity|effort|positions|velocities|efforts)\[(\d+)\]$", path)
    return int(match.group(1)) if match else None
