"""Batched quadrotor rigid-body dynamics: pure functions on tensors, the same on CPU and CUDA.

Tensors here are component-major (structure of arrays): a state is `(17, N)` for N envs, a per-env vector
`(3, N)`, a per-env scalar `(N,)`. Each component is then one contiguous row, which makes the many small
elementwise ops of a step several times faster on CPU than the batch-major `(N, 17)` layout. `pack_state` builds
a state from batch-major parts and `state_parts` returns batch-major views; the envs expose batch-major tensors.

State rows: position (0:3, world, m, z up), attitude quaternion (3:7, w x y z, body to world), linear velocity
(7:10, world, m/s), angular velocity (10:13, body, rad/s), motor states (13:17, the normalized motor command each
motor has reached, 0..1). Frames, rotor order and
spin directions are described in `robo_rl.sim.quadrotor.params`.

Model (Learning to Fly's form): rotor i produces thrust `T_i = c0 + c1 u_i + c2 u_i^2` along body +z and a yaw
reaction torque `-s_i k T_i` (s_i = +1 for a ccw rotor); motor states follow their commands with a first-order lag,
one time constant rising and another falling; gravity, linear drag and an optional external world force act on the
centre of mass; rotation follows Euler's equations `I dw/dt = tau - w x (I w)` with an optional external body
torque. Rotor inertia is neglected. Nothing here syncs with the host.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal, NamedTuple

import torch

import robo_rl.sim.quadrotor.equations as equations
from robo_rl.sim.quadrotor.equations import Body, Geometry
from robo_rl.sim.quadrotor.params import QuadrotorParams

STATE_DIM = 17
POSITION = slice(0, 3)
QUATERNION = slice(3, 7)
VELOCITY = slice(7, 10)
ANGULAR_VELOCITY = slice(10, 13)
MOTOR_STATE = slice(13, 17)
"""Rows of the motor states (normalized commands reached)."""
ROTOR_SPEED = MOTOR_STATE
"""The earlier name of `MOTOR_STATE` (the rows held rotor speeds in rad/s before the motor-command model)."""
PARAM_SCALE_NAMES = (
    "mass",
    "inertia_x",
    "inertia_y",
    "inertia_z",
    "thrust",
    "torque_to_thrust",
    "motor_rise_time_constant",
    "motor_fall_time_constant",
)
"""Row order of the per-env parameter scales accepted by `DynamicsParams.scaled`."""
Integrator = Literal["rk4", "semi_implicit_euler"]
INTEGRATORS: tuple[str, ...] = ("rk4", "semi_implicit_euler")


def rotor_geometry_matrix(params: QuadrotorParams, device: torch.device | str, dtype: torch.dtype) -> torch.Tensor:
    """`(4, 4)` G: `G[:3] @ T` = (collective thrust N, roll torque N m, pitch torque N m) and `G[3] @ (k T)` = yaw
    torque N m, for rotor thrusts `T` `(4, N)` in rotor order (k = torque_to_thrust).

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
    thrust_curve: torch.Tensor
    """`(3, N)` rotor thrust curve (c0, c1, c2): T = c0 + c1 u + c2 u^2 in N."""
    torque_to_thrust: torch.Tensor
    """`(N,)` yaw reaction torque per N of rotor thrust, in m."""
    motor_rise_time_constant: torch.Tensor
    """`(N,)` motor time constant while the command is at or above the motor state, in s."""
    motor_fall_time_constant: torch.Tensor
    """`(N,)` motor time constant while the command is below the motor state, in s."""
    linear_drag: torch.Tensor
    """`(3, 1)` or `(3, N)` linear drag along the world axes in N/(m/s)."""
    gravity: float
    """Gravitational acceleration in m/s^2 (along world -z)."""
    geometry: Geometry
    """The frame's rotor layout (constants), see `equations.Geometry`."""
    motor_idle_speed: float = 1.0
    """The rotor-speed motor model's speed at command 0 as a fraction of full speed (its fall rate is
    (idle + (1 - idle) u) / the fall constant); 1.0: the command model (a constant fall rate)."""
    inv_mass: torch.Tensor = field(init=False)
    """`(N,)` 1 / mass."""
    inv_inertia: torch.Tensor = field(init=False)
    """`(3, N)` 1 / inertia."""
    rise_rate: torch.Tensor = field(init=False)
    """`(N,)` 1 / motor rise time constant in 1/s."""
    fall_rate: torch.Tensor = field(init=False)
    """`(N,)` the motor fall rate at state 0 in 1/s (`equations.Body.fall_rate`)."""
    fall_slope: torch.Tensor = field(init=False)
    """`(N,)` its growth per unit of motor state in 1/s (`equations.Body.fall_slope`)."""
    drag_rate: torch.Tensor = field(init=False)
    """`(3, N)` linear drag / mass in 1/s."""
    gravity_vector: torch.Tensor = field(init=False)
    """`(3, 1)` gravitational acceleration (0, 0, -g) in m/s^2."""

    def __post_init__(self) -> None:
        # Derived tensors, computed once per parameter set with tensor ops only (no host-to-device copies).
        zero = torch.zeros_like(self.mass[:1])
        gravity_vector = torch.stack((zero, zero, zero - self.gravity))
        inv_mass = self.mass.reciprocal()
        derived = {
            "inv_mass": inv_mass,
            "inv_inertia": self.inertia.reciprocal(),
            "rise_rate": self.motor_rise_time_constant.reciprocal(),
            "fall_rate": self.motor_fall_time_constant.reciprocal() * self.motor_idle_speed,
            "fall_slope": self.motor_fall_time_constant.reciprocal() * (1.0 - self.motor_idle_speed),
            "drag_rate": self.linear_drag * inv_mass,
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
            thrust_curve=torch.stack([full(c) for c in params.thrust_curve]),
            torque_to_thrust=full(params.torque_to_thrust),
            motor_rise_time_constant=full(params.motor_rise_time_constant),
            motor_fall_time_constant=full(params.motor_fall_time_constant),
            linear_drag=torch.tensor(params.linear_drag, device=device, dtype=dtype).unsqueeze(-1),
            gravity=params.gravity,
            geometry=frame_geometry(params),
            motor_idle_speed=params.fall_idle_fraction,
        )

    def scaled(self, scales: torch.Tensor, thrust_curve: torch.Tensor | None = None) -> DynamicsParams:
        """These parameters multiplied per env by `scales` `(8, N)`, rows as in `PARAM_SCALE_NAMES` ("thrust"
        scales the whole curve); `thrust_curve` `(3, N)` replaces the curve before it is scaled."""
        curve = self.thrust_curve if thrust_curve is None else thrust_curve
        return dataclasses.replace(
            self,
            mass=self.mass * scales[0],
            inertia=self.inertia * scales[1:4],
            thrust_curve=curve * scales[4],
            torque_to_thrust=self.torque_to_thrust * scales[5],
            motor_rise_time_constant=self.motor_rise_time_constant * scales[6],
            motor_fall_time_constant=self.motor_fall_time_constant * scales[7],
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


def rotation_rows(quaternion: torch.Tensor) -> torch.Tensor:
    """`(9, N)` rotation matrix entries R00, R01, ..., R22 of unit quaternions `(4, N)`; fast path of the envs."""
    return torch.stack(equations.rotation(*quaternion.unbind(0)))


def frame_geometry(params: QuadrotorParams) -> Geometry:
    """The frame's rotor layout as the equations take it: y_i, -x_i, -s_i per rotor."""
    ys = tuple(float(y) for _, y in params.rotor_positions)
    minus_x = tuple(-float(x) for x, _ in params.rotor_positions)
    minus_spin = tuple(-float(s) for s in params.spin_signs)
    return Geometry(ys, minus_x, minus_spin)  # type: ignore[arg-type]


def body_rows(
    params: DynamicsParams, external_acceleration: torch.Tensor | None, external_torque: torch.Tensor | None
) -> Body:
    """`params` as equation rows. `external_acceleration` `(3, N)` or `(3, 1)` (None: gravity alone),
    `external_torque` `(3, N)` body-frame torque in N m (None: none)."""
    acceleration: tuple[Any, ...] = (0.0, 0.0, -params.gravity)
    if external_acceleration is not None:
        acceleration = external_acceleration.unbind(0)
    torque: tuple[Any, ...] = (0.0, 0.0, 0.0) if external_torque is None else external_torque.unbind(0)
    ax, ay, az = acceleration
    tx, ty, tz = torque
    ix, iy, iz = params.inertia.unbind(0)
    c0, c1, c2 = params.thrust_curve.unbind(0)
    dx, dy, dz = params.drag_rate.unbind(0)
    return Body(
        params.inv_mass, ix, iy, iz, c0, c1, c2, params.torque_to_thrust, params.rise_rate, params.fall_rate,
        params.fall_slope, dx, dy, dz, ax, ay, az, tx, ty, tz,
    )  # fmt: skip


def state_derivative(
    state: torch.Tensor,
    rotor_command: torch.Tensor,
    params: DynamicsParams,
    external_acceleration: torch.Tensor | None = None,
    external_torque: torch.Tensor | None = None,
) -> torch.Tensor:
    """Time derivative `(17, N)` of `state` `(17, N)` (`equations.derivative` on rows).

    Args:
        rotor_command: `(4, N)` motor commands (normalized, 0..1), held over the step.
        external_acceleration: `(3, N)` or `(3, 1)` world acceleration from everything but the rotors (gravity plus
            external force / mass), in m/s^2; None: gravity alone.
        external_torque: `(3, N)` external torque in the body frame in N m, or None.
    """
    body = body_rows(params, external_acceleration, external_torque)
    return torch.stack(
        equations.derivative(tuple(state.unbind(0)), tuple(rotor_command.unbind(0)), body, params.geometry)
    )


def rk4_step(state: torch.Tensor, derivative: Callable[[torch.Tensor], torch.Tensor], h: float) -> torch.Tensor:
    """`equations.rk4` on stacked rows: the same tableau, one tensor op per stage instead of one per component."""
    k1 = derivative(state)
    k2 = derivative(torch.add(state, k1, alpha=h / 2))
    k3 = derivative(torch.add(state, k2, alpha=h / 2))
    k4 = derivative(torch.add(state, k3, alpha=h))
    return torch.add(state, k1.add_(k2, alpha=2.0).add_(k3, alpha=2.0).add_(k4), alpha=h / 6)


def semi_implicit_euler_step(
    state: torch.Tensor, derivative: Callable[[torch.Tensor], torch.Tensor], h: float
) -> torch.Tensor:
    """`equations.semi_implicit_euler` on stacked rows: velocities first, then position and attitude with them."""
    new = torch.add(state, derivative(state), alpha=h)
    new[POSITION] = torch.add(state[POSITION], new[VELOCITY], alpha=h)
    rate = equations.quaternion_rate(*state[QUATERNION].unbind(0), *new[ANGULAR_VELOCITY].unbind(0))
    new[QUATERNION] = torch.add(state[QUATERNION], torch.stack(rate), alpha=h)
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
        rotor_command: `(4, N)` motor commands (normalized), held constant over `dt`; keep them within the
            frame's command limits (the action maps do).
        params: per-env physical parameters.
        integrator: "rk4" (default) or "semi_implicit_euler". Both are stable for the motor lag only while
            `dt / substeps` stays below the motor time constants.
        external_force: `(3, N)` disturbance force in the world frame in N, or None.
        external_torque: `(3, N)` disturbance torque in the body frame in N m, or None.

    The quaternion is renormalized after every substep. The equations are `robo_rl.sim.quadrotor.equations`, on
    the state's rows; the fused CPU kernel (`robo_rl.sim.quadrotor.fused`) integrates the same ones per env.
    """
    stepper = _STEPPERS[integrator]
    acceleration = None
    if external_force is not None:
        acceleration = torch.addcmul(params.gravity_vector, external_force, params.inv_mass)
    body = body_rows(params, acceleration, external_torque)
    command = tuple(rotor_command.unbind(0))

    def derivative(x: torch.Tensor) -> torch.Tensor:
        return torch.stack(equations.derivative(tuple(x.unbind(0)), command, body, params.geometry))

    h = dt / substeps
    for _ in range(substeps):
        state = normalize_quaternion_(stepper(state, derivative, h))
    return state
