"""Observation sources computed on the robot side: labelled array elements and the quadrotor's derived state.

Pure functions on flat field dicts (`odom.pose.pose.position.x` → value), shared by the ROS nodes and their tests.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import numpy as np

from robo_rl.real import frames
from robo_rl.real.profile import InputSpec, RobotProfile

AXES = ("x", "y", "z")


def labelled_fields(spec: InputSpec, data: Sequence[float]) -> dict[str, float]:
    """`NAME.label` → `data[i]` for a `*MultiArray` input; elements beyond `len(data)` are left out (missing)."""
    return {f"{spec.name}.{label}": float(value) for label, value in zip(spec.labels, data, strict=False)}


def rotation_matrix(w: float, x: float, y: float, z: float) -> np.ndarray:
    """Body-to-world rotation `(3, 3)` of a quaternion (normalized first; the identity for a zero quaternion, NaN for
    a non-finite one, so that the observation is non-finite and the safe command goes out, never a made-up level
    attitude)."""
    q = np.array([w, x, y, z], dtype=np.float64)
    if not np.all(np.isfinite(q)):
        return np.full((3, 3), np.nan)
    norm = np.linalg.norm(q)
    if not norm > 0:
        return np.eye(3)
    w, x, y, z = q / norm
    return np.array(
        [
            [1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
            [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
            [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)],
        ]
    )


def quadrotor_state(name: str, odom: str, fields: Mapping[str, float], target: Sequence[float]) -> dict[str, float]:
    """The quadrotor's policy state from an Odometry input `odom` (pose in a z-up world, twist in the body frame).

    `NAME.position_error.{x,y,z}` = position − target (m), `NAME.rotation[0..8]` = body-to-world rotation row-major,
    `NAME.velocity.{x,y,z}` = world-frame velocity (m/s), as robo_rl's quadrotor/hover observes them. Returns {}
    until every pose and twist field has arrived, so the assembler reports the missing sources.
    """
    pose, twist = f"{odom}.pose.pose", f"{odom}.twist.twist.linear"
    keys = [f"{pose}.position.{a}" for a in AXES] + [f"{pose}.orientation.{a}" for a in ("w", *AXES)]
    keys += [f"{twist}.{a}" for a in AXES]
    if any(key not in fields for key in keys):
        return {}
    values = np.array([fields[key] for key in keys], dtype=np.float64)
    rotation = rotation_matrix(*values[3:7])
    error = values[0:3] - np.asarray(target, dtype=np.float64)
    velocity = rotation @ values[7:10]
    derived = {f"{name}.position_error.{a}": float(error[i]) for i, a in enumerate(AXES)}
    derived |= {f"{name}.rotation[{i}]": float(v) for i, v in enumerate(rotation.reshape(-1))}
    derived |= {f"{name}.velocity.{a}": float(velocity[i]) for i, a in enumerate(AXES)}
    return derived


def quadrotor_odometry(state: Sequence[float]) -> dict[str, float]:
    """Odometry fields (pose in the z-up world, body-frame linear velocity) of a robo_rl quadrotor state `(17,)`
    (position, quaternion w x y z, world velocity, ...): what a driver publishes, and what `quadrotor_state` reads."""
    values = np.asarray(state, dtype=np.float64)
    w, x, y, z = (float(v) for v in values[3:7])
    body_velocity = rotation_matrix(w, x, y, z).T @ values[7:10]
    fields = {f"pose.pose.position.{a}": float(state[i]) for i, a in enumerate(AXES)}
    fields |= {f"pose.pose.orientation.{a}": v for a, v in zip(("w", *AXES), (w, x, y, z), strict=True)}
    fields |= {f"twist.twist.linear.{a}": float(body_velocity[i]) for i, a in enumerate(AXES)}
    return fields


PX4_POSE_FRAMES = {1: "NED", 2: "FRD"}
"""VehicleOdometry.pose_frame values this reads (UNKNOWN, 0, is not)."""
PX4_VELOCITY_FRAMES = {1: "NED", 2: "FRD", 3: "BODY_FRD"}
"""VehicleOdometry.velocity_frame values this reads (UNKNOWN, 0, is not)."""
PX4_ODOMETRY_FIELDS = (
    tuple(f"position[{i}]" for i in range(3))
    + tuple(f"q[{i}]" for i in range(4))
    + tuple(f"velocity[{i}]" for i in range(3))
    + tuple(f"angular_velocity[{i}]" for i in range(3))
    + ("pose_frame", "velocity_frame")
)
"""The VehicleOdometry fields `px4_state` reads."""


PX4_POSE_FRAME_NED = 1
"""VehicleOdometry.POSE_FRAME_NED (px4_msgs)."""
PX4_VELOCITY_FRAME_NED = 1
"""VehicleOdometry.VELOCITY_FRAME_NED (px4_msgs)."""


def px4_odometry(state: Sequence[float]) -> dict[str, float]:
    """VehicleOdometry fields (px4_msgs) of a robo_rl quadrotor state `(17,)` (position, quaternion w x y z FLU body
    → ENU world, world velocity, FLU body rates, ... in REP 103's frames), as PX4 publishes them and `px4_state`
    reads them: `position[0..2]` NED (m), `q[0..3]` FRD body → NED (w x y z, w ≥ 0), `velocity[0..2]` NED (m/s),
    `angular_velocity[0..2]` FRD body (rad/s), `pose_frame` and `velocity_frame` NED. The microsecond
    `timestamp` and `timestamp_sample` are the publisher's to set."""
    values = np.asarray(state, dtype=np.float64)
    parts = (
        ("position", frames.enu_to_ned(values[0:3])),
        ("q", frames.enu_flu_to_ned_frd(values[3:7])),
        ("velocity", frames.enu_to_ned(values[7:10])),
        ("angular_velocity", frames.flu_to_frd(values[10:13])),
    )
    fields = {f"{field}[{i}]": float(v) for field, vector in parts for i, v in enumerate(vector)}
    return fields | {"pose_frame": float(PX4_POSE_FRAME_NED), "velocity_frame": float(PX4_VELOCITY_FRAME_NED)}


def px4_state(name: str, odom: str, fields: Mapping[str, float], target: Sequence[float]) -> dict[str, float]:
    """The quadrotor's policy state from PX4's `VehicleOdometry` input `odom` (px4_msgs: position, attitude
    FRD body → NED, velocity in `velocity_frame`, body angular velocity FRD), in robo_rl's conventions (ENU world,
    FLU body; `robo_rl.real.frames`).

    `NAME.position_error.*` (ENU, m, to `target`, ENU), `NAME.rotation[0..8]` (FLU body → ENU, row-major),
    `NAME.velocity.*` (ENU, m/s), `NAME.angular_velocity.*` (FLU body, rad/s). A world FRD frame (arbitrary
    heading, z down) is read like NED. Returns {} until every field has arrived, while a frame is UNKNOWN, and
    while PX4 marks a value invalid (NaN): the assembler then reports `state` missing and the safe command goes out.
    """
    keys = [f"{odom}.{path}" for path in PX4_ODOMETRY_FIELDS]
    if any(key not in fields for key in keys):
        return {}
    values = np.array([fields[key] for key in keys], dtype=np.float64)
    pose_frame, velocity_frame = int(values[13]), int(values[14])
    if pose_frame not in PX4_POSE_FRAMES or velocity_frame not in PX4_VELOCITY_FRAMES:
        return {}
    if not np.all(np.isfinite(values[:13])):
        return {}
    q_enu_flu = frames.ned_frd_to_enu_flu(values[3:7])
    rotation = rotation_matrix(*q_enu_flu)
    position = frames.ned_to_enu(values[0:3])
    if PX4_VELOCITY_FRAMES[velocity_frame] == "BODY_FRD":
        velocity = rotation @ frames.frd_to_flu(values[7:10])
    else:
        velocity = frames.ned_to_enu(values[7:10])
    angular_velocity = frames.frd_to_flu(values[10:13])
    error = position - np.asarray(target, dtype=np.float64)
    derived = {f"{name}.position_error.{a}": float(error[i]) for i, a in enumerate(AXES)}
    derived |= {f"{name}.rotation[{i}]": float(v) for i, v in enumerate(rotation.reshape(-1))}
    derived |= {f"{name}.velocity.{a}": float(velocity[i]) for i, a in enumerate(AXES)}
    derived |= {f"{name}.angular_velocity.{a}": float(angular_velocity[i]) for i, a in enumerate(AXES)}
    return derived


SOURCE_WRITERS: dict[str, Callable[[Sequence[float]], dict[str, float]]] = {
    "quadrotor_state": quadrotor_odometry,
    "px4_state": px4_odometry,
}
"""Per derivation: the fields of the message it reads, from a robo_rl quadrotor state `(17,)` (what a simulator
standing in for the robot's driver publishes)."""


def derive(spec: InputSpec, fields: Mapping[str, float], target: Sequence[float]) -> dict[str, float]:
    """The fields of a derived input (`spec.derive`), computed from the current `fields`."""
    if spec.derive == "quadrotor_state":
        return quadrotor_state(spec.name, spec.source, fields, target)
    if spec.derive == "px4_state":
        return px4_state(spec.name, spec.source, fields, target)
    raise ValueError(f"unknown derivation {spec.derive!r}")


def derived_fields(profile: RobotProfile, fields: dict[str, float], target: Sequence[float]) -> dict[str, float]:
    """The fields of every derived input, computed from the current `fields`."""
    derived: dict[str, float] = {}
    for spec in profile.inputs:
        if spec.derive:
            derived |= derive(spec, fields, target)
    return derived
