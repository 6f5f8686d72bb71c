"""Derived observation sources: the quadrotor state from odometry matches the simulator's own observation."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from robo_rl.real.derive import (
    SOURCE_WRITERS,
    labelled_fields,
    px4_odometry,
    px4_state,
    quadrotor_odometry,
    quadrotor_state,
    rotation_matrix,
)
from robo_rl.real.profile import DERIVATIONS, InputSpec, load_profile
from robo_rl.sim import make


def test_quadrotor_state_from_odometry_equals_the_simulators_observation() -> None:
    env = make("quadrotor/hover", num_envs=4, seed=3, params=("target_position=[0.5,-0.2,1.0]",))
    torch.manual_seed(0)
    for _ in range(20):  # tumble a little so that attitude and velocity are far from the identity and zero
        obs = env.step(torch.rand(4, 4) * 2 - 1)[0]
    names = env.obs_spec.names
    for index in range(4):
        odom = {f"odom.{k}": v for k, v in quadrotor_odometry(env.state[index].numpy()).items()}
        derived = quadrotor_state("state", "odom", odom, (0.5, -0.2, 1.0))
        profile = load_profile("quadrotor_crazyflie")
        for field in profile.observations:
            if field.source.startswith("state."):
                expected = float(obs[index, names.index(field.name)])
                assert derived[field.source] == pytest.approx(expected, abs=2e-5), field.name


def test_quadrotor_state_waits_for_every_field_and_normalizes_the_quaternion() -> None:
    assert quadrotor_state("state", "odom", {"odom.pose.pose.position.x": 1.0}, (0, 0, 0)) == {}
    np.testing.assert_allclose(rotation_matrix(2.0, 0.0, 0.0, 0.0), np.eye(3))
    np.testing.assert_allclose(rotation_matrix(0.0, 0.0, 0.0, 0.0), np.eye(3))
    # 90° about z: body x points along world y.
    np.testing.assert_allclose(rotation_matrix(np.sqrt(0.5), 0, 0, np.sqrt(0.5)) @ [1, 0, 0], [0, 1, 0], atol=1e-12)


def test_a_non_finite_quaternion_gives_no_rotation() -> None:
    # Found by the soak (bench/soak.py): a NaN orientation was read as level (the identity) and the policy flew on it.
    for bad in (np.nan, np.inf, -np.inf):
        assert np.isnan(rotation_matrix(1.0, 0.0, bad, 0.0)).all()
        assert np.isnan(rotation_matrix(bad, 0.0, 0.0, 0.0)).all()


def test_labelled_fields_name_array_elements_and_leave_missing_ones_out() -> None:
    spec = InputSpec(name="track", type="std_msgs/msg/Float32MultiArray", labels=("a", "b[1]", "c"))
    assert labelled_fields(spec, [1.0, 2.0]) == {"track.a": 1.0, "track.b[1]": 2.0}


def test_px4_odometry_read_by_px4_state_is_the_simulators_observation() -> None:
    """What sim_bridge publishes as PX4's VehicleOdometry, read back as policy_node reads PX4 (`px4_state`), is the
    simulator's own observation: position error, attitude, world velocity and body rates; for flown states and
    for a tumbling one (upside down, spinning fast about all three axes)."""
    target = (0.5, -0.2, 1.0)
    params = ("target_position=[0.5,-0.2,1.0]", "action_mode=ctbr", "max_tilt=3.1415", "init_attitude_range=3.1415")
    env = make("quadrotor/hover", num_envs=4, seed=5, params=params)
    torch.manual_seed(1)
    for _ in range(10):
        env.step(torch.rand(4, 4) * 2 - 1)
    state = env.state.clone()
    state[0, 0:3] = torch.tensor([0.7, -0.4, 1.3])
    state[0, 3:7] = torch.tensor([0.1, 0.9, -0.3, 0.2])  # nearly upside down (renormalized by set_state)
    state[0, 7:10] = torch.tensor([1.5, -2.0, 0.5])
    state[0, 10:13] = torch.tensor([9.0, -7.0, 4.0])
    env.set_state(state)
    obs, _, terminated, truncated, _ = env.step(torch.rand(4, 4) * 2 - 1)
    assert not bool((terminated | truncated).any())
    names, profile = env.obs_spec.names, load_profile("quadrotor_px4")
    # Still tumbling after the step: body z pointing down, spinning at more than 5 rad/s.
    assert float(obs[0, names.index("rotation_22")]) < -0.5 and float(env.state[0, 10:13].norm()) > 5.0
    checked = 0
    for index in range(4):
        odom = {f"odom.{k}": v for k, v in px4_odometry(env.state[index].numpy()).items()}
        derived = px4_state("state", "odom", odom, target)
        for field in profile.observations:
            if field.source.startswith("state."):
                expected = float(obs[index, names.index(field.name)])
                assert derived[field.source] == pytest.approx(expected, abs=2e-5), (index, field.name)
                checked += 1
    assert checked == 4 * 18  # position error 3, rotation 9, velocity 3, body rates 3


def _rx(angle: float) -> np.ndarray:
    c, s = np.cos(angle), np.sin(angle)
    return np.array([[1.0, 0.0, 0.0], [0.0, c, -s], [0.0, s, c]])


def _rz(angle: float) -> np.ndarray:
    c, s = np.cos(angle), np.sin(angle)
    return np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])


def test_px4_odometry_follows_px4_ros_com_frame_transforms() -> None:
    """Worked by hand against px4_ros_com's convention (PX4/px4_ros_com, src/lib/frame_transforms.cpp and
    include/px4_ros_com/frame_transforms.h at 2971ccf): world vectors ENU → NED are (x, y, z) → (y, x, -z)
    (`transform_static_frame`, NED_ENU_REFLECTION_XY then _Z); body vectors FLU → FRD are (x, y, z) → (x, -y, -z)
    (AIRCRAFT_BASELINK, a half turn about x); an attitude ENU←FLU becomes NED←FRD as NED_ENU_Q ⊗ q ⊗
    AIRCRAFT_BASELINK_Q (`transform_orientation` for ENU_TO_NED, then for BASELINK_TO_AIRCRAFT), with NED_ENU_Q
    = quaternion_from_euler(pi, 0, pi/2), i.e. Rz(pi/2) Rx(pi), and AIRCRAFT_BASELINK_Q = Rx(pi)."""
    # 1 m east, 2 m north, 3 m up; level, nose east (ROS's identity attitude); flying east 0.5, south 1, up 2 m/s;
    # rolling 0.1, pitching 0.2, yawing 0.3 rad/s (FLU).
    state = [1.0, 2.0, 3.0, 1.0, 0.0, 0.0, 0.0, 0.5, -1.0, 2.0, 0.1, 0.2, 0.3] + [0.0] * 4
    fields = px4_odometry(state)
    np.testing.assert_allclose([fields[f"position[{i}]"] for i in range(3)], [2.0, 1.0, -3.0])
    np.testing.assert_allclose([fields[f"velocity[{i}]"] for i in range(3)], [-1.0, 0.5, -2.0])
    np.testing.assert_allclose([fields[f"angular_velocity[{i}]"] for i in range(3)], [0.1, -0.2, -0.3])
    # Nose east in NED is a 90 degree yaw clockwise from north (about z down): q = (cos 45, 0, 0, sin 45).
    half = np.sqrt(0.5)
    np.testing.assert_allclose([fields[f"q[{i}]"] for i in range(4)], [half, 0.0, 0.0, half], atol=1e-12)
    assert (fields["pose_frame"], fields["velocity_frame"]) == (1.0, 1.0)  # POSE_FRAME_NED, VELOCITY_FRAME_NED
    # Any attitude: the rotation of PX4's quaternion is Rz(pi/2) Rx(pi) · R_ENU←FLU · Rx(pi).
    rng = np.random.default_rng(2)
    for _ in range(20):
        q = rng.normal(size=4)
        q /= np.linalg.norm(q)
        fields = px4_odometry([0.0, 0.0, 0.0, *q, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0])
        expected = _rz(np.pi / 2) @ _rx(np.pi) @ rotation_matrix(*q) @ _rx(np.pi)
        np.testing.assert_allclose(rotation_matrix(*[fields[f"q[{i}]"] for i in range(4)]), expected, atol=1e-12)
        assert fields["q[0]"] >= 0.0


def test_every_derivation_has_a_source_a_simulator_can_publish() -> None:
    """sim_bridge publishes the input each derived input reads; a new derivation needs its writer."""
    assert set(SOURCE_WRITERS) == set(DERIVATIONS)
