"""Action modes: motor mapping endpoints and hover value, ctbr mixer signs, feasibility and closed-loop rates."""

from __future__ import annotations

import pytest
import torch

from robo_rl.sim.quadrotor.actions import (
    CtbrActionMap,
    CtbrConfig,
    MotorActionMap,
    command_for_thrust,
    hover_action,
    make_action_map,
)
from robo_rl.sim.quadrotor.dynamics import ANGULAR_VELOCITY, DynamicsParams, integrate, pack_state
from robo_rl.sim.quadrotor.params import QuadrotorParams, load_frame

F64 = torch.float64
CF = load_frame("crazyflie_2_1")
BARE = load_frame("crazyflie_2_1_bare_2023")
X500 = load_frame("px4_x500")


def _rates(n: int = 1) -> torch.Tensor:
    return torch.zeros(3, n, dtype=F64)


def _column(*values: float) -> torch.Tensor:
    return torch.tensor(values, dtype=F64).unsqueeze(-1)


@pytest.mark.parametrize("frame", [CF, X500])
def test_motor_mode_is_linear_in_the_command_between_min_and_max(frame: QuadrotorParams) -> None:
    motor = MotorActionMap(frame)
    actions = torch.tensor([-1.0, 0.0, 0.5, 1.0], dtype=F64).expand(4, 4)  # env j: every rotor at action j
    command = motor(actions, _rates(4))
    low, high = frame.min_command, frame.max_command
    expected = torch.tensor([low, (low + high) / 2, low + 0.75 * (high - low), high], dtype=F64)
    torch.testing.assert_close(command, expected.expand(4, 4), rtol=1e-12, atol=1e-15)
    torch.testing.assert_close(motor.action_of(command), actions, rtol=1e-12, atol=1e-12)
    actuator = motor.actuator
    assert [actuator.command(a) for a in (-1.0, 0.0, 0.5, 1.0)] == pytest.approx(expected.tolist(), rel=1e-12)
    assert actuator.thrust_curve == frame.thrust_curve and actuator.frame == frame.name


def test_x500_idle_is_15_percent() -> None:
    command = MotorActionMap(X500)(_column(-1.0, -1.0, 0.0, 1.0), _rates())
    assert command[:, 0].tolist() == pytest.approx([0.15, 0.15, 0.575, 1.0], rel=1e-12)


def test_motor_hover_action_is_the_action_of_the_hover_command() -> None:
    value = MotorActionMap(CF).hover_action[0]
    # Crazyflie: hover at u = 0.80612 (test_params), action = 2 u - 1 on [0, 1].
    assert value == pytest.approx(2 * 0.80612 - 1, abs=2e-5)
    assert value == pytest.approx(0.612, abs=1e-3)  # the documented value
    command = MotorActionMap(CF)(_column(*[value] * 4), _rates())
    torch.testing.assert_close(command, torch.full((4, 1), CF.hover_command, dtype=F64), rtol=1e-12, atol=0)
    # Bare 2023 Crazyflie: u = 0.66702, action 0.33404; X500 on [0.15, 1]: u = sqrt(2.064 x 9.81 / 4 / 8.54858).
    assert MotorActionMap(BARE).hover_action[0] == pytest.approx(0.33404, abs=2e-5)
    x500_u = (2.064 * 9.81 / 4 / 8.54858) ** 0.5
    assert MotorActionMap(X500).hover_action[0] == pytest.approx((x500_u - 0.575) / 0.425, rel=1e-12)


@pytest.mark.parametrize("frame", [CF, BARE, X500])
def test_ctbr_hover_action_commands_the_hover_command_on_every_rotor(frame: QuadrotorParams) -> None:
    ctbr = CtbrActionMap(frame, CtbrConfig(), "cpu", F64)
    assert ctbr.hover_action[1:] == (0.0, 0.0, 0.0)
    command = ctbr(_column(*ctbr.hover_action), _rates())
    torch.testing.assert_close(command, torch.full((4, 1), frame.hover_command, dtype=F64), rtol=1e-9, atol=0)
    assert hover_action("ctbr", frame) == ctbr.hover_action


def test_command_for_thrust_inverts_the_curve_on_tensors() -> None:
    u = torch.linspace(0.0, 1.0, 11, dtype=F64)
    for frame in (CF, BARE):
        c0, c1, c2 = frame.thrust_curve
        thrust = c0 + c1 * u + c2 * u * u
        torch.testing.assert_close(command_for_thrust(thrust, frame.thrust_curve), u, rtol=0, atol=1e-12)
    linear = (0.01, 0.2, 0.0)
    torch.testing.assert_close(command_for_thrust(0.01 + 0.2 * u, linear), u, rtol=0, atol=1e-12)


@pytest.mark.parametrize(
    ("axis", "faster"),
    [(1, (2, 3)), (2, (1, 2)), (3, (1, 3))],  # roll: left rotors; pitch: back rotors; yaw: cw rotors
)
def test_ctbr_rate_commands_speed_up_the_right_rotors(axis: int, faster: tuple[int, int]) -> None:
    ctbr = CtbrActionMap(CF, CtbrConfig(), "cpu", F64)
    action = list(ctbr.hover_action)
    action[axis] = 0.2
    command = ctbr(_column(*action), _rates())[:, 0]
    slower = [i for i in range(4) if i not in faster]
    assert command[list(faster)].min() > CF.hover_command > command[slower].max()


def test_ctbr_clips_rotor_thrust_to_the_feasible_range() -> None:
    ctbr = CtbrActionMap(X500, CtbrConfig(), "cpu", F64)
    actions = torch.tensor([[1.0, 1.0, -1.0, 1.0], [-1.0, -1.0, 1.0, -1.0], [1.0, 0.0, 0.0, 0.0]], dtype=F64).T
    rates = torch.tensor([[30.0, -30.0, 0.0], [30.0, -30.0, 0.0], [0.0, 0.0, 0.0]], dtype=F64).T
    command = ctbr(actions, rates)
    assert command.min() >= X500.min_command - 1e-12 and command.max() <= X500.max_command + 1e-12
    assert command[:, 0].min() == pytest.approx(X500.min_command) and command[:, 0].max() == pytest.approx(1.0)
    assert command[:, 2].tolist() == pytest.approx([X500.max_command] * 4)  # full collective: all at max


@pytest.mark.parametrize(("frame", "steps", "tolerance"), [(BARE, 50, 0.1), (CF, 200, 0.02)], ids=["bare", "cf"])
@pytest.mark.parametrize("axis", [0, 1, 2])
def test_ctbr_closed_loop_tracks_a_body_rate_setpoint(
    axis: int, frame: QuadrotorParams, steps: int, tolerance: float
) -> None:
    """Within 10 % after 0.5 s with the 50 ms motor lag; the identified Crazyflie's 0.25 s fall time constant
    leaves the default rate loop underdamped (about 40 % overshoot, settled within 2 % after 2 s)."""
    config = CtbrConfig()
    ctbr = CtbrActionMap(frame, config, "cpu", F64)
    params = DynamicsParams.nominal(frame, 1, dtype=F64)
    zero = torch.zeros(1, 3, dtype=F64)
    quaternion = torch.tensor([[1.0, 0.0, 0.0, 0.0]], dtype=F64)
    state = pack_state(zero, quaternion, zero, zero, torch.full((1, 4), frame.hover_command, dtype=F64))
    action = list(ctbr.hover_action)
    action[1 + axis] = 0.3
    setpoint = 0.3 * config.max_body_rate[axis]
    for _ in range(steps):  # at 100 Hz
        state = integrate(state, ctbr(_column(*action), state[ANGULAR_VELOCITY]), params, dt=0.01)
    rates = state[ANGULAR_VELOCITY, 0]
    assert rates[axis].item() == pytest.approx(setpoint, rel=tolerance)
    others = [i for i in range(3) if i != axis]
    assert rates[others].abs().max() < 0.05 * setpoint


def test_unknown_action_mode_is_an_error() -> None:
    with pytest.raises(ValueError, match="motor"):
        make_action_map("thrust_vectoring", CF)  # type: ignore[arg-type]
