"""Batched quadrotor rigid-body dynamics: pure functions on tensors, the same on CPU and CUDA.

Tensors here are component-major (structure of arrays): a state is `(17, N)` for N envs, a per-env vector
`(3, N)`, a per-env scalar `(N,)`. Each component is then one contiguous row, which makes the many small
elementwise ops of a step several times faster on CPU than the batch-major `(N, 17)` layout. `pack_state` builds
a state from batch-major parts and `state_parts` returns batch-major views; the envs expose batch-major tensors.

State rows: position (0:3, world, m, z up), attitude quaternion (3:7, w x y z, body to world), linear velocity
(7:10, world, m/s), angular velocity (10:13, body, rad/s), rotor speeds (13:17, rad/s). Frames, rotor order and
spin directions are described in `robo_rl.sim.quadrotor.params`.

Model: rotor i produces thrust `c_t w_i^2` along body +z and a yaw reaction torque `-s_i c_q w_i^2` (s_i = +1 for
a ccw rotor); rotor speeds follow their commands with a first-order lag; gravity and an optional external world
force act on the centre of mass; rotation follows Euler's equations `I dw/dt = tau - w x (I w)` with an optional
external body torque. Drag and rotor inertia are neglected. Nothing here syncs with the host.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Literal, NamedTuple

import torch

from robo_rl.sim.quadrotor.params import QuadrotorParams

STATE_DIM = 17
POSITION = slice(0, 3)
QUATERNION = slice(3, 7)
VELOCITY = slice(7, 10)
ANGULAR_VELOCITY = slice(10, 13)
ROTOR_SPEED = slice(13, 17)
PARAM_SCALE_NAMES = (
    "mass",
    "inertia_x",
    "inertia_y",
    "inertia_z",
    "thrust_coefficient",
    "torque_coefficient",
    "motor_time_constant",
)
"""Row order of the per-env parameter scales accepted by `DynamicsParams.scaled`."""
Integrator = Literal["rk4", "semi_implicit_euler"]
INTEGRATORS: tuple[str, ...] = ("rk4", "semi_implicit_euler")

_W, _X, _Y, _Z = range(4)
# Body z axis (third column of R) = B @ (q[a] * q[b]) + (0, 0, 1): 2(xz + wy), 2(yz - wx), 1 - 2(xx + yy).
_BODY_Z_FACTORS = ((_X, _Z), (_W, _Y), (_Y, _Z), (_W, _X), (_X, _X), (_Y, _Y))
_BODY_Z_MATRIX = ((2.0, 2.0, 0.0, 0.0, 0.0, 0.0), (0.0, 0.0, 2.0, -2.0, 0.0, 0.0), (0.0, 0.0, 0.0, 0.0, -2.0, -2.0))
# Rotation matrix (row-major, 9 entries) = B @ (q[a] * q[b]) + I, from 9 of the products of q (ww is not needed).
_ROTATION_FACTORS = ((_W, _X), (_W, _Y), (_W, _Z), (_X, _X), (_X, _Y), (_X, _Z), (_Y, _Y), (_Y, _Z), (_Z, _Z))
_ROTATION_TERMS = (  # entry: ((product index, coefficient), ...); the identity is added separately.
    ((6, -2.0), (8, -2.0)),
    ((4, 2.0), (2, -2.0)),
    ((5, 2.0), (1, 2.0)),
    ((4, 2.0), (2, 2.0)),
    ((3, -2.0), (8, -2.0)),
    ((7, 2.0), (0, -2.0)),
    ((5, 2.0), (1, -2.0)),
    ((7, 2.0), (0, 2.0)),
    ((3, -2.0), (6, -2.0)),
)
# dq/dt = q (x) (0, w) / 2: output row r is the sum over k of q[_QRATE_Q[k][r]] * (C @ w)[4 k + r].
_QRATE_Q = ((_X, _W, _W, _W), (_Y, _Y, _X, _X), (_Z, _Z, _Z, _Y))
_QRATE_W = (((0, -0.5), (0, 0.5), (1, 0.5), (2, 0.5)), ((1, -0.5), (2, 0.5), (2, -0.5), (1, 0.5)))
_QRATE_W += (((2, -0.5), (1, -0.5), (0, 0.5), (0, -0.5)),)
# Cross product a x b = a[_ROLL_1] * b[_ROLL_2] - a[_ROLL_2] * b[_ROLL_1].
_ROLL_1, _ROLL_2 = (1, 2, 0), (2, 0, 1)


class Kinematics(NamedTuple):
    """Constant index and coefficient tensors of the quaternion kinematics on one device and dtype."""

    body_z_left: torch.Tensor
    body_z_right: torch.Tensor
    body_z_matrix: torch.Tensor
    body_z_offset: torch.Tensor
    rotation_left: torch.Tensor
    rotation_right: torch.Tensor
    rotation_matrix: torch.Tensor
    rotation_offset: torch.Tensor
    rate_rows: torch.Tensor
    rate_matrix: torch.Tensor
    roll_1: torch.Tensor
    roll_2: torch.Tensor

    @classmethod
    def build(cls, device: torch.device | str, dtype: torch.dtype) -> Kinematics:
        def index(values: tuple[int, ...]) -> torch.Tensor:
            return torch.tensor(values, dtype=torch.long, device=device)

        def real(values: object) -> torch.Tensor:
            return torch.tensor(values, dtype=dtype, device=device)

        rotation = torch.zeros(9, len(_ROTATION_FACTORS), dtype=torch.float64)
        for entry, terms in enumerate(_ROTATION_TERMS):
            for product, coefficient in terms:
                rotation[entry, product] += coefficient
        rate = torch.zeros(12, 3, dtype=torch.float64)
        for k, column in enumerate(_QRATE_W):
            for r, (axis, coefficient) in enumerate(column):
                rate[4 * k + r, axis] = coefficient
        return cls(
            body_z_left=index(tuple(a for a, _ in _BODY_Z_FACTORS)),
            body_z_right=index(tuple(b for _, b in _BODY_Z_FACTORS)),
            body_z_matrix=real(_BODY_Z_MATRIX),
            body_z_offset=real([[0.0], [0.0], [1.0]]),
            rotation_left=index(tuple(a for a, _ in _ROTATION_FACTORS)),
            rotation_right=index(tuple(b for _, b in _ROTATION_FACTORS)),
            rotation_matrix=rotation.to(device=device, dtype=dtype),
            rotation_offset=real([[1.0], [0.0], [0.0], [0.0], [1.0], [0.0], [0.0], [0.0], [1.0]]),
            rate_rows=index(tuple(i for rows in _QRATE_Q for i in rows)),
            rate_matrix=rate.to(device=device, dtype=dtype),
            roll_1=index(_ROLL_1),
            roll_2=index(_ROLL_2),
        )


def rotor_geometry_matrix(params: QuadrotorParams, device: torch.device | str, dtype: torch.dtype) -> torch.Tensor:
    """`(4, 4)` G: `G[:3] @ (c_t w^2)` = (collective thrust N, roll torque N m, pitch torque N m) and
    `G[3] @ (c_q w^2)` = yaw torque N m, for squared rotor speeds `w^2` `(4, N)` in rotor order.

    Column i is `(1, y_i, -x_i, -s_i)`: thrust F along +z at (x_i, y_i) gives the torque r x F = (y_i F, -x_i F, 0).
    """
    columns = [(1.0, y, -x, -float(s)) for (x, y), s in zip(params.rotor_positions, params.spin_signs, strict=True)]
    return torch.tensor(columns, device=device, dtype=dtype).T.contiguous()


@dataclass(frozen=True)
class DynamicsParams:
    """Per-env physical parameters as tensors, so that every env may have its own (domain randomization).

    Build the nominal ones with `DynamicsParams.nominal`, randomized ones with `nominal.scaled(scales)`.
    """

    mass: torch.Tensor
    """`(N,)` mass in kg."""
    inertia: torch.Tensor
    """`(3, N)` principal moments of inertia (Ixx, Iyy, Izz) in kg m^2."""
    thrust_coefficient: torch.Tensor
    """`(N,)` rotor thrust coefficient in N / (rad/s)^2."""
    torque_coefficient: torch.Tensor
    """`(N,)` rotor yaw-torque coefficient in N m / (rad/s)^2."""
    motor_time_constant: torch.Tensor
    """`(N,)` rotor speed time constant in s."""
    gravity: float
    """Gravitational acceleration in m/s^2 (along world -z)."""
    rotor_geometry: torch.Tensor
    """`(4, 4)` see `rotor_geometry_matrix`."""
    kinematics: Kinematics
    """Constant tensors of the quaternion kinematics."""
    inv_mass: torch.Tensor = field(init=False)
    """`(N,)` 1 / mass."""
    inv_inertia: torch.Tensor = field(init=False)
    """`(3, N)` 1 / inertia."""
    wrench_coefficients: torch.Tensor = field(init=False)
    """`(4, N)` (c_t, c_t, c_t, c_q): scales `rotor_geometry @ w^2` to (thrust, torque)."""
    motor_rate: torch.Tensor = field(init=False)
    """`(N,)` 1 / motor time constant in 1/s."""
    gravity_vector: torch.Tensor = field(init=False)
    """`(3, 1)` gravitational acceleration (0, 0, -g) in m/s^2."""

    def __post_init__(self) -> None:
        # Derived tensors, computed once per parameter set with tensor ops only (no host-to-device copies).
        ct, cq = self.thrust_coefficient, self.torque_coefficient
        gravity_vector = self.kinematics.body_z_offset * -self.gravity
        derived = {
            "inv_mass": self.mass.reciprocal(),
            "inv_inertia": self.inertia.reciprocal(),
            "wrench_coefficients": torch.stack((ct, ct, ct, cq)),
            "motor_rate": self.motor_time_constant.reciprocal(),
            "gravity_vector": gravity_vector,
        }
        for name, value in derived.items():
            object.__setattr__(self, name, value)

    @property
    def num_envs(self) -> int:
        return self.mass.shape[0]

    @classmethod
    def nominal(
        cls,
        params: QuadrotorParams,
        num_envs: int,
        device: torch.device | str = "cpu",
        dtype: torch.dtype = torch.float32,
    ) -> DynamicsParams:
        """`params` repeated for `num_envs` envs."""

        def full(value: float) -> torch.Tensor:
            return torch.full((num_envs,), value, device=device, dtype=dtype)

        return cls(
            mass=full(params.mass),
            inertia=torch.stack([full(moment) for moment in params.inertia]),
            thrust_coefficient=full(params.thrust_coefficient),
            torque_coefficient=full(params.torque_coefficient),
            motor_time_constant=full(params.motor_time_constant),
            gravity=params.gravity,
            rotor_geometry=rotor_geometry_matrix(params, device, dtype),
            kinematics=Kinematics.build(device, dtype),
        )

    def scaled(self, scales: torch.Tensor) -> DynamicsParams:
        """These parameters multiplied per env by `scales` `(7, N)`, rows as in `PARAM_SCALE_NAMES`."""
        return dataclasses.replace(
            self,
            mass=self.mass * scales[0],
            inertia=self.inertia * scales[1:4],
            thrust_coefficient=self.thrust_coefficient * scales[4],
            torque_coefficient=self.torque_coefficient * scales[5],
            motor_time_constant=self.motor_time_constant * scales[6],
        )


class StateParts(NamedTuple):
    """Batch-major views `(N, k)` of a component-major state."""

    position: torch.Tensor
    quaternion: torch.Tensor
    velocity: torch.Tensor
    angular_velocity: torch.Tensor
    rotor_speed: torch.Tensor


def pack_state(
    position: torch.Tensor,
    quaternion: torch.Tensor,
    velocity: torch.Tensor,
    angular_velocity: torch.Tensor,
    rotor_speed: torch.Tensor,
) -> torch.Tensor:
    """Component-major state `(17, N)` from batch-major parts `(N, 3)`, `(N, 4)` (unit, w first), `(N, 3)`,
    `(N, 3)`, `(N, 4)` in m, -, m/s, rad/s (body), rad/s."""
    return torch.cat((position, quaternion, velocity, angular_velocity, rotor_speed), dim=-1).T.contiguous()


def state_parts(state: torch.Tensor) -> StateParts:
    """Batch-major views `(N, k)` of the parts of a component-major state `(17, N)`."""
    rows = state.T
    return StateParts(
        rows[:, POSITION], rows[:, QUATERNION], rows[:, VELOCITY], rows[:, ANGULAR_VELOCITY], rows[:, ROTOR_SPEED]
    )


def quat_to_rotmat(quaternion: torch.Tensor) -> torch.Tensor:
    """`(..., 3, 3)` rotation matrices (body to world) of quaternions `(..., 4)` (w, x, y, z), normalized first."""
    w, x, y, z = (quaternion / quaternion.norm(dim=-1, keepdim=True)).unbind(-1)
    rows = (
        (1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)),
        (2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)),
        (2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)),
    )
    return torch.stack([torch.stack(row, dim=-1) for row in rows], dim=-2)


def rows_matmul(matrix: torch.Tensor, rows: torch.Tensor, bias: torch.Tensor | None = None) -> torch.Tensor:
    """`matrix @ rows` (+ `bias`) for a small constant `(m, k)` matrix, `(k, N)` rows and a `(m, 1)` bias.

    Eager: one BLAS call. Under torch.compile: k unrolled multiply-adds, which inductor fuses with the elementwise
    ops around it (a BLAS call, or a reduction over k, would split the fused step into several kernels).
    """
    if torch.compiler.is_compiling():
        product = matrix[:, :1] * rows[:1] if bias is None else torch.addcmul(bias, matrix[:, :1], rows[:1])
        for j in range(1, matrix.shape[1]):
            product = torch.addcmul(product, matrix[:, j : j + 1], rows[j : j + 1])
        return product
    return torch.mm(matrix, rows) if bias is None else torch.addmm(bias, matrix, rows)


def rotation_rows(quaternion: torch.Tensor, kinematics: Kinematics) -> torch.Tensor:
    """`(9, N)` rotation matrix entries R00, R01, ..., R22 of unit quaternions `(4, N)`; fast path of the envs."""
    products = quaternion.index_select(0, kinematics.rotation_left) * quaternion.index_select(
        0, kinematics.rotation_right
    )
    return rows_matmul(kinematics.rotation_matrix, products, kinematics.rotation_offset)


def body_z_axis(quaternion: torch.Tensor, kinematics: Kinematics) -> torch.Tensor:
    """`(3, N)` body z axis in world coordinates (the thrust direction) of quaternions `(4, N)`."""
    products = quaternion.index_select(0, kinematics.body_z_left) * quaternion.index_select(0, kinematics.body_z_right)
    return rows_matmul(kinematics.body_z_matrix, products, kinematics.body_z_offset)


def quaternion_rate(quaternion: torch.Tensor, angular_velocity: torch.Tensor, kinematics: Kinematics) -> torch.Tensor:
    """`(4, N)` time derivative `q (x) (0, w) / 2` of quaternions `(4, N)` under body rates `(3, N)` in rad/s."""
    terms = quaternion.index_select(0, kinematics.rate_rows) * rows_matmul(kinematics.rate_matrix, angular_velocity)
    return terms.view(3, 4, -1).sum(0)


def cross(a: torch.Tensor, b: torch.Tensor, kinematics: Kinematics) -> torch.Tensor:
    """`(3, N)` cross products of `(3, N)` vectors."""
    first = a.index_select(0, kinematics.roll_1) * b.index_select(0, kinematics.roll_2)
    return first.addcmul_(a.index_select(0, kinematics.roll_2), b.index_select(0, kinematics.roll_1), value=-1.0)


def state_derivative(
    state: torch.Tensor,
    rotor_command: torch.Tensor,
    params: DynamicsParams,
    external_acceleration: torch.Tensor,
    external_torque: torch.Tensor | None = None,
) -> torch.Tensor:
    """Time derivative `(17, N)` of `state` `(17, N)`.

    Args:
        rotor_command: `(4, N)` commanded rotor speeds in rad/s, held over the step.
        external_acceleration: `(3, N)` or `(3, 1)` world acceleration from everything but the rotors (gravity plus
            external force / mass), in m/s^2.
        external_torque: `(3, N)` external torque in the body frame in N m, or None.
    """
    kinematics = params.kinematics
    quaternion, omega, rotor_speed = state[QUATERNION], state[ANGULAR_VELOCITY], state[ROTOR_SPEED]
    wrench = rows_matmul(params.rotor_geometry, rotor_speed.square()).mul_(params.wrench_coefficients)
    torque = wrench[1:] if external_torque is None else wrench[1:] + external_torque
    thrust_acceleration = wrench[0] * params.inv_mass
    acceleration = torch.addcmul(external_acceleration, body_z_axis(quaternion, kinematics), thrust_acceleration)
    gyroscopic = cross(omega, params.inertia * omega, kinematics)
    angular_acceleration = (torque - gyroscopic).mul_(params.inv_inertia)
    rotor_acceleration = (rotor_command - rotor_speed).mul_(params.motor_rate)
    quaternion_dot = quaternion_rate(quaternion, omega, kinematics)
    return torch.cat((state[VELOCITY], quaternion_dot, acceleration, angular_acceleration, rotor_acceleration))


def rk4_step(
    state: torch.Tensor,
    rotor_command: torch.Tensor,
    params: DynamicsParams,
    h: float,
    external_acceleration: torch.Tensor,
    external_torque: torch.Tensor | None = None,
) -> torch.Tensor:
    """One classic Runge-Kutta 4 step of `h` seconds (quaternion not renormalized)."""

    def f(x: torch.Tensor) -> torch.Tensor:
        return state_derivative(x, rotor_command, params, external_acceleration, external_torque)

    k1 = f(state)
    k2 = f(torch.add(state, k1, alpha=h / 2))
    k3 = f(torch.add(state, k2, alpha=h / 2))
    k4 = f(torch.add(state, k3, alpha=h))
    slope = k1.add_(k2, alpha=2.0).add_(k3, alpha=2.0).add_(k4)
    return torch.add(state, slope, alpha=h / 6)


def semi_implicit_euler_step(
    state: torch.Tensor,
    rotor_command: torch.Tensor,
    params: DynamicsParams,
    h: float,
    external_acceleration: torch.Tensor,
    external_torque: torch.Tensor | None = None,
) -> torch.Tensor:
    """One semi-implicit (symplectic) Euler step: velocities first, then position and attitude with the new ones."""
    derivative = state_derivative(state, rotor_command, params, external_acceleration, external_torque)
    new = torch.add(state, derivative, alpha=h)
    new[POSITION] = torch.add(state[POSITION], new[VELOCITY], alpha=h)
    rate = quaternion_rate(state[QUATERNION], new[ANGULAR_VELOCITY], params.kinematics)
    new[QUATERNION] = torch.add(state[QUATERNION], rate, alpha=h)
    return new


_STEPPERS = {"rk4": rk4_step, "semi_implicit_euler": semi_implicit_euler_step}


def normalize_quaternion_(state: torch.Tensor) -> torch.Tensor:
    """Rescale the quaternion rows of `state` `(17, N)` to unit length in place; returns `state`."""
    quaternion = state[QUATERNION]
    # square().sum(0) rather than norm(dim=0): reducing over the leading dim is much slower on CPU.
    quaternion.mul_(quaternion.square().sum(0).rsqrt_())
    return state


def integrate(
    state: torch.Tensor,
    rotor_command: torch.Tensor,
    params: DynamicsParams,
    dt: float,
    substeps: int = 1,
    integrator: Integrator = "rk4",
    external_force: torch.Tensor | None = None,
    external_torque: torch.Tensor | None = None,
) -> torch.Tensor:
    """Advance `state` `(17, N)` by `dt` seconds in `substeps` equal steps; returns the new state.

    Args:
        rotor_command: `(4, N)` commanded rotor speeds in rad/s, held constant over `dt`; keep them within the
            frame's rotor speed limits (the action maps do).
        params: per-env physical parameters.
        integrator: "rk4" (default) or "semi_implicit_euler". Both are stable for the motor lag only while
            `dt / substeps` stays below the motor time constant.
        external_force: `(3, N)` disturbance force in the world frame in N, or None.
        external_torque: `(3, N)` disturbance torque in the body frame in N m, or None.

    The quaternion is renormalized after every substep.
    """
    stepper = _STEPPERS[integrator]
    external_acceleration = params.gravity_vector
    if external_force is not None:
        external_acceleration = torch.addcmul(params.gravity_vector, external_force, params.inv_mass)
    h = dt / substeps
    for _ in range(substeps):
        state = normalize_quaternion_(stepper(state, rotor_command, params, h, external_acceleration, external_torque))
    return state
