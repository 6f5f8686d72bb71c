"""Physical parameters of an X-configuration quadrotor and their YAML files (`frames/*.yaml`).

Conventions used throughout `robo_rl.sim.quadrotor`:

- Body frame FLU: x forward, y left, z up (along the thrust). World frame: z up, gravity along -z.
- Rotors in X configuration, indexed 0 front-right (+x, -y), 1 back-right (-x, -y), 2 back-left (-x, +y),
  3 front-left (+x, +y), each `arm_length / sqrt(2)` from the centre along x and along y.
- Motor model (the form of Learning to Fly's identified Crazyflie model, and of the Crazyflie's PWM-to-thrust
  identifications): each motor has a state u, the normalized motor command (PWM duty ratio) it has reached, which
  follows the command with a first-order lag whose time constant is `motor_rise_time_constant` while the command is
  at or above the state and `motor_fall_time_constant` below it (propellers spin down slower than they spin up).
  Rotor i pushes with `thrust_curve[0] + thrust_curve[1] u + thrust_curve[2] u^2` N along body +z.
  `motor_model: rotor_speed` is the other common identified form: first order in rotor speed, with the thrust
  quadratic in the speed. The state u is the rotor speed in command units (speed / full speed = idle + (1 - idle) u,
  idle = `motor_idle_speed`), so the curve above is quadratic in the speed too; it rises with the rise constant and
  falls at a rate proportional to the speed, (idle + (1 - idle) u) / `motor_fall_time_constant` (an unbraked rotor
  spins down against its own drag, slower at low speed), the fall constant being the one at full speed.
  `robo-rl sysid` chooses between the two by the log's evidence.
- `rotor_spin[i]` is "ccw" or "cw" seen from above. A ccw rotor (angular velocity along +z body) pushes the body
  with a yaw reaction torque of `-torque_to_thrust * thrust` (clockwise), a cw one `+...`. Diagonal rotors spin
  the same way so that the reaction torques cancel at equal commands.
- Body rates and torques are right-handed about the body axes: positive roll (about +x) lifts the left side and
  comes from stronger left rotors (2, 3); positive pitch (about +y) lowers the nose and comes from stronger back
  rotors (1, 2); positive yaw (about +z, ccw seen from above) comes from stronger cw rotors (1, 3).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

from robo_rl.config import ConfigError, from_dict, read_yaml
from robo_rl.sim.bundled import bundled_names, load_bundled

FRAMES_PACKAGE = "robo_rl.sim.quadrotor"
FRAMES_FOLDER = "frames"
"""The bundled frame YAML files are package data in `FRAMES_PACKAGE`/`FRAMES_FOLDER`."""
ROTOR_SIGNS_XY = ((1.0, -1.0), (-1.0, -1.0), (-1.0, 1.0), (1.0, 1.0))
"""Signs of each rotor's (x, y) offset in the rotor order above."""
THRUST_DIP = 0.02
"""How far below 0 (as a share of full thrust) a thrust curve may reach near command 0: an identified curve is
measured over the commands flown and extrapolated below them."""
MOTOR_MODELS = ("command", "rotor_speed")
"""`QuadrotorParams.motor_model` values (see the module docstring)."""
SPIN_SIGN = {"ccw": 1, "cw": -1}
"""Rotor spin name to the sign of its angular velocity along body +z."""
"""Keys of the earlier rotor-speed model, converted on load (see the module docstring)."""


@dataclass(frozen=True)
class QuadrotorParams:
    """Nominal physical parameters of one X-configuration quadrotor (SI units, see the module docstring)."""

    name: str
    """Human-readable frame name."""
    mass: float
    """Total mass in kg."""
    arm_length: float
    """Distance from the centre of mass to each rotor axis in m (rotor offsets are arm_length/sqrt(2) in x, y)."""
    inertia: tuple[float, float, float]
    """Principal moments of inertia (Ixx, Iyy, Izz) about the body axes in kg m^2."""
    thrust_curve: tuple[float, float, float]
    """Per-rotor thrust in N as `c0 + c1 u + c2 u^2` of the motor state u in [0, 1]."""
    torque_to_thrust: float
    """Yaw reaction torque per N of rotor thrust, in m."""
    motor_rise_time_constant: float
    """Time constant of the motor state while its command is at or above it, in s."""
    motor_fall_time_constant: float
    """Time constant of the motor state while its command is below it, in s."""
    min_command: float = 0.0
    """Motor command at action -1 (an ESC's idle, or 0)."""
    max_command: float = 1.0
    """Motor command at action +1."""
    linear_drag: tuple[float, float, float] = (0.0, 0.0, 0.0)
    """Linear drag coefficients in N/(m/s) along the world axes (force = -drag * velocity); 0: none."""
    gravity: float = 9.81
    """Gravitational acceleration in m/s^2."""
    rotor_spin: tuple[str, str, str, str] = ("ccw", "cw", "ccw", "cw")
    """Spin direction of rotors 0..3 seen from above, "ccw" or "cw"; diagonal rotors must match."""
    source: str = ""
    """Where the numbers come from (free text; the frame files say it in full in their comments)."""
    motor_model: str = "command"
    """"command" (a constant fall time constant) or "rotor_speed" (see the module docstring)."""
    motor_idle_speed: float = 1.0
    """rotor_speed only: the rotor speed at command 0 as a fraction of full speed, in [0, 1]."""

    def __post_init__(self) -> None:
        if len(self.inertia) != 3 or len(self.thrust_curve) != 3 or len(self.linear_drag) != 3:
            raise ValueError(f"QuadrotorParams {self.name!r}: inertia, thrust_curve and linear_drag need 3 values")
        positive = {
            "mass": self.mass,
            "arm_length": self.arm_length,
            "torque_to_thrust": self.torque_to_thrust,
            "motor_rise_time_constant": self.motor_rise_time_constant,
            "motor_fall_time_constant": self.motor_fall_time_constant,
            "gravity": self.gravity,
            **{f"inertia[{i}]": value for i, value in enumerate(self.inertia)},
        }
        bad = [name for name, value in positive.items() if not (math.isfinite(value) and value > 0)]
        bad += [f"linear_drag[{i}]" for i, d in enumerate(self.linear_drag) if not (math.isfinite(d) and d >= 0)]
        if bad:
            raise ValueError(f"QuadrotorParams {self.name!r}: fields must be positive (drag >= 0) and finite: {bad}")
        if not 0.0 <= self.min_command < self.max_command <= 1.0:
            raise ValueError(f"QuadrotorParams {self.name!r}: need 0 <= min_command < max_command <= 1")
        self._check_spin()
        self._check_thrust_curve()
        self._check_motor_model()

    def _check_motor_model(self) -> None:
        if self.motor_model not in MOTOR_MODELS:
            raise ValueError(f"QuadrotorParams {self.name!r}: motor_model {self.motor_model!r}: use {MOTOR_MODELS}")
        if not (math.isfinite(self.motor_idle_speed) and 0.0 <= self.motor_idle_speed <= 1.0):
            raise ValueError(f"QuadrotorParams {self.name!r}: motor_idle_speed must be in [0, 1]")
        if self.motor_model == "command" and self.motor_idle_speed != 1.0:
            raise ValueError(
                f"QuadrotorParams {self.name!r}: motor_idle_speed is the rotor_speed model's; set motor_model: "
                "rotor_speed or drop it"
            )

    @property
    def fall_idle_fraction(self) -> float:
        """The fall rate at motor state 0 over the one at full speed: motor_idle_speed for the rotor-speed model,
        1 for the command model (a constant fall rate)."""
        return self.motor_idle_speed if self.motor_model == "rotor_speed" else 1.0

    def _check_spin(self) -> None:
        if len(self.rotor_spin) != 4 or any(spin not in SPIN_SIGN for spin in self.rotor_spin):
            raise ValueError(f"QuadrotorParams {self.name!r}: rotor_spin needs 4 of 'ccw'/'cw', got {self.rotor_spin}")
        spin = self.rotor_spin
        if spin[0] != spin[2] or spin[1] != spin[3] or spin[0] == spin[1]:
            raise ValueError(
                f"QuadrotorParams {self.name!r}: diagonal rotors (0, 2) and (1, 3) must spin the same way and "
                f"the two pairs oppositely, got {spin}"
            )

    def _check_thrust_curve(self) -> None:
        c0, c1, c2 = self.thrust_curve
        lowest = c0 - c1 * c1 / (4.0 * c2) if c2 > 0 and -c1 / (2.0 * c2) > 0 else c0  # the minimum over u >= 0
        dip = THRUST_DIP * (c0 + c1 + c2)
        if not all(math.isfinite(c) for c in self.thrust_curve) or c2 < 0 or lowest < -dip or c1 + 2.0 * c2 <= 0:
            raise ValueError(
                f"QuadrotorParams {self.name!r}: thrust_curve {self.thrust_curve} must be finite with c2 >= 0, thrust "
                f"rising with the command and not below -{THRUST_DIP:.0%} of full thrust (an identified curve, "
                "extrapolated below the commands flown, may dip a little under 0)"
            )
        if not self.min_rotor_thrust < self.weight / 4 < self.max_rotor_thrust:
            raise ValueError(
                f"QuadrotorParams {self.name!r}: rotor thrust spans [{self.min_rotor_thrust:.4g}, "
                f"{self.max_rotor_thrust:.4g}] N, which does not hold a quarter of the weight "
                f"({self.weight / 4:.4g} N); the frame cannot hover"
            )

    @property
    def rotor_positions(self) -> tuple[tuple[float, float], ...]:
        """(x, y) of rotors 0..3 in the body frame, in m."""
        offset = self.arm_length / math.sqrt(2.0)
        return tuple((sx * offset, sy * offset) for sx, sy in ROTOR_SIGNS_XY)

    @property
    def spin_signs(self) -> tuple[int, ...]:
        """+1 for a ccw rotor, -1 for a cw rotor, rotors 0..3."""
        return tuple(SPIN_SIGN[spin] for spin in self.rotor_spin)

    @property
    def weight(self) -> float:
        """Weight in N."""
        return self.mass * self.gravity

    def rotor_thrust(self, command: float) -> float:
        """Thrust of one rotor in N whose motor state is `command`."""
        c0, c1, c2 = self.thrust_curve
        return c0 + command * (c1 + command * c2)

    def command_for_thrust(self, thrust: float) -> float:
        """The motor state at which one rotor pushes `thrust` N (the rising branch of the curve, unclipped)."""
        c0, c1, c2 = self.thrust_curve
        if c2 == 0.0:
            return (thrust - c0) / c1
        return (-c1 + math.sqrt(max(c1 * c1 - 4.0 * c2 * (c0 - thrust), 0.0))) / (2.0 * c2)

    @property
    def max_rotor_thrust(self) -> float:
        """Thrust of one rotor at max_command, in N."""
        return self.rotor_thrust(self.max_command)

    @property
    def min_rotor_thrust(self) -> float:
        """Thrust of one rotor at min_command, in N."""
        return self.rotor_thrust(self.min_command)

    @property
    def hover_command(self) -> float:
        """Motor command at which the four rotors together carry the weight."""
        return self.command_for_thrust(self.weight / 4.0)

    @property
    def thrust_to_weight(self) -> float:
        """Total thrust at max_command divided by the weight."""
        return 4.0 * self.max_rotor_thrust / self.weight


def frame_names() -> list[str]:
    """Names of the bundled frames, usable as `load_frame(name)`."""
    return bundled_names(FRAMES_PACKAGE, FRAMES_FOLDER, ".yaml")


def load_frame(frame: str | Path) -> QuadrotorParams:
    """Parameters of a bundled frame by name (e.g. "crazyflie_2_1") or of a YAML file by path."""
    return load_bundled(frame, FRAMES_PACKAGE, FRAMES_FOLDER, (".yaml", ".yml"), "frame", load_params)


def load_params(path: str | Path) -> QuadrotorParams:
    """Read a frame YAML file whose keys are the `QuadrotorParams` fields (`name` defaults to the file stem).

    Unknown or missing keys, wrong types and invalid values raise `robo_rl.config.ConfigError` (a ValueError)
    naming the file and the key.
    """
    data = read_yaml(path)
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a mapping of QuadrotorParams fields, got {type(data).__name__}")
    try:
        return from_dict(QuadrotorParams, {"name": Path(path).stem, **data})
    except (ConfigError, ValueError) as error:
        raise ConfigError(f"{path}: {error}") from None
