"""Action modes: motor mapping endpoints and hover value, ctbr mixer signs, feasibility and closed-loop rates."""

from __future__ import annotations

import pytest
import torch

from robo_rl.sim.quadrotor.actions import CtbrActionMap, CtbrConfig, MotorActionMap, hover_action, make_action_map
from robo_rl.sim.quadrotor.dynamics import ANGULAR_VELOCITY, DynamicsParams, integrate, pack_state
from robo_rl.sim.quadrotor.params import QuadrotorParams, load_frame

F64 = torch.float64
CF = load_frame("crazyflie_2_1")
X500 = load_frame("px4_x500")


def _rates(n: int = 1) -> torch.Tensor:
    return torch.zeros(3, n, dtype=F64)


def _column(*values: float) -> torch.Tensor:
    return torch.tensor(values, dtype=F64).unsqueeze(-1)


@pytest.mark.parametrize("frame", [CF, X500])
def test_motor_mode_is_linear_in_thrust_between_min_and_max_speed(frame: QuadrotorParams) -> None:
    motor = MotorActionMap(frame)
    actions = torch.tensor([-1.0, 0.0, 0.5, 1.0], dtype=F64).expand(4, 4)  # env j: every rotor at action j
    speed = motor(actions, _rates(4))
    thrust = frame.thrust_coefficient * speed[0] ** 2
    low, high = frame.min_rotor_thrust, frame.max_rotor_thrust
    expected = torch.tensor([low, (low + high) / 2, low + 0.75 * (high - low), high], dtype=F64)
    torch.testing.assert_close(thrust, expected, rtol=1e-12, atol=1e-15)


def test_motor_hover_action_is_two_over_thrust_to_weight_minus_one() -> None:
    value = MotorActionMap(CF).hover_action[0]
    assert value == pytest.approx(2 / CF.thrust_to_weight - 1, rel=1e-12)
    assert value == pytest.approx(-0.110, abs=1e-3)  # the documented value for the Crazyflie
    speed = MotorActionMap(CF)(_column(*[value] * 4), _rates())
    torch.testing.assert_close(speed, torch.full((4, 1), CF.hover_rotor_speed, dtype=F64), rtol=1e-12, atol=0)


@pytest.mark.parametrize("frame", [CF, X500])
def test_ctbr_hover_action_commands_hover_speed_on_every_rotor(frame: QuadrotorParams) -> None:
    ctbr = CtbrActionMap(frame, CtbrConfig(), "cpu", F64)
    assert ctbr.hover_action[1:] == (0.0, 0.0, 0.0)
    speed = ctbr(_column(*ctbr.hover_action), _rates())
    torch.testing.assert_close(speed, torch.full((4, 1), frame.hover_rotor_speed, dtype=F64), rtol=1e-9, atol=0)
    assert hover_action("ctbr", frame) == ctbr.hover_action


@pytest.mark.parametrize(
    ("axis", "faster"),
    [(1, (2, 3)), (2, (1, 2)), (3, (1, 3))],  # roll: left rotors; pitch: back rotors; yaw: cw rotors
)
def test_ctbr_rate_commands_speed_up_the_right_rotors(axis: int, faster: tuple[int, int]) -> None:
    ctbr = CtbrActionMap(CF, CtbrConfig(), "cpu", F64)
    action = list(ctbr.hover_action)
    action[axis] = 0.2
    speed = ctbr(_column(*action), _rates())[:, 0]
    slower = [i for i in range(4) if i not in faster]
    assert speed[list(faster)].min() > CF.hover_rotor_speed > speed[slower].max()


def test_ctbr_clips_rotor_thrust_to_the_feasible_range() -> None:
    ctbr = CtbrActionMap(X500, CtbrConfig(), "cpu", F64)
    actions = torch.tensor([[1.0, 1.0, -1.0, 1.0], [-1.0, -1.0, 1.0, -1.0], [1.0, 0.0, 0.0, 0.0]], dtype=F64).T
    rates = torch.tensor([[30.0, -30.0, 0.0], [30.0, -30.0, 0.0], [0.0, 0.0, 0.0]], dtype=F64).T
    speed = ctbr(actions, rates)
    assert speed.min() >= X500.min_rotor_speed * (1 - 1e-12) and speed.max() <= X500.max_rotor_speed * (1 + 1e-12)
    assert speed[:, 2].tolist() == pytest.approx([X500.max_rotor_speed] * 4)  # full collective: all at max


@pytest.mark.parametrize("axis", [0, 1, 2])
def test_ctbr_closed_loop_tracks_a_body_rate_setpoint(axis: int) -> None:
    config = CtbrConfig()
    ctbr = CtbrActionMap(CF, config, "cpu", F64)
    params = DynamicsParams.nominal(CF, 1, dtype=F64)
    zero = torch.zeros(1, 3, dtype=F64)
    quaternion = torch.tensor([[1.0, 0.0, 0.0, 0.0]], dtype=F64)
    state = pack_state(zero, quaternion, zero, zero, torch.full((1, 4), CF.hover_rotor_speed, dtype=F64))
    action = list(ctbr.hover_action)
    action[1 + axis] = 0.3
    setpoint = 0.3 * config.max_body_rate[axis]
    for _ in range(50):  # 0.5 s at 100 Hz
        state = integrate(state, ctbr(_column(*action), state[ANGULAR_VELOCITY]), params, dt=0.01)
    rates = state[ANGULAR_VELOCITY, 0]
    assert rates[axis].item() == pytest.approx(setpoint, rel=0.1)
    others = [i for i in range(3) if i != axis]
    assert rates[others].abs().max() < 0.05 * setpoint


def test_unknown_action_mode_is_an_error() -> None:
    with pytest.raises(ValueError, match="motor"):
        make_action_map("thrust_vectoring", CF)  # type: ignore[arg-type]
