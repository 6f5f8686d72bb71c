"""ENU/FLU ↔ NED/FRD conversions (robo_rl.real.frames), checked on hand-worked cases from the conventions' own
documents:
- REP 103 ("Standard Units of Measure and Coordinate Conventions"): world ENU (x east, y north, z up), body FLU
  (x forward, y left, z up), right-handed, positive rotations counter-clockwise about the axis;
- PX4 user guide, ROS 2 section "ROS 2 & PX4 Frame Conventions" (docs.px4.io/main/en/ros2/user_guide): PX4 world
  NED, body FRD; "ENU to NED: x_NED = y_ENU, y_NED = x_ENU, z_NED = -z_ENU"; "FLU to FRD: x unchanged, y and z
  negated";
- px4_msgs VehicleOdometry: `q` is the rotation from the FRD body frame to the reference (NED) frame, Hamilton,
  (w, x, y, z).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from robo_rl.real import frames
from robo_rl.real.derive import px4_state, rotation_matrix

TEN_DEG = math.radians(10)


def _yaw(angle: float) -> np.ndarray:
    return np.array([math.cos(angle / 2), 0.0, 0.0, math.sin(angle / 2)])


def _about_y(angle: float) -> np.ndarray:
    return np.array([math.cos(angle / 2), 0.0, math.sin(angle / 2), 0.0])


def test_world_vectors_swap_x_y_and_negate_z() -> None:
    # 1 m east, 2 m north, 3 m up (ENU) is 2 m north, 1 m east, 3 m up = -3 m down (NED).
    np.testing.assert_array_equal(frames.enu_to_ned([1.0, 2.0, 3.0]), [2.0, 1.0, -3.0])
    np.testing.assert_array_equal(frames.ned_to_enu([2.0, 1.0, -3.0]), [1.0, 2.0, 3.0])


def test_body_rates_negate_y_and_z() -> None:
    # Nose up: FRD pitch rate +0.5 (about y to the right); in FLU that is about y to the left, so -0.5.
    np.testing.assert_array_equal(frames.frd_to_flu([0.0, 0.5, 0.0]), [0.0, -0.5, 0.0])
    # Turning left (counter-clockwise seen from above) is +z in FLU (REP 103) and -z in FRD (z down).
    np.testing.assert_array_equal(frames.flu_to_frd([0.0, 0.0, 1.0]), [0.0, 0.0, -1.0])
    np.testing.assert_array_equal(frames.flu_to_frd([0.3, 0.0, 0.0]), [0.3, 0.0, 0.0])  # roll right wing down


@pytest.mark.parametrize(
    ("name", "q_ned_frd", "q_enu_flu"),
    [
        # Level, nose north: PX4's identity; in ENU the body x axis points along +y (north): yaw +90 deg.
        ("level-north", [1.0, 0.0, 0.0, 0.0], _yaw(math.pi / 2)),
        # Level, nose east: PX4 yaw +90 deg (clockwise from north seen from above); ENU's identity.
        ("level-east", _yaw(math.pi / 2), [1.0, 0.0, 0.0, 0.0]),
        # Nose north and 10 deg up: PX4 +10 deg about body y (right); ROS: yaw 90 deg, then -10 deg about body y
        # (left).
        ("pitch-up-north", _about_y(TEN_DEG), frames.quat_multiply(_yaw(math.pi / 2), _about_y(-TEN_DEG))),
    ],
)
def test_attitudes_worked_by_hand(name: str, q_ned_frd: list[float], q_enu_flu: list[float]) -> None:
    np.testing.assert_allclose(frames.ned_frd_to_enu_flu(q_ned_frd), q_enu_flu, atol=1e-12, err_msg=name)
    np.testing.assert_allclose(frames.enu_flu_to_ned_frd(q_enu_flu), q_ned_frd, atol=1e-12, err_msg=name)


def test_pitch_up_raises_the_nose_in_both_conventions() -> None:
    q_ned_frd = _about_y(TEN_DEG)  # PX4: 10 deg nose up, heading north
    nose_ned = rotation_matrix(*q_ned_frd) @ [1.0, 0.0, 0.0]
    assert nose_ned[2] < 0  # z down: the nose points up
    nose_enu = rotation_matrix(*frames.ned_frd_to_enu_flu(q_ned_frd)) @ [1.0, 0.0, 0.0]
    assert nose_enu[2] > 0 and nose_enu[1] > 0.98  # z up: up, and north
    np.testing.assert_allclose(nose_enu, frames.ned_to_enu(nose_ned), atol=1e-12)


def test_every_attitude_maps_body_vectors_consistently() -> None:
    """For any attitude, rotating a body vector in PX4's frames and converting the result equals converting the
    vector and rotating it in ROS's frames; and each conversion is its own inverse."""
    rng = np.random.default_rng(0)
    for _ in range(200):
        q = rng.normal(size=4)
        q /= np.linalg.norm(q)
        v_flu = rng.normal(size=3)
        ros = rotation_matrix(*frames.ned_frd_to_enu_flu(q)) @ v_flu
        px4 = frames.ned_to_enu(rotation_matrix(*q) @ frames.flu_to_frd(v_flu))
        np.testing.assert_allclose(ros, px4, atol=1e-12)
        back = frames.enu_flu_to_ned_frd(frames.ned_frd_to_enu_flu(q))
        np.testing.assert_allclose(back, q if q[0] >= 0 else -q, atol=1e-12)


def _odometry(position: list[float], q: np.ndarray, velocity: list[float], rates: list[float], vframe: int) -> dict:
    fields = {f"odom.position[{i}]": v for i, v in enumerate(position)}
    fields |= {f"odom.q[{i}]": float(v) for i, v in enumerate(q)}
    fields |= {f"odom.velocity[{i}]": v for i, v in enumerate(velocity)}
    fields |= {f"odom.angular_velocity[{i}]": v for i, v in enumerate(rates)}
    return fields | {"odom.pose_frame": 1.0, "odom.velocity_frame": float(vframe)}


def test_px4_odometry_becomes_the_policy_state_in_ros_frames() -> None:
    # 2 m north, 1 m east, 3 m up, climbing at 1 m/s, nose east and level, pitching nose up at 0.5 rad/s (FRD).
    fields = _odometry([2.0, 1.0, -3.0], _yaw(math.pi / 2), [0.0, 0.0, -1.0], [0.0, 0.5, 0.0], vframe=1)
    state = px4_state("state", "odom", fields, target=[1.0, 2.0, 2.0])
    got = [state[f"state.position_error.{a}"] for a in "xyz"]
    np.testing.assert_allclose(got, [0.0, 0.0, 1.0], atol=1e-6)  # ENU (1, 2, 3) minus the target
    np.testing.assert_allclose([state[f"state.velocity.{a}"] for a in "xyz"], [0.0, 0.0, 1.0], atol=1e-6)
    np.testing.assert_allclose([state[f"state.angular_velocity.{a}"] for a in "xyz"], [0.0, -0.5, 0.0], atol=1e-6)
    np.testing.assert_allclose([state[f"state.rotation[{i}]"] for i in range(9)], np.eye(3).reshape(-1), atol=1e-6)


def test_px4_body_frame_velocity_is_rotated_into_the_world() -> None:
    # Nose north, flying forward at 2 m/s in the body FRD frame: 2 m/s north = ENU +y.
    fields = _odometry([0.0, 0.0, 0.0], np.array([1.0, 0.0, 0.0, 0.0]), [2.0, 0.0, 0.0], [0.0, 0.0, 0.0], vframe=3)
    state = px4_state("state", "odom", fields, target=[0.0, 0.0, 0.0])
    np.testing.assert_allclose([state[f"state.velocity.{a}"] for a in "xyz"], [0.0, 2.0, 0.0], atol=1e-6)


@pytest.mark.parametrize("change", ["unknown-pose-frame", "unknown-velocity-frame", "nan-attitude", "missing"])
def test_px4_odometry_that_cannot_be_read_gives_no_state(change: str) -> None:
    fields = _odometry([0.0, 0.0, 0.0], np.array([1.0, 0.0, 0.0, 0.0]), [0.0, 0.0, 0.0], [0.0, 0.0, 0.0], vframe=1)
    edits = {
        "unknown-pose-frame": {"odom.pose_frame": 0.0},
        "unknown-velocity-frame": {"odom.velocity_frame": 0.0},
        "nan-attitude": {"odom.q[0]": math.nan},
    }
    fields |= edits.get(change, {})
    if change == "missing":
        del fields["odom.angular_velocity[2]"]
    assert px4_state("state", "odom", fields, target=[0.0, 0.0, 0.0]) == {}
