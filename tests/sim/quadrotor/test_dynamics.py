"""Rigid-body dynamics against hand-computed motion: hover, free fall, torque-free spin, the thrust polynomial and
yaw torque, rise and fall motor lags, linear drag, signs."""

from __future__ import annotations

import dataclasses
import math

import pytest
import torch

from robo_rl.sim.quadrotor.dynamics import (
    ANGULAR_VELOCITY,
    MOTOR_STATE,
    POSITION,
    QUATERNION,
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
BARE = load_frame("crazyflie_2_1_bare_2023")
G = CF.gravity
# The identified Crazyflie's numbers (frames/crazyflie_2_1.yaml), written out for the hand computations below.
MASS, C0, C1, C2, K = 0.0306, 0.00352526, 0.01437313, 0.09223048, 0.004665
IXX, IYY, IZZ = 9.416556729130406e-06, 9.644051701582312e-06, 1.745951732253285e-05
ARM = 0.028  # rotor offset along x and y, m


def _params(frame: QuadrotorParams = CF, n: int = 1, dtype: torch.dtype = F64) -> DynamicsParams:
    return DynamicsParams.nominal(frame, n, dtype=dtype)


def _state(
    n: int = 1,
    motor: float | torch.Tensor = 0.0,
    position: tuple[float, float, float] = (0.0, 0.0, 0.0),
    angular_velocity: tuple[float, float, float] = (0.0, 0.0, 0.0),
    velocity: tuple[float, float, float] = (0.0, 0.0, 0.0),
    quaternion: tuple[float, float, float, float] = (1.0, 0.0, 0.0, 0.0),
    dtype: torch.dtype = F64,
) -> torch.Tensor:
    """Component-major `(17, n)` state with the given motor states (normalized commands reached)."""

    def rows(values: tuple[float, ...]) -> torch.Tensor:
        return torch.tensor(values, dtype=dtype).expand(n, len(values))

    motors = torch.as_tensor(motor, dtype=dtype).expand(n, 4)
    return pack_state(rows(position), rows(quaternion), rows(velocity), rows(angular_velocity), motors)


def _command(state: torch.Tensor) -> torch.Tensor:
    return state[MOTOR_STATE].clone()


def _thrust(u: float) -> float:
    """Rotor thrust of the identified Crazyflie in N, by hand."""
    return C0 + C1 * u + C2 * u * u


def test_hover_command_holds_position_for_one_second() -> None:
    for frame in (CF, BARE):
        state = _state(motor=frame.hover_command)
        params, command = _params(frame), _command(state)
        for _ in range(100):
            state = integrate(state, command, params, dt=0.01)
            assert state[POSITION].abs().max() < 1e-6
        assert state[VELOCITY].abs().max() < 1e-6
        torch.testing.assert_close(state[MOTOR_STATE], command, rtol=0, atol=0)


def test_free_fall_follows_g_t_squared_over_two() -> None:
    z0 = 10.0
    state = _state(position=(0.0, 0.0, z0))
    params, command = _params(BARE), _command(state)  # thrust curve (0, 0, c2): no thrust at u = 0
    for k in range(1, 101):
        state = integrate(state, command, params, dt=0.01)
        t = 0.01 * k
        assert state[2, 0].item() == pytest.approx(z0 - G * t**2 / 2, abs=1e-6)
        assert state[9, 0].item() == pytest.approx(-G * t, abs=1e-9)
    assert state[0:2].abs().max() == 0.0


def test_zero_command_still_pushes_the_constant_term_of_the_curve() -> None:
    # Identified Crazyflie at u = 0: 4 c0 = 0.01410104 N up, a = 0.01410104 / 0.0306 - 9.81 = -9.349182 m/s^2.
    acceleration = 4 * 0.00352526 / 0.0306 - 9.81
    assert acceleration == pytest.approx(-9.349182, abs=1e-6)
    state = _state(position=(0.0, 0.0, 10.0))
    params, command = _params(), _command(state)
    for _ in range(50):
        state = integrate(state, command, params, dt=0.01)
    assert state[9, 0].item() == pytest.approx(acceleration * 0.5, rel=1e-12)
    assert state[2, 0].item() == pytest.approx(10.0 + acceleration * 0.5**2 / 2, rel=1e-12)


def test_semi_implicit_euler_free_fall_matches_its_closed_form() -> None:
    # v_k = -g k h, z_k = z_0 - g h^2 k (k + 1) / 2: velocity first, then position with the new velocity.
    h, z0 = 0.01, 10.0
    state = _state(position=(0.0, 0.0, z0))
    params, command = _params(BARE), _command(state)
    for k in range(1, 51):
        state = integrate(state, command, params, dt=h, integrator="semi_implicit_euler")
        assert state[2, 0].item() == pytest.approx(z0 - G * h**2 * k * (k + 1) / 2, abs=1e-9)


def test_thrust_polynomial_and_torques_against_hand_computed_values() -> None:
    u = (0.2, 0.5, 0.7, 0.9)
    state = _state(motor=torch.tensor(u, dtype=F64))
    params = _params()
    derivative = state_derivative(state, _command(state), params)[:, 0]
    # By hand: T = c0 + c1 u + c2 u^2 per rotor.
    thrust = [
        0.00352526 + 0.01437313 * 0.2 + 0.09223048 * 0.04,  # 0.0100891052 N
        0.00352526 + 0.01437313 * 0.5 + 0.09223048 * 0.25,  # 0.033769445 N
        0.00352526 + 0.01437313 * 0.7 + 0.09223048 * 0.49,  # 0.0587793862 N
        0.00352526 + 0.01437313 * 0.9 + 0.09223048 * 0.81,  # 0.0911677658 N
    ]
    assert thrust == pytest.approx([0.0100891052, 0.033769445, 0.0587793862, 0.0911677658], abs=1e-12)
    assert thrust == pytest.approx([_thrust(x) for x in u], rel=1e-12)
    total = sum(thrust)
    assert derivative[9].item() == pytest.approx(total / MASS - G, rel=1e-12)
    # Rotors 0 (+x,-y) ccw, 1 (-x,-y) cw, 2 (-x,+y) ccw, 3 (+x,+y) cw. tau_x = sum y_i T_i, tau_y = sum -x_i T_i.
    tau_x = ARM * (-thrust[0] - thrust[1] + thrust[2] + thrust[3])
    tau_y = ARM * (-thrust[0] + thrust[1] + thrust[2] - thrust[3])
    # Yaw: -s_i k T_i, s = +1 ccw, -1 cw.
    tau_z = K * (-thrust[0] + thrust[1] - thrust[2] + thrust[3])
    assert derivative[10].item() == pytest.approx(tau_x / IXX, rel=1e-12)
    assert derivative[11].item() == pytest.approx(tau_y / IYY, rel=1e-12)
    assert derivative[12].item() == pytest.approx(tau_z / IZZ, rel=1e-12)
    assert tau_z == pytest.approx(0.004665 * 0.0560687194, rel=1e-9)  # k (T1 + T3 - T0 - T2) = 2.6156e-4 N m


def _motor_after(frame: QuadrotorParams, start: float, target: float, time: float, steps: int = 20) -> float:
    state = _state(motor=start)
    command = torch.full((4, 1), target, dtype=F64)
    state = integrate(state, command, _params(frame), dt=time, substeps=steps)
    return state[MOTOR_STATE].min().item()


@pytest.mark.parametrize(("start", "target"), [(0.0, 1.0), (0.3, 0.8)])
def test_a_command_step_up_follows_the_rise_time_constant(start: float, target: float) -> None:
    tau = CF.motor_rise_time_constant
    for multiple in (1.0, 2.0, 0.5):
        progress = (_motor_after(CF, start, target, multiple * tau) - start) / (target - start)
        assert progress == pytest.approx(1 - math.exp(-multiple), abs=1e-6)  # 63.2 % after one time constant
    assert (_motor_after(CF, start, target, tau) - start) / (target - start) == pytest.approx(0.632, abs=0.001)


@pytest.mark.parametrize(("start", "target"), [(1.0, 0.0), (0.8, 0.3)])
def test_a_command_step_down_follows_the_fall_time_constant(start: float, target: float) -> None:
    tau = CF.motor_fall_time_constant
    for multiple in (1.0, 2.0, 0.5):
        progress = (_motor_after(CF, start, target, multiple * tau) - start) / (target - start)
        assert progress == pytest.approx(1 - math.exp(-multiple), abs=1e-6)
    # After one rise time constant a fall has come only 1 - exp(-0.0555 / 0.2494) = 20 % of the way.
    early = (_motor_after(CF, start, target, CF.motor_rise_time_constant) - start) / (target - start)
    assert early == pytest.approx(1 - math.exp(-0.05545454545454546 / 0.24939393939393945), abs=1e-6)
    assert early == pytest.approx(0.1994, abs=1e-3)


def test_motor_state_settles_at_its_command_from_either_side() -> None:
    # Exactly at the command: no motion. Either side: approach, never overshoot (each RK4 stage picks its branch).
    for start in (0.2, 0.6, 1.0):
        state = _state(motor=start)
        command = torch.full((4, 1), 0.6, dtype=F64)
        trace = []
        for _ in range(200):
            state = integrate(state, command, _params(), dt=0.01)
            trace.append(state[13, 0].item())
        assert all((x - 0.6) * (start - 0.6) >= 0 for x in trace)
        assert trace[-1] == pytest.approx(0.6, abs=1e-3 if start > 0.6 else 1e-12)


def test_linear_drag_gives_the_terminal_velocity_along_world_axes() -> None:
    # Bare frame, motors off: m dv/dt = -m g - d v, so v(t) = -(m g / d)(1 - exp(-d t / m)); with m = 0.027 kg and
    # d_z = 0.27 N/(m/s): time constant 0.1 s, terminal velocity -0.027 x 9.81 / 0.27 = -0.981 m/s.
    frame = dataclasses.replace(BARE, linear_drag=(0.054, 0.135, 0.27))
    state = _state(motor=0.0)
    params = _params(frame)
    for k in range(1, 201):
        state = integrate(state, _command(state), params, dt=0.01)
        t = 0.01 * k
        assert state[9, 0].item() == pytest.approx(-0.981 * (1 - math.exp(-t / 0.1)), abs=1e-6)
    assert state[9, 0].item() == pytest.approx(-0.981, rel=1e-8)
    # Hovering, yawed by 90 degrees, sliding at 1 m/s along world x and y: each axis decays with its own world
    # drag, (m / d_x, m / d_y) = (0.5, 0.2) s, whatever the body's heading.
    yaw = (math.cos(math.pi / 4), 0.0, 0.0, math.sin(math.pi / 4))
    state = _state(motor=frame.hover_command, velocity=(1.0, 1.0, 0.0), quaternion=yaw)
    for _ in range(30):
        state = integrate(state, _command(state), params, dt=0.01)
    assert state[7, 0].item() == pytest.approx(math.exp(-0.3 / 0.5), rel=1e-6)
    assert state[8, 0].item() == pytest.approx(math.exp(-0.3 / 0.2), rel=1e-6)
    assert abs(state[9, 0].item()) < 1e-9


def _angular_momentum_and_energy(state: torch.Tensor, inertia: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    parts = state_parts(state)
    body_momentum = inertia * parts.angular_velocity  # (n, 3)
    world = (quat_to_rotmat(parts.quaternion) @ body_momentum.unsqueeze(-1)).squeeze(-1)
    energy = 0.5 * (body_momentum * parts.angular_velocity).sum(-1)
    return world, energy


def test_torque_free_spin_conserves_world_angular_momentum_and_energy() -> None:
    inertia = (1.0e-5, 2.0e-5, 3.5e-5)  # asymmetric
    frame = dataclasses.replace(BARE, inertia=inertia)  # c0 = 0: motors off push nothing
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
    state = _state(n, motor=CF.hover_command, dtype=torch.float32)
    state[ANGULAR_VELOCITY] = torch.randn(3, n, generator=generator) * 5
    for _ in range(200):
        command = torch.rand(4, n, generator=generator)
        state = integrate(state, command, params, dt=0.01)
        norm = state[QUATERNION].square().sum(0).sqrt()
        assert (norm - 1).abs().max() < 1e-6
        assert state[MOTOR_STATE].min() >= 0 and state[MOTOR_STATE].max() <= 1


def _angular_acceleration(motor: tuple[float, float, float, float]) -> torch.Tensor:
    state = _state(motor=torch.tensor(motor, dtype=F64))
    params = _params()
    return state_derivative(state, _command(state), params, params.gravity_vector)[ANGULAR_VELOCITY, 0]


def test_rotor_differences_give_roll_pitch_yaw_with_the_documented_signs() -> None:
    u, d = CF.hover_command, 0.05
    # Rotors: 0 front-right (ccw), 1 back-right (cw), 2 back-left (ccw), 3 front-left (cw).
    roll = _angular_acceleration((u - d, u - d, u + d, u + d))  # left side pushes up
    pitch = _angular_acceleration((u - d, u + d, u + d, u - d))  # back pushes up
    yaw_cw = _angular_acceleration((u - d, u + d, u - d, u + d))  # cw rotors faster: body turns ccw
    assert roll[0] > 0 and abs(roll[1]) < 1e-9 * roll[0] and abs(roll[2]) < 1e-9 * roll[0]
    assert pitch[1] > 0 and abs(pitch[0]) < 1e-9 * pitch[1] and abs(pitch[2]) < 1e-9 * pitch[1]
    assert yaw_cw[2] > 0 and abs(yaw_cw[0]) < 1e-9 * yaw_cw[2] and abs(yaw_cw[1]) < 1e-9 * yaw_cw[2]
    # Hand-computed: T(u + d) - T(u - d) = 2 d (c1 + 2 c2 u); roll 2 arm offsets x that, yaw 2 k x that.
    difference = 2 * d * (C1 + 2 * C2 * u)
    assert difference == pytest.approx(_thrust(u + d) - _thrust(u - d), rel=1e-12)
    assert roll[0].item() == pytest.approx(2 * ARM * difference / IXX, rel=1e-12)
    assert pitch[1].item() == pytest.approx(2 * ARM * difference / IYY, rel=1e-12)
    assert yaw_cw[2].item() == pytest.approx(2 * K * difference / IZZ, rel=1e-12)


def test_positive_roll_lifts_the_left_side_and_positive_pitch_lowers_the_nose() -> None:
    u, d = CF.hover_command, 0.03
    for motor, axis_row in (((u - d, u - d, u + d, u + d), 7), ((u - d, u + d, u + d, u - d), 6)):
        state = _state(motor=torch.tensor(motor, dtype=F64))
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
    state = _state(motor=CF.hover_command)
    params, command = _params(), _command(state)
    force = torch.tensor([[0.01], [-0.02], [0.005]], dtype=F64)
    torque = torch.tensor([[1e-6], [0.0], [0.0]], dtype=F64)
    pushed = integrate(state, command, params, dt=0.01, external_force=force)
    torch.testing.assert_close(pushed[VELOCITY], force / MASS * 0.01, rtol=1e-9, atol=1e-12)
    twisted = integrate(state, command, params, dt=0.01, external_torque=torque)
    assert twisted[10, 0].item() == pytest.approx(1e-6 / IXX * 0.01, rel=1e-9)
    assert twisted[11:13].abs().max() < 1e-12


def test_parameters_can_differ_per_env() -> None:
    scales = torch.ones(8, 3, dtype=F64)
    scales[0, 1] = 2.0  # double mass
    scales[4, 2] = 1.5  # thrust curve x 1.5
    params = _params(n=3).scaled(scales)
    state = _state(3, motor=CF.hover_command)
    after = integrate(state, _command(state), params, dt=0.01)
    assert abs(after[9, 0].item()) < 1e-9  # nominal mass hovers
    assert after[9, 1].item() == pytest.approx((G / 2 - G) * 0.01, rel=1e-9)  # double mass sinks at g/2
    assert after[9, 2].item() == pytest.approx(0.5 * G * 0.01, rel=1e-9)  # 1.5 x the weight: rises at g/2
    # A replaced curve (c0, c1, c2) per env, scaled on top: env 2 gets 1.5 x (0, 0, 0.2).
    curve = torch.tensor([[0.0] * 3, [0.0] * 3, [0.2] * 3], dtype=F64)
    replaced = _params(n=3).scaled(scales, curve)
    torch.testing.assert_close(replaced.thrust_curve[:, 2], torch.tensor([0.0, 0.0, 0.3], dtype=F64))
    assert replaced.motor_fall_time_constant.tolist() == [CF.motor_fall_time_constant] * 3
