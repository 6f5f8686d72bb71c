"""Flight logs from a robo_rl recorder bag (rosbag2, MCAP or sqlite3; `robo_rl.real.ros.recorder`) of a quadrotor
flown with the quadrotor_crazyflie profile (robo_rl/real/profiles/quadrotor_crazyflie.yaml).

Topics (relative to the namespace): `odom`, nav_msgs/msg/Odometry with the pose in a z-up world frame and the twist
in the body frame (REP 105, as the profile and `robo_rl.real.derive.quadrotor_state` read it), and `cmd_motors`,
std_msgs/msg/Float32MultiArray with the rotors' PWM 0..65535 in data[0..3] (the profile's commands: 32767.5 +
32767.5 * action, so command = PWM / 65535). Both are timed by the bag's receive stamps (one clock). The log's
samples are the commands: the odometry is interpolated to each command's time (linearly; the attitude by normalized
linear interpolation), which keeps the command steps sharp for the motor model. Needs rosbags (.venv-ros).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from robo_rl.storage.rosbag_file import read_bag
from robo_rl.sysid.crazyflie_csv import PWM_FULL
from robo_rl.sysid.flight_log import FlightLog, NotIdentifiable

ODOMETRY_TOPIC = "odom"
COMMAND_TOPIC = "cmd_motors"


def _topic(namespace: str, name: str) -> str:
    return f"{namespace.rstrip('/')}/{name}"


def read_recorder_bag(bag: Path, namespace: str = "/") -> FlightLog:
    """The bag's flight (see the module docstring); NotIdentifiable (one line) when a topic is missing."""
    try:
        import rosbags  # noqa: F401
    except ModuleNotFoundError:
        raise ValueError(
            "reading a bag needs rosbags: run from .venv-ros (make ros-venv) or pip install rosbags"
        ) from None
    odom_topic, command_topic = _topic(namespace, ODOMETRY_TOPIC), _topic(namespace, COMMAND_TOPIC)
    odometry: list[list[float]] = []
    commands: list[list[float]] = []
    with read_bag(bag) as reader:
        topics = {c.topic for c in reader.connections}
        missing = [t for t in (odom_topic, command_topic) if t not in topics]
        if missing:
            raise NotIdentifiable(f"{bag}: no topic {', '.join(missing)} in the bag (it has {sorted(topics)})")
        wanted = [c for c in reader.connections if c.topic in (odom_topic, command_topic)]
        for connection, stamp, raw in reader.messages(wanted):
            message: Any = reader.deserialize(raw, connection.msgtype)
            if connection.topic == odom_topic:
                odometry.append([stamp * 1e-9, *_odometry_values(message)])
            elif len(message.data) >= 4:
                commands.append([stamp * 1e-9, *(float(v) for v in message.data[:4])])
    if len(odometry) < 2 or len(commands) < 2:
        raise NotIdentifiable(f"{bag}: {len(odometry)} odometry and {len(commands)} command messages: too few")
    return _resampled(np.asarray(odometry), np.asarray(commands), f"{bag.name} (recorder bag {namespace})")


def _odometry_values(message: object) -> list[float]:
    pose, twist = message.pose.pose, message.twist.twist  # type: ignore[attr-defined]
    p, q, v, w = pose.position, pose.orientation, twist.linear, twist.angular
    return [p.x, p.y, p.z, q.w, q.x, q.y, q.z, v.x, v.y, v.z, w.x, w.y, w.z]


def _resampled(odometry: np.ndarray, commands: np.ndarray, source: str) -> FlightLog:
    """Commands (M, 5) = time, PWM x 4 and odometry (K, 14) = time, position, quaternion, body velocity, body
    rates, as a FlightLog on the command times inside the odometry's span."""
    from robo_rl.sysid.airframe import quaternion_matrices

    odometry = odometry[np.argsort(odometry[:, 0], kind="stable")]
    commands = commands[np.argsort(commands[:, 0], kind="stable")]
    _, last = np.unique(commands[::-1, 0], return_index=True)
    commands = commands[::-1][last]  # one command per stamp: the last received
    _, first = np.unique(odometry[:, 0], return_index=True)
    odometry = odometry[first]
    inside = (commands[:, 0] >= odometry[0, 0]) & (commands[:, 0] <= odometry[-1, 0])
    commands = commands[inside]
    if len(commands) < 2:
        raise NotIdentifiable(f"{source}: the commands and the odometry do not overlap in time")
    quaternion = odometry[:, 4:8].copy()
    flips = np.cumprod(np.where(np.einsum("ki,ki->k", quaternion[1:], quaternion[:-1]) < 0, -1.0, 1.0))
    quaternion[1:] *= flips[:, None]  # one hemisphere, so that interpolating does not take the long way
    world_velocity = np.einsum("kij,kj->ki", quaternion_matrices(quaternion), odometry[:, 8:11])
    t = commands[:, 0]
    at = lambda values: np.column_stack([np.interp(t, odometry[:, 0], v) for v in values.T])  # noqa: E731
    attitude = at(quaternion)
    return FlightLog(
        time=t - t[0],
        position=at(odometry[:, 1:4]),
        quaternion=attitude / np.linalg.norm(attitude, axis=1, keepdims=True),
        velocity=at(world_velocity),
        body_rates=at(odometry[:, 11:14]),
        commands=commands[:, 1:5] / PWM_FULL,
        specific_force=None,
        source=source,
    )
