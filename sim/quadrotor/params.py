"""Physical parameters of an X-configuration quadrotor and their YAML files (`frames/*.yaml`).

Conventions used throughout `robo_rl.sim.quadrotor`:

- Body frame FLU: x forward, y left, z up (along the thrust). World frame: z up, gravity along -z.
- Rotors in X configuration, indexed 0 front-right (+x, -y), 1 back-right (-x, -y), 2 back-left (-x, +y),
  3 front-left (+x, +y), each `arm_length / sqrt(2)` from the centre along x and along y.
- `rotor_spin[i]` is "ccw" or "cw" seen from above. A rotor spinning ccw (angular velocity along +z body)
  pushes the body with a yaw reaction torque of `-torque_coefficient * speed^2` (clockwise), a cw one `+...`.
  Diagonal rotors spin the same way so that the reaction torques cancel at equal speeds.
- Body rates and torques are right-handed about the body axes: positive roll (about +x) lifts the left side and
  comes from faster left rotors (2, 3); positive pitch (about +y) lowers the nose and comes from faster back
  rotors (1, 2); positive yaw (about +z, ccw seen from above) comes from faster cw rotors (1, 3).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

from robo_rl.sim.bundled import bundled_names, load_bundled, read_named_params

FRAMES_PACKAGE = "robo_rl.sim.quadrotor"
FRAMES_FOLDER = "frames"
"""The bundled frame YAML files are package data in `FRAMES_PACKAGE`/`FRAMES_FOLDER`."""
ROTOR_SIGNS_XY = ((1.0, -1.0), (-1.0, -1.0), (-1.0, 1.0), (1.0, 1.0))
"""Signs of each rotor's (x, y) offset in the rotor order above."""
SPIN_SIGN = {"ccw": 1, "cw": -1}
"""Rotor spin name to the sign of its angular velocity along body +z."""


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
    thrust_coefficient: float
    """Rotor thrust per squared rotor speed, in N / (rad/s)^2: thrust = c_t * speed^2."""
    torque_coefficient: float
    """Rotor drag (yaw reaction) torque per squared rotor speed, in N m / (rad/s)^2."""
    motor_time_constant: float
    """First-order time constant of the rotor speed response to a speed command, in s."""
    max_rotor_speed: float
    """Largest rotor speed in rad/s."""
    min_rotor_speed: float = 0.0
    """Smallest rotor speed in rad/s (idle speed of the motor controller)."""
    gravity: float = 9.81
    """Gravitational acceleration in m/s^2."""
    rotor_spin: tuple[str, str, str, str] = ("ccw", "cw", "ccw", "cw")
    """Spin direction of rotors 0..3 seen from above, "ccw" or "cw"; diagonal rotors must match."""

    def __post_init__(self) -> None:
        if len(self.inertia) != 3:
            raise ValueError(f"QuadrotorParams {self.name!r}: inertia needs 3 values, got {self.inertia}")
        positive = {
            "mass": self.mass,
            "arm_length": self.arm_length,
            "thrust_coefficient": self.thrust_coefficient,
            "torque_coefficient": self.torque_coefficient,
            "motor_time_constant": self.motor_time_constant,
            "max_rotor_speed": self.max_rotor_speed,
            "gravity": self.gravity,
            **{f"inertia[{i}]": value for i, value in enumerate(self.inertia)},
        }
        bad = [name for name, value in positive.items() if not (math.isfinite(value) and value > 0)]
        if bad:
            raise ValueError(f"QuadrotorParams {self.name!r}: fields must be positive and finite: {bad}")
        if not 0.0 <= self.min_rotor_speed < self.max_rotor_speed:
            raise ValueError(f"QuadrotorParams {self.name!r}: need 0 <= min_rotor_speed < max_rotor_speed")
        self._check_spin()
        if not self.min_rotor_speed < self.hover_rotor_speed < self.max_rotor_speed:
            raise ValueError(
                f"QuadrotorParams {self.name!r}: hover rotor speed {self.hover_rotor_speed:.1f} rad/s is outside "
                f"({self.min_rotor_speed}, {self.max_rotor_speed}); the frame cannot hover"
            )

    def _check_spin(self) -> None:
        if len(self.rotor_spin) != 4 or any(spin not in SPIN_SIGN for spin in self.rotor_spin):
            raise ValueError(f"QuadrotorParams {self.name!r}: rotor_spin needs 4 of 'ccw'/'cw', got {self.rotor_spin}")
        spin = self.rotor_spin
        if spin[0] != spin[2] or spin[1] != spin[3] or spin[0] == spin[1]:
            raise ValueError(
                f"QuadrotorParams {self.name!r}: diagonal rotors (0, 2) and (1, 3) must spin the same way and "
                f"the two pairs oppositely, got {spin}"
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

    @property
    def max_rotor_thrust(self) -> float:
        """Thrust of one rotor at max_rotor_speed, in N."""
        return self.thrust_coefficient * self.max_rotor_speed**2

    @property
    def min_rotor_thrust(self) -> float:
        """Thrust of one rotor at min_rotor_speed, in N."""
        return self.thrust_coefficient * self.min_rotor_speed**2

    @property
    def hover_rotor_speed(self) -> float:
        """Rotor speed in rad/s at which the four rotors together carry the weight."""
        return math.sqrt(self.weight / (4.0 * self.thrust_coefficient))

    @property
    def thrust_to_weight(self) -> float:
        """Total thrust at max_rotor_speed divided by the weight."""
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
    return read_named_params(QuadrotorParams, path)
