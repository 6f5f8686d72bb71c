"""Observation terms of Isaac-Lab-style policies (Isaac Lab, mjlab, rsl_rl runs of them) and what each means on a
robot: its width, the names and units of its entries, where a ROS graph reads them (for the draft profile), and the
affine map from those robot values to what the policy was trained on.

Isaac Lab and mjlab build the policy's input from named terms (`base_lin_vel`, `joint_pos_rel`, `last_action`, ...)
computed in the simulator. A robot publishes the physical quantities instead (absolute joint angles, the last
command sent in joint angles), so the import folds the difference into the graph: `input = (robot − offset) × gain`.
- `joint_pos_rel`: offset = the default joint pose (the robot publishes absolute angles).
- `last_action`: the policy saw its raw output; the robot knows the command it sent (default + scale × raw), so
  offset = that default and gain = 1 / scale.
- a term's `scale` (Isaac Lab's `ObservationTermCfg.scale`) multiplies the gain.
Terms of unknown meaning keep the identity map and generic names; their width must be supplied.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from robo_rl.importers.supplied import MissingInfoError

KINDS = (
    "base_lin_vel",
    "base_ang_vel",
    "projected_gravity",
    "velocity_command",
    "joint_pos_rel",
    "joint_pos",
    "joint_vel",
    "last_action",
    "unknown",
)
FUNCTION_KINDS = {
    "base_lin_vel": "base_lin_vel",
    "base_ang_vel": "base_ang_vel",
    "projected_gravity": "projected_gravity",
    "generated_commands": "velocity_command",
    "joint_pos_rel": "joint_pos_rel",
    "joint_pos": "joint_pos",
    "joint_vel_rel": "joint_vel",
    "joint_vel": "joint_vel",
    "last_action": "last_action",
}
"""Isaac Lab / mjlab observation functions (the name after the module) → kind."""
MJLAB_TERM_KINDS = {
    "base_lin_vel": "base_lin_vel",
    "base_ang_vel": "base_ang_vel",
    "projected_gravity": "projected_gravity",
    "command": "velocity_command",
    "joint_pos": "joint_pos_rel",
    "joint_vel": "joint_vel",
    "actions": "last_action",
}
"""mjlab's ONNX metadata names terms, not functions; these are the functions its velocity and tracking tasks bind
to those term names (`joint_pos` is `joint_pos_rel`, `actions` is `last_action`)."""
_VECTOR = {
    "base_lin_vel": (("base_lin_vel_x", "base_lin_vel_y", "base_lin_vel_z"), "m/s", "odom.twist.twist.linear"),
    "base_ang_vel": (("base_ang_vel_x", "base_ang_vel_y", "base_ang_vel_z"), "rad/s", "odom.twist.twist.angular"),
    "projected_gravity": (("projected_gravity_x", "projected_gravity_y", "projected_gravity_z"), "", "state"),
}
_COMMAND = (
    ("command_lin_vel_x", "m/s", "cmd_vel.linear.x"),
    ("command_lin_vel_y", "m/s", "cmd_vel.linear.y"),
    ("command_ang_vel_z", "rad/s", "cmd_vel.angular.z"),
)


@dataclass(frozen=True)
class Term:
    """One observation term of the policy's input, in order."""

    name: str
    kind: str
    """One of `KINDS`."""
    size: int
    scale: float = 1.0
    """The term's scale in the simulator (Isaac Lab's `ObservationTermCfg.scale`)."""

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"term {self.name!r}: kind {self.kind!r} is not one of {KINDS}")


@dataclass(frozen=True)
class JointAction:
    """A joint-position action term: target = offset + scale × raw output, per joint."""

    joints: tuple[str, ...]
    scale: np.ndarray
    offset: np.ndarray
    default_pos: Mapping[str, float]
    """The default pose of every joint the observation may name (the offset of `joint_pos_rel`)."""

    @property
    def names(self) -> tuple[str, ...]:
        """The artifact's action names: `JOINT_target` (rad)."""
        return tuple(f"{joint}_target" for joint in self.joints)


@dataclass(frozen=True)
class Entry:
    """One element of the observation vector: its name/unit on the robot, the draft profile's source, and the fold
    `policy_input = (robot − offset) × gain`."""

    name: str
    unit: str
    source: str
    offset: float = 0.0
    gain: float = 1.0


def term_sizes(
    terms: Sequence[tuple[str, str, float]], joints: Sequence[str], action_size: int, supplied: Mapping[str, int]
) -> tuple[Term, ...]:
    """`(name, kind, scale)` terms with their widths: supplied (`--obs-sizes term=N`), else known from the kind
    (3 for base velocities, gravity and a velocity command; one per joint; one per action)."""
    out: list[Term] = []
    unknown: list[tuple[str, str]] = []
    for name, kind, scale in terms:
        size = supplied.get(name)
        if size is None:
            size = _known_size(kind, len(joints), action_size)
        if size is None:
            unknown.append((name, kind))
            continue
        out.append(Term(name, kind, size, scale))
    if unknown:
        terms_text = ", ".join(f"{name!r} ({kind})" for name, kind in unknown)
        widths = ",".join(f"{name}=N" for name, _ in unknown)
        raise MissingInfoError(f"observation term {terms_text}: its width is not known: supply --obs-sizes {widths}")
    return tuple(out)


def _known_size(kind: str, joints: int, actions: int) -> int | None:
    if kind in ("base_lin_vel", "base_ang_vel", "projected_gravity", "velocity_command"):
        return 3
    if kind in ("joint_pos_rel", "joint_pos", "joint_vel"):
        return joints or None
    if kind == "last_action":
        return actions
    return None


def entries(terms: Sequence[Term], joints: Sequence[str], action: JointAction | None) -> tuple[Entry, ...]:
    """The observation vector, entry by entry, of `terms` in order."""
    out: list[Entry] = []
    for term in terms:
        out.extend(_scaled(_term_entries(term, joints, action), term.scale))
    return tuple(out)


def _scaled(found: list[Entry], scale: float) -> list[Entry]:
    return [Entry(e.name, e.unit, e.source, e.offset, e.gain * scale) for e in found]


def _term_entries(term: Term, joints: Sequence[str], action: JointAction | None) -> list[Entry]:
    if term.kind in _VECTOR and term.size == 3:
        names, unit, prefix = _VECTOR[term.kind]
        fields = ("x", "y", "z") if prefix != "state" else names
        return [Entry(n, unit, f"{prefix}.{f}") for n, f in zip(names, fields, strict=True)]
    if term.kind == "velocity_command" and term.size == 3:
        return [Entry(n, unit, source) for n, unit, source in _COMMAND]
    if term.kind in ("joint_pos_rel", "joint_pos", "joint_vel") and term.size == len(joints):
        return _joint_entries(term.kind, joints, action)
    if term.kind == "last_action" and action is not None and term.size == len(action.joints):
        return [
            Entry(f"previous_{name}", "rad", f"previous_action[0].{name}", float(offset), 1.0 / float(scale))
            for name, offset, scale in zip(action.names, action.offset, action.scale, strict=True)
        ]
    return [Entry(f"{term.name}_{i}", "", f"state.{term.name}_{i}") for i in range(term.size)]


def _joint_entries(kind: str, joints: Sequence[str], action: JointAction | None) -> list[Entry]:
    if kind == "joint_vel":
        return [Entry(f"{j}_vel", "rad/s", f"joint_states.velocity[{i}]") for i, j in enumerate(joints)]
    defaults = action.default_pos if action is not None else {}
    if kind == "joint_pos_rel":
        missing = [j for j in joints if j not in defaults]
        if missing:
            raise MissingInfoError(
                f"joint_pos_rel needs the default pose of {missing[:4]}: supply the run's env "
                "config (--env-config) or a file with default_joint_pos"
            )
    relative = kind == "joint_pos_rel"
    return [
        Entry(f"{j}_pos", "rad", f"joint_states.position[{i}]", defaults.get(j, 0.0) if relative else 0.0)
        for i, j in enumerate(joints)
    ]
