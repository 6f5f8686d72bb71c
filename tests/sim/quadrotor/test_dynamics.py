"""Rigid-body dynamics against hand-computed motion: hover, free fall, torque-free spin, motor lag, signs."""

from __future__ import annotations

import dataclasses
import math

import pytest
import torch

from robo_rl.sim.quadrotor.dynamics import (
    ANGULAR_VELOCITY,
    POSITION,
    QUATERNION,
    ROTOR_SPEED,
    VELOCITY,
    DynamicsParams,
    integrate,
    pack_state,
    quat_to_rotmat,
    rotation_rows,
    state_derivative,
    state_parts,
)
from robo_rl.sim.quadrotor.params import QuadrotorParams, load_frame

F64 = torch.float64
CF = load_frame("crazyflie_2_1")
G = CF.gravity


def _params(frame: QuadrotorParams = CF, n: int = 1, dtype: torch.dtype = F64) -> DynamicsParams:
    return DynamicsParams.nominal(frame, n, dtype=dtype)


def _state(
    n: int = 1,
    rotor: float | torch.Tensor = 0.0,
    position: tuple[float, float, float] = (0.0, 0.0, 0.0),
    angular_velocity: tuple[float, float, float] = (0.0, 0.0, 0.0),
    dtype: torch.dtype = F64,
) -> torch.Tensor:
    """Component-major `(17, n)` state at rest, level, with the given rotor speeds."""

    def rows(values: tuple[float, ...]) -> torch.Tensor:
        return torch.tensor(values, dtype=dtype).expand(n, len(values))

    rotor_speed = torch.as_tensor(rotor, dtype=dtype).expand(n, 4)
    quaternion, zero = rows((1.0, 0.0, 0.0, 0.0)), rows((0.0, 0.0, 0.0))
    return pack_state(rows(position), quaternion, zero, rows(angular_velocity), rotor_speed)


def _command(state: torch.Tensor) -> torch.Tensor:
    return state[ROTOR_SPEED].clone()


def test_hover_speed_holds_position_for_one_second() -> None:
    state = _state(rotor=CF.hover_rotor_speed)
    params, command = _params(), _command(state)
    for _ in range(100):
        state = integrate(state, command, params, dt=0.01)
        assert state[POSITION].abs().max() < 1e-6
    assert state[VELOCITY].abs().max() < 1e-6


def test_free_fall_follows_g_t_squared_over_two() -> None:
    z0 = 10.0
    state = _state(position=(0.0, 0.0, z0))
    params, command = _params(), _command(state)
    for k in range(1, 101):
        state = integrate(state, command, params, dt=0.01)
        t = 0.01 * k
        assert state[2, 0].item() == pytest.approx(z0 - G * t**2 / 2, abs=1e-6)
        assert state[9, 0].item() == pytest.approx(-G * t, abs=1e-9)
    assert state[0:2].abs().max() == 0.0


def test_semi_implicit_euler_free_fall_matches_its_closed_form() -> None:
    # v_k = -g k h, z_k = z_0 - g h^2 k (k + 1) / 2: velocity first, then position with the new velocity.
    h, z0 = 0.01, 10.0
    state = _state(position=(0.0, 0.0, z0))
    params, command = _params(), _command(state)
    for k in range(1, 51):
        state = integrate(state, command, params, dt=h, integrator="semi_implicit_euler")
        assert state[2, 0].item() == pytest.approx(z0 - G * h**2 * k * (k + 1) / 2, abs=1e-9)


def _angular_momentum_and_energy(state: torch.Tensor, inertia: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    parts = state_parts(state)
    body_momentum = inertia * parts.angular_velocity  # (n, 3)
    world = (quat_to_rotmat(parts.quaternion) @ body_momentum.unsqueeze(-1)).squeeze(-1)
    energy = 0.5 * (body_momentum * parts.angular_velocity).sum(-1)
    return world, energy


def test_torque_free_spin_conserves_world_angular_momentum_and_energy() -> None:
    inertia = (1.0e-5, 2.0e-5, 3.5e-5)  # asymmetric
    frame = dataclasses.replace(CF, inertia=inertia)
    params = _params(frame)
    state = _state(angular_velocity=(4.0, 1.0, -2.0))  # not about a principal axis: the body rates precess
    inertia_rows = torch.tensor(inertia, dtype=F64)
    momentum0, energy0 = _angular_momentum_and_energy(state, inertia_rows)
    rate0, command = state[ANGULAR_VELOCITY].clone(), _command(state)
    largest_rate_change = 0.0
    for _ in range(200):  # 2 s
        state = integrate(state, command, params, dt=0.01, substeps=5)
        momentum, energy = _angular_momentum_and_energy(state, inertia_rows)
        torch.testing.assert_close(momentum, momentum0, rtol=0, atol=1e-8 * momentum0.norm().item())
        torch.testing.assert_close(energy, energy0, rtol=1e-8, atol=0)
        largest_rate_change = max(largest_rate_change, (state[ANGULAR_VELOCITY] - rate0).abs().max().item())
    assert largest_rate_change > 1.0, "the gyroscopic term must actually move the body rates"


def test_quaternion_stays_unit_under_random_commands() -> None:
    n = 64
    generator = torch.Generator().manual_seed(0)
    params = _params(n=n, dtype=torch.float32)
    state = _state(n, rotor=CF.hover_rotor_speed, dtype=torch.float32)
    state[ANGULAR_VELOCITY] = torch.randn(3, n, generator=generator) * 5
    for _ in range(200):
        command = torch.rand(4, n, generator=generator) * CF.max_rotor_speed
        state = integrate(state, command, params, dt=0.01)
        norm = state[QUATERNION].square().sum(0).sqrt()
        assert (norm - 1).abs().max() < 1e-6


@pytest.mark.parametrize(("start", "target"), [(0.0, CF.max_rotor_speed), (CF.max_rotor_speed, 500.0)])
def test_motor_step_response_reaches_63_percent_after_one_time_constant(start: float, target: float) -> None:
    state = _state(rotor=start)
    command = torch.full((4, 1), target, dtype=F64)
    params = _params()
    steps = round(CF.motor_time_constant / 0.01)
    for _ in range(steps):
        state = integrate(state, command, params, dt=0.01)
    progress = (state[ROTOR_SPEED] - start) / (target - start)
    assert progress.min().item() == pytest.approx(1 - math.exp(-1), abs=0.01)
    assert progress.max().item() == pytest.approx(0.632, abs=0.01)


def _angular_acceleration(rotor: tuple[float, float, float, float]) -> torch.Tensor:
    state = _state(rotor=torch.tensor(rotor, dtype=F64))
    params = _params()
    return state_derivative(state, _command(state), params, params.gravity_vector)[ANGULAR_VELOCITY, 0]


def test_rotor_differences_give_roll_pitch_yaw_with_the_documented_signs() -> None:
    w, d = CF.hover_rotor_speed, 50.0
    # Rotors: 0 front-right (ccw), 1 back-right (cw), 2 back-left (ccw), 3 front-left (cw).
    roll = _angular_acceleration((w - d, w - d, w + d, w + d))  # left side pushes up
    pitch = _angular_acceleration((w - d, w + d, w + d, w - d))  # back pushes up
    yaw_cw = _angular_acceleration((w - d, w + d, w - d, w + d))  # cw rotors faster: body turns ccw
    assert roll[0] > 0 and abs(roll[1]) < 1e-9 * roll[0] and abs(roll[2]) < 1e-9 * roll[0]
    assert pitch[1] > 0 and abs(pitch[0]) < 1e-9 * pitch[1] and abs(pitch[2]) < 1e-9 * pitch[1]
    assert yaw_cw[2] > 0 and abs(yaw_cw[0]) < 1e-9 * yaw_cw[2] and abs(yaw_cw[1]) < 1e-9 * yaw_cw[2]
    # Hand-computed roll torque: 2 arm offsets x thrust difference.
    offset = CF.arm_length / math.sqrt(2)
    thrust_left, thrust_right = CF.thrust_coefficient * (w + d) ** 2, CF.thrust_coefficient * (w - d) ** 2
    expected_roll = 2 * offset * (thrust_left - thrust_right) / CF.inertia[0]
    assert roll[0].item() == pytest.approx(expected_roll, rel=1e-12)
    expected_yaw = 2 * CF.torque_coefficient * ((w + d) ** 2 - (w - d) ** 2) / CF.inertia[2]
    assert yaw_cw[2].item() == pytest.approx(expected_yaw, rel=1e-12)


def test_positive_roll_lifts_the_left_side_and_positive_pitch_lowers_the_nose() -> None:
    w, d = CF.hover_rotor_speed, 20.0
    for rotor, axis_row in (((w - d, w - d, w + d, w + d), 7), ((w - d, w + d, w + d, w - d), 6)):
        state = _state(rotor=torch.tensor(rotor, dtype=F64))
        params, command = _params(), _command(state)
        for _ in range(10):
            state = integrate(state, command, params, dt=0.01)
        rotation = rotation_rows(state[QUATERNION])[:, 0]
        # Row 7 = R21: world z of the body y (left) axis; row 6 = R20: world z of the body x (nose) axis.
        assert (rotation[axis_row] > 0.01) if axis_row == 7 else (rotation[axis_row] < -0.01)


def test_fast_rotation_matrix_matches_quat_to_rotmat() -> None:
    quaternion = torch.nn.functional.normalize(torch.randn(50, 4, generator=torch.Generator().manual_seed(1)), dim=-1)
    expected = quat_to_rotmat(quaternion).reshape(50, 9)
    fast = rotation_rows(quaternion.T.to(F64).contiguous()).T
    torch.testing.assert_close(fast, expected.to(F64), rtol=0, atol=1e-6)
    rotation = quat_to_rotmat(quaternion)
    torch.testing.assert_close(rotation @ rotation.transpose(-1, -2), torch.eye(3).expand(50, 3, 3), atol=1e-6, rtol=0)
    assert torch.allclose(torch.linalg.det(rotation), torch.ones(50), atol=1e-6)


def test_external_force_and_torque_accelerate_as_f_over_m_and_tau_over_i() -> None:
    state = _state(rotor=CF.hover_rotor_speed)
    params, command = _params(), _command(state)
    force = torch.tensor([[0.01], [-0.02], [0.005]], dtype=F64)
    torque = torch.tensor([[1e-6], [0.0], [0.0]], dtype=F64)
    pushed = integrate(state, command, params, dt=0.01, external_force=force)
    torch.testing.assert_close(pushed[VELOCITY], force / CF.mass * 0.01, rtol=1e-9, atol=1e-12)
    twisted = integrate(state, command, params, dt=0.01, external_torque=torque)
    assert twisted[10, 0].item() == pytest.approx(1e-6 / CF.inertia[0] * 0.01, rel=1e-9)
    assert twisted[11:13].abs().max() < 1e-12


def test_parameters_can_differ_per_env() -> None:
    params = _params(n=2).scaled(torch.tensor([[1.0, 2.0]] + [[1.0, 1.0]] * 6, dtype=F64))
    state = _state(2, rotor=CF.hover_rotor_speed)
    after = integrate(state, _command(state), params, dt=0.01)
    assert abs(after[9, 0].item()) < 1e-9  # nominal mass hovers
    assert after[9, 1].item() == pytest.approx((G / 2 - G) * 0.01, rel=1e-9)  # double mass sinks at g/2
