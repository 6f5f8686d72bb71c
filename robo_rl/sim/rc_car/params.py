"""Physical parameters of a 1/10-scale RC race car and their YAML files (`cars/*.yaml`).

Conventions used throughout `robo_rl.sim.rc_car`:

- World frame: x, y on the ground plane, yaw counter-clockwise from +x. Body frame: x forward, y left, at the
  centre of gravity (CoG); `vx`, `vy` are the body-frame velocity of the CoG, `yaw_rate` is positive to the left.
- Single-track (bicycle) model: one front and one rear axle, `lf` and `lr` from the CoG. The steering angle
  `steer` turns the front wheel, positive to the left.
- Tires: the lateral force of an axle follows Pacejka's magic formula in its slip angle,
  `F = D sin(C atan(B a - E (B a - atan(B a))))` with peak `D = friction * normal load` (static load split).
- Drive, by `command_mode`, what the car's ESC receives as the `drive` action in [-1, 1]:
  - "speed" (default; a VESC in speed mode, what an AckermannDriveStamped `speed` or a Twist `linear.x` sets):
    the ESC's speed setpoint `drive * speed_scale` m/s, clipped to [-max_reverse_speed, speed_scale]. The ESC's
    closed speed loop is modelled as first order: after `speed_loop_delay` s the forward speed approaches the
    setpoint as `exp(-t / speed_time_constant)`, its acceleration limited to `max_acceleration` while the speed
    grows in magnitude (forward or in reverse) and to `max_deceleration` while the setpoint opposes the motion
    (braking; a setpoint 0 actively stops the car, a negative one brakes, then reverses), both within the grip
    mu g. The loop holds its setpoint against drag and rolling resistance (the VESC's integral term), so those
    do not slow the car in this mode; `speed_scale` must lie below the drivetrain's `top_speed`.
  - "throttle" (an ESC driven by a throttle/brake or duty command): `throttle` in [0, 1] gives `throttle *
    max_motor_force * (1 - vx / max_speed)` (a DC motor's torque falls linearly with speed and vanishes at its
    no-load speed); `brake` in [0, 1] gives `brake * max_brake_force` against the motion; rolling resistance
    `rolling_resistance * m g` and drag `drag_coefficient vx^2` slow the car. No reverse gear.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

from robo_rl.sim.bundled import bundled_names, load_bundled, read_named_params

SPEED_MODE = "speed"
THROTTLE_MODE = "throttle"
COMMAND_MODES = (SPEED_MODE, THROTTLE_MODE)
"""`CarParams.command_mode` values: what the car's ESC receives as the drive action."""
CARS_PACKAGE = "robo_rl.sim.rc_car"
CARS_FOLDER = "cars"
"""The bundled car YAML files are package data in `CARS_PACKAGE`/`CARS_FOLDER`."""


@dataclass(frozen=True)
class TireParams:
    """Shape coefficients of Pacejka's magic formula for the lateral force of one axle (the peak D comes from
    the friction coefficient and the axle load)."""

    b: float
    """Stiffness factor B (1/rad); B * C is the cornering stiffness per unit of peak force."""
    c: float
    """Shape factor C (1); in (1, 2) the force peaks at slip angle tan(pi / (2 C)) / B (with E = 0)."""
    e: float = 0.0
    """Curvature factor E (1), <= 1; negative values sharpen the peak, positive values flatten it."""

    def __post_init__(self) -> None:
        if not (math.isfinite(self.b) and self.b > 0):
            raise ValueError(f"TireParams.b must be positive and finite, got {self.b}")
        if not (math.isfinite(self.c) and 0 < self.c < 2):
            raise ValueError(f"TireParams.c must lie in (0, 2), got {self.c}")
        if not (math.isfinite(self.e) and self.e <= 1):
            raise ValueError(f"TireParams.e must be <= 1 and finite, got {self.e}")

    @property
    def stiffness(self) -> float:
        """Slope of the force at zero slip per unit of peak force, B * C (1/rad)."""
        return self.b * self.c


@dataclass(frozen=True)
class CarParams:
    """Nominal physical parameters of one car (SI units, see the module docstring)."""

    name: str
    """Human-readable car name."""
    mass: float
    """Total mass in kg."""
    yaw_inertia: float
    """Moment of inertia about the vertical axis through the CoG in kg m^2."""
    lf: float
    """Distance from the CoG to the front axle in m."""
    lr: float
    """Distance from the CoG to the rear axle in m."""
    front_tire: TireParams
    """Magic-formula shape of the front axle."""
    rear_tire: TireParams
    """Magic-formula shape of the rear axle."""
    friction: float
    """Tire-road friction coefficient mu: the peak lateral force of an axle is mu times its normal load, and the
    longitudinal force (drive and brake together) is limited to mu m g."""
    max_steer: float
    """Largest front wheel angle in rad, either side."""
    max_steer_rate: float
    """Largest steering angle rate of the servo in rad/s."""
    max_motor_force: float
    """Drive force at full throttle from standstill in N."""
    max_brake_force: float
    """Brake force at full brake in N."""
    max_speed: float
    """No-load speed of the drive in m/s: the drive force falls linearly from max_motor_force at rest to zero
    at this speed (the reachable top speed is lower, see `top_speed`)."""
    rolling_resistance: float
    """Rolling resistance coefficient (1): a force of rolling_resistance * m g against the motion."""
    drag_coefficient: float
    """Lumped aerodynamic and drivetrain drag in N / (m/s)^2: a force of drag_coefficient * vx^2."""
    latency: float = 0.0
    """Delay between a command and its effect in s (servo, ESC and software pipeline); the task rounds it to
    whole control steps."""
    command_mode: str = "speed"
    """What the ESC receives as `drive` (see the module docstring): "speed", a speed setpoint in m/s =
    drive * speed_scale (a VESC's speed mode: what a robot profile sending AckermannDriveStamped speed or Twist
    linear.x must send), or "throttle", a throttle/brake fraction of the motor and brake forces (for drivers
    that take a duty or throttle command)."""
    speed_scale: float = 5.0
    """Speed mode: setpoint in m/s at drive = 1, the largest forward setpoint (the ESC's speed limit). A robot
    profile must send speed = speed_scale * drive."""
    max_reverse_speed: float = 2.0
    """Speed mode: largest reverse setpoint in m/s (the ESC's reverse speed limit); drive below
    -max_reverse_speed / speed_scale asks for no more."""
    speed_time_constant: float = 0.15
    """Speed mode: time constant in s of the ESC's closed speed loop (first order)."""
    speed_loop_delay: float = 0.0
    """Speed mode: dead time in s between a setpoint and the speed loop's reaction, on top of `latency`; the
    task rounds it to whole control steps."""
    max_acceleration: float = 5.0
    """Speed mode: largest acceleration in m/s^2 the loop commands while the speed grows in magnitude."""
    max_deceleration: float = 8.0
    """Speed mode: largest deceleration in m/s^2 the loop commands while braking (setpoint against the motion)."""
    length: float = 0.5
    """Body length in m (drawing only)."""
    width: float = 0.27
    """Body width in m (drawing only)."""
    gravity: float = 9.81
    """Gravitational acceleration in m/s^2."""

    def __post_init__(self) -> None:
        positive: tuple[str, ...] = ("mass", "yaw_inertia", "lf", "lr", "friction", "max_steer", "max_steer_rate")
        positive += ("max_motor_force", "max_brake_force", "max_speed", "length", "width", "gravity")
        positive += ("speed_scale", "max_reverse_speed", "speed_time_constant", "max_acceleration")
        positive += ("max_deceleration",)
        non_negative = ("rolling_resistance", "drag_coefficient", "latency", "speed_loop_delay")
        bad = [name for name in positive if not _finite(getattr(self, name)) or getattr(self, name) <= 0]
        bad += [name for name in non_negative if not _finite(getattr(self, name)) or getattr(self, name) < 0]
        if bad:
            raise ValueError(f"CarParams {self.name!r}: fields must be finite and > 0 ({non_negative}: >= 0): {bad}")
        if self.max_steer >= math.pi / 2:
            raise ValueError(f"CarParams {self.name!r}: max_steer must be below pi/2 rad, got {self.max_steer}")
        if self.rolling_resistance * self.mass * self.gravity >= self.max_motor_force:
            raise ValueError(
                f"CarParams {self.name!r}: rolling resistance exceeds max_motor_force; the car cannot move"
            )
        if self.command_mode not in COMMAND_MODES:
            raise ValueError(
                f"CarParams {self.name!r}: command_mode must be one of {COMMAND_MODES}, got {self.command_mode!r}"
            )
        if self.command_mode == SPEED_MODE and self.speed_scale >= self.top_speed:
            raise ValueError(
                f"CarParams {self.name!r}: speed_scale {self.speed_scale} m/s must lie below the drivetrain's top "
                f"speed {self.top_speed:.2f} m/s (the ESC cannot hold a faster setpoint)"
            )

    @property
    def wheelbase(self) -> float:
        """Distance between the axles, lf + lr, in m."""
        return self.lf + self.lr

    @property
    def front_load(self) -> float:
        """Static normal load on the front axle in N."""
        return self.mass * self.gravity * self.lr / self.wheelbase

    @property
    def rear_load(self) -> float:
        """Static normal load on the rear axle in N."""
        return self.mass * self.gravity * self.lf / self.wheelbase

    @property
    def cornering_stiffness(self) -> tuple[float, float]:
        """(front, rear) axle cornering stiffness B C D in N/rad at nominal friction."""
        return (
            self.front_tire.stiffness * self.friction * self.front_load,
            self.rear_tire.stiffness * self.friction * self.rear_load,
        )

    @property
    def understeer_gradient(self) -> float:
        """K in rad / (m/s^2) of the linear steady-state relation steer = (wheelbase + K v^2) yaw_rate / v:
        K = m (lr / C_front - lf / C_rear) / wheelbase; positive means understeer."""
        front, rear = self.cornering_stiffness
        return self.mass * (self.lr / front - self.lf / rear) / self.wheelbase

    @property
    def top_speed(self) -> float:
        """Steady speed at full throttle on a straight in m/s, where drive force balances drag and rolling
        resistance: drag v^2 + (max_motor_force / max_speed) v - (max_motor_force - rolling) = 0."""
        drive_slope = self.max_motor_force / self.max_speed
        net = self.max_motor_force - self.rolling_resistance * self.mass * self.gravity
        if self.drag_coefficient == 0:
            return net / drive_slope
        a = self.drag_coefficient
        return (-drive_slope + math.sqrt(drive_slope**2 + 4 * a * net)) / (2 * a)


def _finite(value: float) -> bool:
    return isinstance(value, int | float) and math.isfinite(value)


def car_names() -> list[str]:
    """Names of the bundled cars, usable as `load_car(name)`."""
    return bundled_names(CARS_PACKAGE, CARS_FOLDER, ".yaml")


def load_car(car: str | Path) -> CarParams:
    """Parameters of a bundled car by name (e.g. "f1tenth") or of a YAML file by path."""
    return load_bundled(car, CARS_PACKAGE, CARS_FOLDER, (".yaml", ".yml"), "car", load_car_file)


def load_car_file(path: str | Path) -> CarParams:
    """Read a car YAML file whose keys are the `CarParams` fields (`name` defaults to the file stem; the tires
    are mappings with keys b, c, e).

    Unknown or missing keys, wrong types and invalid values raise `robo_rl.config.ConfigError` (a ValueError)
    naming the file and the key.
    """
    return read_named_params(CarParams, path)
