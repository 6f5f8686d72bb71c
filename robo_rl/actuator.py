"""What a motor action means physically: the actuator model a policy artifact states (standard library only).

A quadrotor policy in robo_rl's "motor" action mode outputs one action per rotor in [action_low, action_high]. Its
meaning is one linear map onto the normalized motor command u, the PWM duty ratio the motor driver receives:

    u = command_low + (action - action_low) / (action_high - action_low) * (command_high - command_low)

(clipped to [command_low, command_high]), sent as `round(u * pwm_full_scale)` on a Crazyflie (0..65535). The
simulator, the firmware export (`--target crazyflie`), the ROS Crazyflie profile and the L2F transfer gate all apply
this map (`MotorActuator.command`); nothing else turns an action into a motor command. What the rotor then does is
the plant's, stated here for the record of what the policy was trained on: the per-rotor thrust curve
`thrust = c0 + c1 u + c2 u^2` in N (the form of Learning to Fly's model and of the Crazyflie's PWM-to-thrust
identifications), the yaw torque per N of thrust, and the first-order motor response with separate time constants
for a rising and a falling command. A real motor's curve drifts with battery and propellers, which is why the
training randomizes it and why the command, not the thrust, is what the policy's action fixes.

An RC car's drive action has its own record, `DriveActuator`: what the car's ESC receives as `drive` ("speed":
a speed setpoint in m/s = scale × action, a VESC's speed mode; "throttle": a throttle/brake fraction), with the
speed loop the simulator modelled. A robot profile's command map must send that (`robo_rl.real.policy_fit`).

The artifact keeps the model as JSON under `ACTUATOR_KEY`; `to_json` and `actuator_from_json` read and write it.
"""

from __future__ import annotations

import json
import math
from dataclasses import MISSING, asdict, dataclass, fields, replace
from typing import Any

ACTUATOR_KEY = "robo_rl.actuator"
"""Metadata key of the actuator model in a policy artifact (JSON)."""
MOTOR_COMMAND = "motor_command"
"""Actuator kind of `MotorActuator`: actions linear in the normalized motor command (PWM duty ratio)."""
DRIVE_COMMAND = "drive_command"
"""Actuator kind of `DriveActuator`: an RC car's drive action as its ESC's speed setpoint or throttle."""
DRIVE_MODES = ("speed", "throttle")
"""`DriveActuator.mode` values (the car's `command_mode`)."""
CRAZYFLIE_PWM_FULL_SCALE = 65535
"""The Crazyflie's motor PWM range is 0..UINT16_MAX (crazyflie-firmware, motors.h / power_distribution)."""


class ActuatorError(ValueError):
    """A malformed or inconsistent actuator model; the message names the field."""


@dataclass(frozen=True)
class MotorActuator:
    """The action-to-motor-command map of a motor-level quadrotor policy, and the rotor model it was trained on."""

    thrust_curve: tuple[float, float, float]
    """Nominal per-rotor thrust in N as `c0 + c1 u + c2 u^2` of the motor command u (the training frame's)."""
    torque_to_thrust: float
    """Yaw reaction torque per N of rotor thrust, in m (the training frame's)."""
    motor_rise_time_constant: float
    """First-order time constant of the motor state when the command rises above it, in s."""
    motor_fall_time_constant: float
    """First-order time constant of the motor state when the command falls below it, in s."""
    command_low: float = 0.0
    """Motor command u at `action_low`."""
    command_high: float = 1.0
    """Motor command u at `action_high`."""
    action_low: float = -1.0
    """Lowest action (the policy's output bound)."""
    action_high: float = 1.0
    """Highest action."""
    pwm_full_scale: int = CRAZYFLIE_PWM_FULL_SCALE
    """The PWM value of u = 1 on the target's motor driver."""
    frame: str = ""
    """Name of the frame the policy was trained on (its file or bundled name)."""
    hover_action: float | None = None
    """The action of each rotor that holds the training frame's nominal model in hover (what a controller starts
    the policy's action history from); None: not recorded."""
    kind: str = MOTOR_COMMAND
    """Always `MOTOR_COMMAND`; a reader that meets another kind refuses it."""
    motor_model: str = "command"
    """The training frame's motor model (`robo_rl.sim.quadrotor.params`): "command" (first order in the command's
    units, constant time constants) or "rotor_speed" (first order in rotor speed, falling at a rate proportional to
    the speed, thrust quadratic in the speed)."""
    motor_idle_speed: float = 1.0
    """rotor_speed: the rotor speed at command 0 as a fraction of full speed (1.0 for the command model)."""

    def __post_init__(self) -> None:
        if self.motor_model not in ("command", "rotor_speed"):
            raise ActuatorError(f"motor_model {self.motor_model!r}: expected 'command' or 'rotor_speed'")
        if not (_finite(self.motor_idle_speed) and 0.0 <= self.motor_idle_speed <= 1.0):
            raise ActuatorError(f"motor_idle_speed {self.motor_idle_speed!r} must be in [0, 1]")
        if self.kind != MOTOR_COMMAND:
            raise ActuatorError(f"actuator kind {self.kind!r} is not known here (expected {MOTOR_COMMAND!r})")
        if len(self.thrust_curve) != 3:
            raise ActuatorError(f"thrust_curve needs 3 coefficients (c0, c1, c2), got {self.thrust_curve!r}")
        numbers = {
            "thrust_curve": self.thrust_curve,
            "torque_to_thrust": (self.torque_to_thrust,),
            "motor_rise_time_constant": (self.motor_rise_time_constant,),
            "motor_fall_time_constant": (self.motor_fall_time_constant,),
            "command/action bounds": (self.command_low, self.command_high, self.action_low, self.action_high),
        }
        if self.hover_action is not None:
            numbers["hover_action"] = (self.hover_action,)
        bad = [name for name, values in numbers.items() if not all(_finite(v) for v in values)]
        if bad:
            raise ActuatorError(f"actuator fields must be finite numbers: {bad}")
        if min(self.motor_rise_time_constant, self.motor_fall_time_constant) <= 0:
            raise ActuatorError("motor time constants must be positive")
        if not 0.0 <= self.command_low < self.command_high <= 1.0:
            raise ActuatorError(f"need 0 <= command_low < command_high <= 1, got {self.command_low, self.command_high}")
        if not self.action_low < self.action_high:
            raise ActuatorError(f"need action_low < action_high, got {self.action_low, self.action_high}")
        if self.hover_action is not None and not self.action_low <= self.hover_action <= self.action_high:
            raise ActuatorError(
                f"hover_action {self.hover_action} lies outside the actions [{self.action_low}, {self.action_high}]"
            )
        if not isinstance(self.pwm_full_scale, int) or self.pwm_full_scale < 1:
            raise ActuatorError(f"pwm_full_scale must be a positive integer, got {self.pwm_full_scale!r}")

    @property
    def slope(self) -> float:
        """du / d(action)."""
        return (self.command_high - self.command_low) / (self.action_high - self.action_low)

    def command(self, action: float) -> float:
        """The motor command u in [command_low, command_high] of one rotor's action (clipped to the bounds)."""
        clipped = min(max(action, self.action_low), self.action_high)
        return self.command_low + (clipped - self.action_low) * self.slope

    def action(self, command: float) -> float:
        """The action that gives motor command `command` (the inverse of `command`, unclipped)."""
        return self.action_low + (command - self.command_low) / self.slope

    def pwm(self, action: float) -> int:
        """The PWM value the motor driver receives for `action`: `round(u * pwm_full_scale)`."""
        return round(self.command(action) * self.pwm_full_scale)

    def thrust(self, command: float) -> float:
        """Nominal rotor thrust in N at motor command `command` (the training frame's curve)."""
        c0, c1, c2 = self.thrust_curve
        return c0 + command * (c1 + command * c2)

    def to_json(self) -> str:
        """The fields as JSON; the motor model's only for the rotor-speed model, so that a command-model artifact
        reads in a robo_rl from before the rotor-speed model."""
        data = asdict(self)
        if self.motor_model == "command":
            del data["motor_model"], data["motor_idle_speed"]
        return json.dumps(data, sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> MotorActuator:
        """Parse `to_json`'s output; raises ActuatorError naming what is wrong."""
        return _from_json(cls, text)


def _from_json(cls: Any, text: str) -> Any:
    """`cls(**fields)` of a JSON object, strict about unknown and missing fields."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as error:
        raise ActuatorError(f"{ACTUATOR_KEY} is not JSON: {error}") from None
    if not isinstance(data, dict):
        raise ActuatorError(f"{ACTUATOR_KEY} must be a JSON object")
    known = {f.name for f in fields(cls)}
    unknown = sorted(set(data) - known)
    if unknown:
        raise ActuatorError(f"{ACTUATOR_KEY}: unknown fields {unknown} (written by a newer robo_rl?)")
    missing = sorted(f.name for f in fields(cls) if f.default is MISSING and f.name not in data)
    if missing:
        raise ActuatorError(f"{ACTUATOR_KEY}: missing fields {missing}")
    try:
        return cls(**_typed(data))
    except TypeError as error:
        raise ActuatorError(f"{ACTUATOR_KEY}: {error}") from None


@dataclass(frozen=True)
class DriveActuator:
    """What an RC car policy's drive action means to the car's ESC, and the speed loop it was trained on."""

    mode: str
    """"speed": the ESC's speed setpoint in m/s = scale × action (a VESC's speed mode); "throttle": a fraction of
    the motor's drive force (> 0) or of the brake force (< 0), no reverse."""
    scale: float
    """Speed mode: m/s of setpoint per unit of action (what a robot profile's speed field must scale the action
    by). Throttle mode: 1."""
    action: str = "drive"
    """Name of the action this describes."""
    max_reverse_speed: float = 0.0
    """Speed mode: the ESC's reverse speed limit the simulator applied, m/s (0: throttle mode, no reverse)."""
    time_constant: float = 0.0
    """Speed mode: time constant of the modelled first-order speed loop, s."""
    delay: float = 0.0
    """Delay from the action to the speed loop's (or motor's) reaction in the simulator, s."""
    max_acceleration: float = 0.0
    """Speed mode: the loop's acceleration limit, m/s^2."""
    max_deceleration: float = 0.0
    """Speed mode: the loop's braking limit, m/s^2."""
    car: str = ""
    """Name of the car model the policy was trained on."""
    kind: str = DRIVE_COMMAND
    """Always `DRIVE_COMMAND`."""

    def __post_init__(self) -> None:
        if self.kind != DRIVE_COMMAND:
            raise ActuatorError(f"actuator kind {self.kind!r} is not {DRIVE_COMMAND!r}")
        if self.mode not in DRIVE_MODES:
            raise ActuatorError(f"drive mode must be one of {DRIVE_MODES}, got {self.mode!r}")
        numbers = (self.scale, self.max_reverse_speed, self.time_constant, self.delay, self.max_acceleration)
        if not all(_finite(v) for v in (*numbers, self.max_deceleration)):
            raise ActuatorError("drive actuator fields must be finite numbers")
        if self.scale <= 0 or min(numbers[1:]) < 0 or self.max_deceleration < 0:
            raise ActuatorError("drive actuator: scale must be > 0 and the limits >= 0")
        if not self.action:
            raise ActuatorError("drive actuator: action must name an action")

    def to_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> DriveActuator:
        """Parse `to_json`'s output; raises ActuatorError naming what is wrong."""
        return _from_json(cls, text)


Actuator = MotorActuator | DriveActuator
"""Any actuator model a policy artifact may state."""


def actuator_from_json(text: str) -> Actuator:
    """The actuator model of `ACTUATOR_KEY`'s JSON, by its `kind`; ActuatorError naming what is wrong."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as error:
        raise ActuatorError(f"{ACTUATOR_KEY} is not JSON: {error}") from None
    kind = data.get("kind", MOTOR_COMMAND) if isinstance(data, dict) else None
    if kind == DRIVE_COMMAND:
        return DriveActuator.from_json(text)
    return MotorActuator.from_json(text)


def actuator_of(env: Any) -> Actuator | None:
    """The actuator model an env states (its `actuator` attribute; None without one), with the env's hover action
    (`env.hover_action[0]`, the same for every rotor) filled in where a motor model leaves it out."""
    actuator = getattr(env, "actuator", None)
    if actuator is None or isinstance(actuator, DriveActuator):
        return actuator
    if not isinstance(actuator, MotorActuator):
        raise TypeError(f"env.actuator must be a MotorActuator or DriveActuator, got {type(actuator).__name__}")
    hover = getattr(env, "hover_action", None)
    if actuator.hover_action is None and hover is not None:
        return replace(actuator, hover_action=float(hover[0]))
    return actuator


def _typed(data: dict[str, Any]) -> dict[str, Any]:
    out = dict(data)
    if isinstance(out.get("thrust_curve"), list):
        out["thrust_curve"] = tuple(out["thrust_curve"])
    return out


def _finite(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
