"""Derived observation sources: the quadrotor state from odometry matches the simulator's own observation."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from robo_rl.real.derive import labelled_fields, quadrotor_odometry, quadrotor_state, rotation_matrix
from robo_rl.real.profile import InputSpec, load_profile
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


def test_labelled_fields_name_array_elements_and_leave_missing_ones_out() -> None:
    spec = InputSpec(name="track", type="std_msgs/msg/Float32MultiArray", labels=("a", "b[1]", "c"))
    assert labelled_fields(spec, [1.0, 2.0]) == {"track.a": 1.0, "track.b[1]": 2.0}
