"""The quadrotor's equations, written once for two backends: torch rows and numba scalars.

Every function here uses only `+ - * / **`, `abs` and comparisons, on arguments that are either Python/numba
floats (one env, inside the fused per-env kernel of `robo_rl.sim.quadrotor.fused`) or torch tensors of shape
`(N,)` (one row per state component, all envs at once, in `robo_rl.sim.quadrotor.dynamics`). So the torch path
(CPU eager, torch.compile, CUDA) and the numba path integrate the same equations; `tests/sim/quadrotor/
test_fused.py` checks the two against each other.

A state is a 17-tuple: position (3, world, m, z up), attitude quaternion (4, w x y z, body to world), linear
velocity (3, world, m/s), angular velocity (3, body, rad/s), motor states (4, the normalized motor command u each
motor has reached, 0..1). Model and conventions: see `robo_rl.sim.quadrotor.dynamics` and
`robo_rl.sim.quadrotor.params`.

`Body` holds one env's (or every env's, as rows) physical parameters; `Geometry` the frame's constant rotor
layout: with rotor thrusts T_i = c0 + c1 u_i + c2 u_i^2, torque_x = sum(y_i T_i), torque_y = sum(-x_i T_i),
torque_z = k sum(-s_i T_i) (k = torque_to_thrust).
"""

from __future__ import annotations

from typing import Any, NamedTuple

Scalar = Any
"""A float (numba) or a `(N,)` tensor (torch)."""
State = tuple[Scalar, ...]
"""17 scalars, in the order above."""


class Body(NamedTuple):
    """Physical parameters of one env (floats) or of all envs (rows)."""

    inv_mass: Scalar
    inertia_x: Scalar
    inertia_y: Scalar
    inertia_z: Scalar
    thrust_0: Scalar
    """Thrust curve c0 (N), c1 and c2 (N per unit command, squared): T = c0 + c1 u + c2 u^2."""
    thrust_1: Scalar
    thrust_2: Scalar
    torque_to_thrust: Scalar
    """Yaw reaction torque per N of rotor thrust, m."""
    rise_rate: Scalar
    """1 / motor rise time constant, 1/s (command at or above the motor state)."""
    fall_rate: Scalar
    """Motor fall rate at state 0, 1/s (command below the motor state): 1 / the fall time constant for the command
    motor model, idle / the constant for the rotor-speed model."""
    fall_slope: Scalar
    """Growth of the fall rate per unit of motor state, 1/s: 0 for the command model, (1 - idle) / the fall constant
    for the rotor-speed model, whose rotors spin down at a rate proportional to their speed."""
    drag_x: Scalar
    """Linear drag / mass along the world axes, 1/s (acceleration = -drag * velocity)."""
    drag_y: Scalar
    drag_z: Scalar
    acceleration_x: Scalar
    """World acceleration from everything but the rotors and drag (gravity, external force / mass), m/s^2."""
    acceleration_y: Scalar
    acceleration_z: Scalar
    torque_x: Scalar
    """External torque in the body frame, N m."""
    torque_y: Scalar
    torque_z: Scalar


class Geometry(NamedTuple):
    """The frame's rotor layout: y_i, -x_i and -s_i (spin sign) of rotors 0..3."""

    y: tuple[float, float, float, float]
    minus_x: tuple[float, float, float, float]
    minus_spin: tuple[float, float, float, float]


def quaternion_rate(w: Scalar, x: Scalar, y: Scalar, z: Scalar, p: Scalar, q: Scalar, r: Scalar) -> State:
    """`q (x) (0, omega) / 2` for body rates (p, q, r)."""
    return (
        -0.5 * (x * p + y * q + z * r),
        0.5 * (w * p + y * r - z * q),
        0.5 * (w * q + z * p - x * r),
        0.5 * (w * r + x * q - y * p),
    )


def rotation(w: Scalar, x: Scalar, y: Scalar, z: Scalar) -> State:
    """Rotation matrix body to world of a unit quaternion, row-major: R00, R01, ..., R22."""
    xx, yy, zz = x * x, y * y, z * z
    xy, xz, yz, wx, wy, wz = x * y, x * z, y * z, w * x, w * y, w * z
    return (
        1.0 - 2.0 * (yy + zz), 2.0 * (xy - wz), 2.0 * (xz + wy),
        2.0 * (xy + wz), 1.0 - 2.0 * (xx + zz), 2.0 * (yz - wx),
        2.0 * (xz - wy), 2.0 * (yz + wx), 1.0 - 2.0 * (xx + yy),
    )  # fmt: skip


def motor_rate(command: Scalar, motor: Scalar, body: Body) -> Scalar:
    """d(motor state)/dt: first order toward the command, faster rising than falling (`(c >= u)` is 1 or 0); the
    fall rate grows with the motor state by `fall_slope` (the rotor-speed model)."""
    fall = body.fall_rate + body.fall_slope * motor
    rate = fall + (body.rise_rate - fall) * (command >= motor)
    return (command - motor) * rate


def rotor_thrust(u: Scalar, body: Body) -> Scalar:
    """Rotor thrust in N of motor state u."""
    return body.thrust_0 + u * (body.thrust_1 + u * body.thrust_2)


def derivative(s: State, command: State, body: Body, geometry: Geometry) -> State:
    """Time derivative of state `s` under motor commands `command` (4, normalized), held over the step."""
    w, x, y, z = s[3], s[4], s[5], s[6]
    p, q, r = s[10], s[11], s[12]
    f0, f1 = rotor_thrust(s[13], body), rotor_thrust(s[14], body)
    f2, f3 = rotor_thrust(s[15], body), rotor_thrust(s[16], body)
    thrust = (f0 + f1 + f2 + f3) * body.inv_mass
    gy, gx, gs = geometry.y, geometry.minus_x, geometry.minus_spin
    tau_x = gy[0] * f0 + gy[1] * f1 + gy[2] * f2 + gy[3] * f3 + body.torque_x
    tau_y = gx[0] * f0 + gx[1] * f1 + gx[2] * f2 + gx[3] * f3 + body.torque_y
    tau_z = body.torque_to_thrust * (gs[0] * f0 + gs[1] * f1 + gs[2] * f2 + gs[3] * f3) + body.torque_z
    # body z axis in the world frame: the thrust direction
    zx, zy, zz = 2.0 * (x * z + w * y), 2.0 * (y * z - w * x), 1.0 - 2.0 * (x * x + y * y)
    ix, iy, iz = body.inertia_x, body.inertia_y, body.inertia_z
    hx, hy, hz = ix * p, iy * q, iz * r  # angular momentum; Euler: I dw/dt = tau - w x (I w)
    dw, dx, dy, dz = quaternion_rate(w, x, y, z, p, q, r)
    vx, vy, vz = s[7], s[8], s[9]
    return (
        vx, vy, vz,
        dw, dx, dy, dz,
        body.acceleration_x + zx * thrust - body.drag_x * vx,
        body.acceleration_y + zy * thrust - body.drag_y * vy,
        body.acceleration_z + zz * thrust - body.drag_z * vz,
        (tau_x - (q * hz - r * hy)) / ix, (tau_y - (r * hx - p * hz)) / iy, (tau_z - (p * hy - q * hx)) / iz,
        motor_rate(command[0], s[13], body), motor_rate(command[1], s[14], body),
        motor_rate(command[2], s[15], body), motor_rate(command[3], s[16], body),
    )  # fmt: skip


def axpy(s: State, k: State, a: float) -> State:
    """`s + a k`, component by component."""
    return (
        s[0] + a * k[0], s[1] + a * k[1], s[2] + a * k[2],
        s[3] + a * k[3], s[4] + a * k[4], s[5] + a * k[5], s[6] + a * k[6],
        s[7] + a * k[7], s[8] + a * k[8], s[9] + a * k[9],
        s[10] + a * k[10], s[11] + a * k[11], s[12] + a * k[12],
        s[13] + a * k[13], s[14] + a * k[14], s[15] + a * k[15], s[16] + a * k[16],
    )  # fmt: skip


def rk4(s: State, command: State, body: Body, geometry: Geometry, h: float) -> State:
    """One classic Runge-Kutta 4 step of `h` seconds (quaternion not renormalized)."""
    k1 = derivative(s, command, body, geometry)
    k2 = derivative(axpy(s, k1, h / 2), command, body, geometry)
    k3 = derivative(axpy(s, k2, h / 2), command, body, geometry)
    k4 = derivative(axpy(s, k3, h), command, body, geometry)
    return axpy(s, axpy(axpy(axpy(k1, k2, 2.0), k3, 2.0), k4, 1.0), h / 6)


def semi_implicit_euler(s: State, command: State, body: Body, geometry: Geometry, h: float) -> State:
    """Velocities first, then position and attitude with the new velocities."""
    n = axpy(s, derivative(s, command, body, geometry), h)
    dw, dx, dy, dz = quaternion_rate(s[3], s[4], s[5], s[6], n[10], n[11], n[12])
    head = (
        s[0] + h * n[7], s[1] + h * n[8], s[2] + h * n[9],
        s[3] + h * dw, s[4] + h * dx, s[5] + h * dy, s[6] + h * dz,
    )  # fmt: skip
    return head + n[7:]  # numba compiles tuple concatenation, not unpacking


def normalized(s: State) -> State:
    """`s` with its quaternion rescaled to unit length."""
    scale = (s[3] * s[3] + s[4] * s[4] + s[5] * s[5] + s[6] * s[6]) ** -0.5
    head = (s[0], s[1], s[2], s[3] * scale, s[4] * scale, s[5] * scale, s[6] * scale)
    return head + s[7:]  # numba compiles tuple concatenation, not unpacking


def motor_command(action: Scalar, slope: float, offset: float) -> Scalar:
    """ "motor" mode: the normalized motor command (PWM ratio) of an action in [-1, 1]: `offset + slope * action`,
    the linear map `robo_rl.actuator.MotorActuator.command` states in the policy artifact."""
    return offset + slope * action


def within_bounds(
    distance: Scalar, r22: Scalar, p: Scalar, q: Scalar, r: Scalar, max_distance: float, cos_max_tilt: float,
    max_rate_squared: float,
) -> Scalar:  # fmt: skip
    """Whether an env is still flying: near the reference, not tilted past the limit, body rates within range.

    Written as "within bounds" (NaN compares False) so that a NaN state counts as a crash."""
    return (distance <= max_distance) & (r22 >= cos_max_tilt) & (p * p + q * q + r * r <= max_rate_squared)


class RewardWeights(NamedTuple):
    alive: float
    position: float
    distance: float
    attitude: float
    velocity: float
    angular_velocity: float
    action: float
    crash: float


def reward(
    position_error: State, velocity_error: State, rates: State, action_offset: State, distance: Scalar,
    r22: Scalar, crashed: Scalar, weights: RewardWeights,
) -> Scalar:  # fmt: skip
    """`alive - w_p |e_p|^2 - w_d |e_p| - w_att (1 - R22) - w_v |e_v|^2 - w_w |w|^2 - w_a |a - hover|^2`, minus the
    crash penalty at a crash (`crashed` 1 or True)."""
    e, v, w, a = position_error, velocity_error, rates, action_offset
    cost = (
        weights.position * (e[0] * e[0] + e[1] * e[1] + e[2] * e[2])
        + weights.velocity * (v[0] * v[0] + v[1] * v[1] + v[2] * v[2])
        + weights.angular_velocity * (w[0] * w[0] + w[1] * w[1] + w[2] * w[2])
        + weights.action * (a[0] * a[0] + a[1] * a[1] + a[2] * a[2] + a[3] * a[3])
        + weights.attitude * (1.0 - r22)
        + weights.crash * crashed
        + weights.distance * distance
    )
    return weights.alive - cost
