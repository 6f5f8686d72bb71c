"""A draft robot profile (`robo_rl.real.profile`) for an imported joint-position policy: the observations with the
topics a ROS graph would read them from, the actions with their bounds and the default pose as the safe command,
and a JointTrajectory command. A draft, said so in its header: the topics, the state estimator's outputs
(`state.*`: e.g. projected gravity) and the rate limits are guesses for the user to check; it loads as a profile,
so policy_node accepts the imported policy with it unchanged."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml

from robo_rl.importers.foreign_onnx import ImportedOnnx
from robo_rl.importers.terms import Entry
from robo_rl.real.profile import JOINT_STATE, JOINT_TRAJECTORY, RobotProfile, profile_from_dict, source_input

_INPUT_TYPES = {
    "odom": "nav_msgs/msg/Odometry",
    "cmd_vel": "geometry_msgs/msg/Twist",
    "state": "std_msgs/msg/Float32MultiArray",
}
HEADER = """\
# DRAFT robot profile written by `robo-rl import` from {source}. Check every line before it drives a robot:
# - joint_states: the driver's sensor_msgs/JointState, read by joint name; odom: the base's Odometry (twist in the
#   base frame, FLU); cmd_vel: the velocity command the policy follows; state: a Float32MultiArray your state
#   estimator publishes with the labels below (e.g. projected_gravity_*: gravity's unit vector in the base frame).
# - safe: the default pose, commanded on faults and stale observations; no rate limits are set (set them).
# - kind `arm`: robo_rl's joint-space kind (legged robots included); driver is left unchecked.
# Assumptions made reading the source:
{assumptions}
"""


def draft_profile(imported: ImportedOnnx, name: str) -> dict[str, Any]:
    """The draft as plain data (a joint-position policy: the source named its joints)."""
    joint = imported.description.action
    meta = imported.artifact
    if joint is None or len(joint.joints) != meta.action.dim:
        raise ValueError("a draft profile is written for joint-position policies (mjlab, Isaac Lab) only")
    assert meta.dt is not None and meta.task is not None  # an imported artifact always has both
    observations = [{"name": e.name, "source": e.source, "unit": e.unit} for e in imported.entries]
    actions = [
        {"name": n, "unit": u, "low": lo, "high": hi, "safe": min(max(float(default), lo), hi)}
        for n, u, lo, hi, default in zip(
            meta.action.names, meta.action.units, meta.action.low, meta.action.high, joint.offset, strict=True
        )
    ]
    fields = [{"action": n, "field": f"points[0].positions[{i}]"} for i, n in enumerate(meta.action.names)]
    return {
        "name": name,
        "driver": "",
        "kind": "arm",
        "task": meta.task,
        "dt": meta.dt,
        "dt_tolerance": 0.0001,
        "staleness_timeout": round(3 * meta.dt, 6),
        "observations": observations,
        "inputs": _inputs(imported.entries, imported.description.joints),
        "actions": actions,
        "commands": [
            {"type": JOINT_TRAJECTORY, "topic": "joint_trajectory", "joint_names": list(joint.joints), "fields": fields}
        ],
    }


def _inputs(found: Sequence[Entry], joints: Sequence[str]) -> list[dict[str, Any]]:
    names = []
    for entry in found:
        name = source_input(entry.source)
        if name != "previous_action" and name not in names:
            names.append(name)
    out: list[dict[str, Any]] = []
    for name in names:
        if name == "joint_states":
            out.append({"name": name, "type": JOINT_STATE, "joints": list(joints)})
        elif name == "state":
            labels = [e.source.split(".", 1)[1] for e in found if source_input(e.source) == "state"]
            out.append({"name": name, "type": _INPUT_TYPES[name], "labels": labels})
        else:
            out.append({"name": name, "type": _INPUT_TYPES[name]})
    return out


def write_draft_profile(imported: ImportedOnnx, path: Path) -> RobotProfile:
    """Write the draft to `path` (YAML with its header) and return it as loaded (a draft that does not load is a
    bug, raised here)."""
    data = draft_profile(imported, path.stem)
    profile = profile_from_dict(data, path.name)
    assumptions = "\n".join(f"#   - {a}" for a in imported.description.assumptions) or "#   (none)"
    header = HEADER.format(source=imported.description.label, assumptions=assumptions)
    body = yaml.safe_dump(data, sort_keys=False, default_flow_style=None, width=120)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(header + body, encoding="utf-8")
    return profile
