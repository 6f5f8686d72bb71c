"""The RC car's single-track equations, written once for two backends: torch rows and numba floats.

The functions use arithmetic, comparisons and a small math vocabulary (`atan`, `atan2`, `sin`, `cos`, `tan`,
`sign`, `clamp`, `at_least`, `at_most`), which this module binds to torch (arguments are `(N,)` tensors, one per
state component: `robo_rl.sim.rc_car.dynamics`), and `robo_rl.sim.rc_car.fused` binds to `math` for its per-env
numba kernel. Model, frames and units: `robo_rl.sim.rc_car.dynamics` and `robo_rl.sim.rc_car.params`.

A state is a 7-tuple (x, y, yaw, vx, vy, yaw_rate, steer).
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

import torch
from torch import atan, atan2, cos, sign, sin, tan

Scalar = Any
"""A float (numba) or a `(N,)` tensor (torch)."""
KINEMATIC_SPEED = 0.5
"""m/s: below it the step is the kinematic bicycle's; the slip angles use at least this forward speed."""
DYNAMIC_SPEED = 1.5
"""m/s: above it the step is the dynamic model's; in between the two are blended linearly."""
__all__ = ["atan", "atan2", "cos", "sign", "sin", "tan"]  # the torch vocabulary (numba copies rebind these)


def clamp(x: Scalar, low: float, high: float) -> Scalar:
    return torch.clamp(x, low, high)


def at_least(x: Scalar, low: Scalar) -> Scalar:
    return torch.clamp(x, min=low)


def at_most(x: Scalar, high: Scalar) -> Scalar:
    return torch.clamp(x, max=high)


class Car(NamedTuple):
    """Per-env quantities (floats or `(N,)` rows): derived from mass, yaw inertia and friction."""

    inv_mass: Scalar
    inv_yaw_inertia: Scalar
    front_peak: Scalar
    """Peak lateral force of the front axle, N (friction times its static load)."""
    rear_peak: Scalar
    grip: Scalar
    """friction * g: the largest acceleration the tires transmit, m/s^2."""
    motor: Scalar
    """max_motor_force / mass, m/s^2."""
    brake: Scalar
    """max_brake_force / mass, m/s^2."""
    drag: Scalar
    """drag_coefficient / mass, 1/m."""
    force_scale: Scalar
    """nominal mass / mass: the speed loop's acceleration limits are the nominal car's times this (the ESC limits
    the motor's current, hence its force)."""


class Chassis(NamedTuple):
    """The car's constant geometry, limits and tire shapes (floats)."""

    lf: float
    lr: float
    wheelbase: float
    max_speed: float
    rolling: float
    """rolling_resistance * g, m/s^2."""
    max_steer: float
    max_steer_rate: float
    front_b: float
    front_c: float
    front_e: float
    rear_b: float
    rear_c: float
    rear_e: float
    speed_mode: float
    """1.0: drive is the ESC's speed setpoint fraction (`CarParams.command_mode` "speed"); 0.0: throttle/brake."""
    speed_scale: float
    """m/s of setpoint at drive = 1 (the largest forward setpoint)."""
    max_reverse_speed: float
    speed_time_constant: float
    """s, of the ESC's first-order speed loop."""
    max_acceleration: float
    """m/s^2 while the speed grows in magnitude."""
    max_deceleration: float
    """m/s^2 while braking (the setpoint opposes the motion)."""


def magic_formula(slip: Scalar, b: float, c: float, e: float, peak: Scalar) -> Scalar:
    """Pacejka's lateral force `D sin(C atan(B a - E (B a - atan(B a))))` for slip angle a (rad)."""
    bx = b * slip
    if e != 0.0:
        bx = bx - e * (bx - atan(bx))
    return peak * sin(c * atan(bx))


def slip_angles(vx: Scalar, vy: Scalar, yaw_rate: Scalar, steer: Scalar, lf: float, lr: float) -> tuple:
    """(front, rear) slip angles in rad; the forward speed is taken as at least `KINEMATIC_SPEED`."""
    forward = at_least(vx, KINEMATIC_SPEED)
    return steer - atan2(vy + lf * yaw_rate, forward), atan2(lr * yaw_rate - vy, forward)


def drive_acceleration(vx: Scalar, throttle: Scalar, car: Car, chassis: Chassis) -> Scalar:
    """Motor acceleration in m/s^2 for throttle in [0, 1]: the motor force falls linearly with speed to zero at
    the no-load speed, and the tires transmit at most mu g."""
    available = at_least(1.0 - vx * (1.0 / chassis.max_speed), 0.0) * car.motor
    return at_most(throttle * available, car.grip)


def speed_setpoint(drive: Scalar, chassis: Chassis) -> Scalar:
    """The ESC's speed setpoint in m/s of a drive action: drive * speed_scale, within the ESC's limits
    [-max_reverse_speed, speed_scale]."""
    return clamp(drive * chassis.speed_scale, -chassis.max_reverse_speed, chassis.speed_scale)


def esc_acceleration(vx: Scalar, setpoint: Scalar, car: Car, chassis: Chassis, h: float) -> Scalar:
    """Acceleration in m/s^2 the ESC's speed loop gives over `h` s toward `setpoint` (m/s): the exact step of the
    first-order loop, `(setpoint - vx) (1 - exp(-h / tau)) / h`, limited to max_acceleration while |vx| grows,
    to max_deceleration while the setpoint opposes the motion (braking), both scaled by nominal mass / mass, and
    to the grip mu g."""
    error = setpoint - vx
    braking = vx * error < 0.0
    extra = chassis.max_deceleration - chassis.max_acceleration
    limit = at_most((chassis.max_acceleration + extra * braking) * car.force_scale, car.grip)
    gain = (1.0 - math.exp(-h / chassis.speed_time_constant)) / h
    return clamp(error * gain, -limit, limit)


def stopping_deceleration(brake: Scalar, car: Car, chassis: Chassis) -> Scalar:
    """Coulomb-type deceleration magnitude in m/s^2 against the motion: brake (at most mu g) plus rolling."""
    return at_most(brake * car.brake, car.grip) + chassis.rolling


def steer_toward(steer: Scalar, command: Scalar, chassis: Chassis, h: float) -> Scalar:
    """Wheel angle after `h` s of moving toward `command` (rad) at most at the servo rate, within limits."""
    step = chassis.max_steer_rate * h
    target = clamp(command, -chassis.max_steer, chassis.max_steer)
    return steer + clamp(target - steer, -step, step)


def dynamic_weight(vx: Scalar) -> Scalar:
    """Weight of the dynamic model: 0 below `KINEMATIC_SPEED`, 1 above `DYNAMIC_SPEED`, linear between."""
    return clamp((vx - KINEMATIC_SPEED) * (1.0 / (DYNAMIC_SPEED - KINEMATIC_SPEED)), 0.0, 1.0)


def wrap_angle(angle: Scalar) -> Scalar:
    """Angles in rad wrapped to [-pi, pi) (`%` is floored on both backends, like torch.remainder)."""
    return (angle + math.pi) % (2 * math.pi) - math.pi


def substep(s: tuple, steer_command: Scalar, drive: Scalar, car: Car, chassis: Chassis, h: float) -> tuple:
    """One semi-implicit Euler step of `h` s; `drive` in [-1, 1] is the ESC's speed setpoint fraction (speed
    mode) or throttle (> 0) / brake (< 0) (throttle mode)."""
    x, y, yaw, vx, vy, yaw_rate, steer = s
    steer = steer_toward(steer, steer_command, chassis, h)
    weight = dynamic_weight(vx)
    front_slip, rear_slip = slip_angles(vx, vy, yaw_rate, steer, chassis.lf, chassis.lr)
    front = magic_formula(front_slip, chassis.front_b, chassis.front_c, chassis.front_e, car.front_peak)
    rear = magic_formula(rear_slip, chassis.rear_b, chassis.rear_c, chassis.rear_e, car.rear_peak)
    front_x, front_y = front * sin(steer), front * cos(steer)
    # The kinematic model keeps only the drive along the body axis; the dynamic one adds the front tire force
    # and the rotating-frame term.
    lateral_terms = vy * yaw_rate - front_x * car.inv_mass
    if chassis.speed_mode > 0.5:  # the ESC's speed loop holds its setpoint against drag and rolling resistance
        push = esc_acceleration(vx, speed_setpoint(drive, chassis), car, chassis, h)
        new_vx = vx + h * (push + weight * lateral_terms)
    else:
        push = drive_acceleration(vx, at_least(drive, 0.0), car, chassis) - car.drag * vx * abs(vx)
        new_vx = vx + h * (push + weight * lateral_terms)
        stop = h * stopping_deceleration(at_least(-drive, 0.0), car, chassis)
        new_vx = sign(new_vx) * at_least(abs(new_vx) - stop, 0.0)
    new_vy = vy + h * ((rear + front_y) * car.inv_mass - vx * yaw_rate)
    new_rate = yaw_rate + h * (chassis.lf * front_y - chassis.lr * rear) * car.inv_yaw_inertia
    kinematic_rate = new_vx * tan(steer) * (1.0 / chassis.wheelbase)
    new_vy = chassis.lr * kinematic_rate + weight * (new_vy - chassis.lr * kinematic_rate)
    new_rate = kinematic_rate + weight * (new_rate - kinematic_rate)
    cos_yaw, sin_yaw = cos(yaw), sin(yaw)
    new_x = x + h * (new_vx * cos_yaw - new_vy * sin_yaw)
    new_y = y + h * (new_vx * sin_yaw + new_vy * cos_yaw)
    return (new_x, new_y, yaw + h * new_rate, new_vx, new_vy, new_rate, steer)


def integrate(
    s: tuple, steer_command: Scalar, drive: Scalar, car: Car, chassis: Chassis, dt: float, substeps: int
) -> tuple:
    """The state after `dt` s of constant commands in `substeps` semi-implicit Euler steps (yaw wrapped)."""
    h = dt / substeps
    for _ in range(substeps):
        s = substep(s, steer_command, drive, car, chassis, h)
    x, y, yaw, vx, vy, yaw_rate, steer = s
    return (x, y, wrap_angle(yaw), vx, vy, yaw_rate, steer)
