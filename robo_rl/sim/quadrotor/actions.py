"""Action modes: normalized policy actions in [-1, 1]^4 to motor commands (normalized, the PWM duty ratio).

Action maps work on component-major tensors like `robo_rl.sim.quadrotor.dynamics`: actions `(4, N)`, body rates
`(3, N)`, motor commands `(4, N)`.

- "motor": one action per rotor, mapped linearly onto its motor command between `min_command` (action -1) and
  `max_command` (action +1): the one map `robo_rl.actuator.MotorActuator.command` that the policy artifact states,
  and that the firmware export, the ROS profile and the L2F gate apply too (`MotorActionMap.actuator`). The thrust
  that follows is the plant's curve. The hover action is `MotorActionMap.hover_action`, the action of the nominal
  frame's hover command (0.612 for the identified Crazyflie 2.1, hover at u = 0.806).
- "ctbr": collective thrust and body rates. Action 0 maps linearly onto the total thrust between 4x the rotor
  thrust at `min_command` and at `max_command`; actions 1..3 onto body-rate setpoints of
  +-`CtbrConfig.max_body_rate`. An inner proportional rate loop (nominal inertia) turns the rate error into a
  torque, the nominal mixer into rotor thrusts, each clipped to the feasible range, and the nominal thrust curve
  into motor commands.

Both modes use the nominal frame parameters (what firmware knows), whatever the randomized plant is.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Protocol

import torch

import robo_rl.sim.quadrotor.equations as equations
from robo_rl.actuator import MotorActuator
from robo_rl.sim.quadrotor.dynamics import rotor_geometry_matrix, rows_matmul
from robo_rl.sim.quadrotor.params import QuadrotorParams

ActionMode = Literal["motor", "ctbr"]
ACTION_MODES: tuple[str, ...] = ("motor", "ctbr")


@dataclass(frozen=True)
class CtbrConfig:
    """The body-rate controller behind the "ctbr" action mode."""

    max_body_rate: tuple[float, float, float] = (10.0, 10.0, 5.0)
    """Body-rate setpoint (roll, pitch, yaw) in rad/s at actions +-1."""
    rate_gain: tuple[float, float, float] = (20.0, 20.0, 10.0)
    """Proportional gain in 1/s: torque = inertia * rate_gain * (setpoint - rate). 20 1/s with a 50 ms motor lag
    and a 100 Hz loop leaves about 50 degrees of phase margin."""

    def __post_init__(self) -> None:
        values = (*self.max_body_rate, *self.rate_gain)
        if len(self.max_body_rate) != 3 or len(self.rate_gain) != 3 or not all(v > 0 for v in values):
            raise ValueError(f"CtbrConfig: max_body_rate and rate_gain need 3 positive values each, got {self}")


class ActionMap(Protocol):
    """Maps clipped actions `(4, N)` in [-1, 1] to motor commands `(4, N)` (normalized)."""

    names: tuple[str, str, str, str]
    """Names of the 4 action entries."""
    hover_action: tuple[float, float, float, float]
    """The action that holds the nominal frame in hover at rest."""

    def __call__(self, action: torch.Tensor, angular_velocity: torch.Tensor) -> torch.Tensor:
        """Motor commands `(4, N)` for `action` `(4, N)` given the body rates `(3, N)` in rad/s."""
        ...


class MotorActionMap:
    """ "motor" mode: action i in [-1, 1] linearly to rotor i's motor command between min and max command."""

    names = ("rotor_0", "rotor_1", "rotor_2", "rotor_3")

    def __init__(self, params: QuadrotorParams) -> None:
        self.params = params
        self.offset = (params.max_command + params.min_command) / 2
        self.slope = (params.max_command - params.min_command) / 2
        hover = (params.hover_command - self.offset) / self.slope
        self.hover_action = (hover, hover, hover, hover)

    @property
    def actuator(self) -> MotorActuator:
        """The map as the policy artifact states it, with the nominal frame's rotor model."""
        p = self.params
        return MotorActuator(
            thrust_curve=p.thrust_curve,
            torque_to_thrust=p.torque_to_thrust,
            motor_rise_time_constant=p.motor_rise_time_constant,
            motor_fall_time_constant=p.motor_fall_time_constant,
            command_low=p.min_command,
            command_high=p.max_command,
            frame=p.name,
            motor_model=p.motor_model,
            motor_idle_speed=p.fall_idle_fraction,
        )

    def __call__(self, action: torch.Tensor, angular_velocity: torch.Tensor) -> torch.Tensor:
        return equations.motor_command(action, self.slope, self.offset)

    def action_of(self, command: torch.Tensor) -> torch.Tensor:
        """The inverse map: the (unclipped) actions that give motor commands `command`."""
        return (command - self.offset) / self.slope


class CtbrActionMap:
    """ "ctbr" mode: collective thrust and body rates through a proportional rate loop and the nominal mixer."""

    names = ("collective_thrust", "roll_rate", "pitch_rate", "yaw_rate")

    def __init__(
        self, params: QuadrotorParams, config: CtbrConfig, device: torch.device | str, dtype: torch.dtype
    ) -> None:
        self._min_thrust, self._max_thrust = params.min_rotor_thrust, params.max_rotor_thrust
        self._thrust_offset = 2.0 * (self._max_thrust + self._min_thrust)
        self._thrust_slope = 2.0 * (self._max_thrust - self._min_thrust)
        self._curve = params.thrust_curve
        self._max_rate = torch.tensor(config.max_body_rate, device=device, dtype=dtype).unsqueeze(-1)
        gain = [i * k for i, k in zip(params.inertia, config.rate_gain, strict=True)]
        self._torque_gain = torch.tensor(gain, device=device, dtype=dtype).unsqueeze(-1)
        self._mixer = _mixer(params).to(device=device, dtype=dtype)
        hover = (params.weight - self._thrust_offset) / self._thrust_slope
        self.hover_action = (hover, 0.0, 0.0, 0.0)

    def collective_action(self, thrust: torch.Tensor) -> torch.Tensor:
        """The (unclipped) collective-thrust action for a total thrust in N."""
        return (thrust - self._thrust_offset) / self._thrust_slope

    def rotor_thrusts(self, action: torch.Tensor, angular_velocity: torch.Tensor) -> torch.Tensor:
        """`(4, N)` rotor thrusts in N (clipped to the feasible range) that `action` asks for."""
        collective = action[:1] * self._thrust_slope + self._thrust_offset
        rate_error = torch.addcmul(-angular_velocity, action[1:], self._max_rate)
        torque = rate_error.mul_(self._torque_gain)
        rotor_thrust = rows_matmul(self._mixer, torch.cat((collective, torque)))
        return rotor_thrust.clamp_(self._min_thrust, self._max_thrust)

    def __call__(self, action: torch.Tensor, angular_velocity: torch.Tensor) -> torch.Tensor:
        return command_for_thrust(self.rotor_thrusts(action, angular_velocity), self._curve)


def command_for_thrust(thrust: torch.Tensor, curve: tuple[float, float, float]) -> torch.Tensor:
    """Motor commands at which rotors of thrust curve `curve` (nominal) push `thrust` N (rising branch)."""
    c0, c1, c2 = curve
    if c2 == 0.0:
        return (thrust - c0) / c1
    discriminant = (thrust - c0).mul_(4.0 * c2).add_(c1 * c1).clamp_(min=0.0)
    return discriminant.sqrt_().sub_(c1).div_(2.0 * c2)


def _mixer(params: QuadrotorParams) -> torch.Tensor:
    """`(4, 4)` inverse of the allocation matrix (rotor thrusts to collective thrust and body torques), float64."""
    allocation = rotor_geometry_matrix(params, "cpu", torch.float64)
    allocation[3] *= params.torque_to_thrust
    return torch.linalg.inv(allocation)


def make_action_map(
    mode: ActionMode,
    params: QuadrotorParams,
    ctbr: CtbrConfig = CtbrConfig(),
    device: torch.device | str = "cpu",
    dtype: torch.dtype = torch.float32,
) -> ActionMap:
    """The action map of `mode` ("motor" or "ctbr") for the nominal frame `params`."""
    if mode == "motor":
        return MotorActionMap(params)
    if mode == "ctbr":
        return CtbrActionMap(params, ctbr, device, dtype)
    raise ValueError(f"unknown action mode {mode!r}; expected one of {ACTION_MODES}")


def hover_action(mode: ActionMode, params: QuadrotorParams) -> tuple[float, float, float, float]:
    """The action that holds the nominal frame `params` in hover at rest in `mode`."""
    return make_action_map(mode, params).hover_action
