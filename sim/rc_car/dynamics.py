"""Dynamic single-track (bicycle) model of an RC car: pure functions on tensors, the same on CPU and CUDA.

A state is component-major, `(7, N)` for N envs: rows `STATE_NAMES` = world position x, y (m), yaw (rad, in
[-pi, pi)), body-frame CoG velocity vx, vy (m/s), yaw rate (rad/s) and the front wheel angle (rad). Each row is
one contiguous `(N,)` tensor, which keeps the many small elementwise ops of a step fast on CPU. Conventions and
the force models are in `robo_rl.sim.rc_car.params`.

Equations (body frame, steer angle d, front/rear lateral tire forces Ff, Fr, longitudinal force Fx):

    m (dvx/dt - vy r) = Fx - Ff sin d        m (dvy/dt + vx r) = Fr + Ff cos d        Iz dr/dt = lf Ff cos d - lr Fr

with the slip angles `a_f = d - atan2(vy + lf r, vx)` and `a_r = -atan2(vy - lr r, vx)`. These equations are
stiff and meaningless near standstill, so below `DYNAMIC_SPEED` each step is blended with the kinematic
bicycle's (no tire slip: the drive acts along the body axis only, the yaw rate is `vx tan(d) / L` and the
lateral CoG velocity `lr` times the yaw rate), fully kinematic below `KINEMATIC_SPEED`; the slip angles use
`max(vx, KINEMATIC_SPEED)`: nothing divides by vx, and a car at rest stays finite and at rest. Brake and
rolling resistance act as Coulomb friction: they stop the car but never push it backwards. Steering follows its
command at the servo's rate limit; the wheel angle is clamped to +-max_steer.

Integration: semi-implicit Euler with substeps (steer first, then the velocities from the forces, then the
pose from the new velocities); 4 substeps of 5 ms at a 20 ms control period resolve the fastest (yaw) mode
above `KINEMATIC_SPEED`. Load transfer, combined slip (beyond the mu m g bound on the longitudinal force) and
wheel spin are not modelled.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import NamedTuple

import torch

from robo_rl.sim.rc_car.params import CarParams, TireParams

STATE_NAMES = ("x", "y", "yaw", "vx", "vy", "yaw_rate", "steer")
STATE_UNITS = ("m", "m", "rad", "m/s", "m/s", "rad/s", "rad")
STATE_DIM = len(STATE_NAMES)
X, Y, YAW, VX, VY, YAW_RATE, STEER = range(STATE_DIM)
KINEMATIC_SPEED = 0.5
"""Below this forward speed in m/s the car moves as the kinematic bicycle (no tire slip)."""
DYNAMIC_SPEED = 1.5
"""Above this forward speed in m/s the car moves as the dynamic bicycle; in between the two are blended."""


class CarState(NamedTuple):
    """The rows of a `(7, N)` state as `(N,)` tensors (see the module docstring for units)."""

    x: torch.Tensor
    y: torch.Tensor
    yaw: torch.Tensor
    vx: torch.Tensor
    vy: torch.Tensor
    yaw_rate: torch.Tensor
    steer: torch.Tensor


@dataclass(frozen=True)
class CarModel:
    """Per-env physical parameters as tensors (domain randomization gives each env its own mass and friction);
    the rest are the nominal car's. Build with `CarModel.nominal`, randomize with `scaled`. The other tensor
    fields are derived once here instead of at every substep."""

    params: CarParams
    """Nominal parameters; everything not below comes from here."""
    mass: torch.Tensor
    """`(N,)` mass in kg."""
    yaw_inertia: torch.Tensor
    """`(N,)` yaw moment of inertia in kg m^2."""
    friction: torch.Tensor
    """`(N,)` friction coefficient mu."""
    inv_mass: torch.Tensor = field(init=False)
    """`(N,)` 1 / mass in 1/kg."""
    inv_yaw_inertia: torch.Tensor = field(init=False)
    """`(N,)` 1 / yaw inertia in 1/(kg m^2)."""
    front_peak: torch.Tensor = field(init=False)
    """`(N,)` peak lateral force of the front axle, mu times its static load, in N."""
    rear_peak: torch.Tensor = field(init=False)
    """`(N,)` peak lateral force of the rear axle in N."""
    grip: torch.Tensor = field(init=False)
    """`(N,)` largest longitudinal acceleration the tires transmit, mu g, in m/s^2."""
    motor: torch.Tensor = field(init=False)
    """`(N,)` acceleration at full throttle from rest (before the grip limit) in m/s^2."""
    brake: torch.Tensor = field(init=False)
    """`(N,)` deceleration at full brake (before the grip limit) in m/s^2."""
    drag: torch.Tensor = field(init=False)
    """`(N,)` drag coefficient per mass in 1/m."""

    def __post_init__(self) -> None:
        p = self.params
        weight = self.friction * self.mass * p.gravity
        inv_mass = 1.0 / self.mass
        derived = {
            "inv_mass": inv_mass,
            "inv_yaw_inertia": 1.0 / self.yaw_inertia,
            "front_peak": weight * (p.lr / p.wheelbase),
            "rear_peak": weight * (p.lf / p.wheelbase),
            "grip": self.friction * p.gravity,
            "motor": p.max_motor_force * inv_mass,
            "brake": p.max_brake_force * inv_mass,
            "drag": p.drag_coefficient * inv_mass,
        }
        for name, value in derived.items():
            object.__setattr__(self, name, value)

    @classmethod
    def nominal(cls, params: CarParams, num_envs: int, device: torch.device | str, dtype: torch.dtype) -> CarModel:
        def full(value: float) -> torch.Tensor:
            return torch.full((num_envs,), value, device=device, dtype=dtype)

        return cls(params, full(params.mass), full(params.yaw_inertia), full(params.friction))

    def scaled(self, mass_scale: torch.Tensor, friction_scale: torch.Tensor) -> CarModel:
        """Per-env scales `(N,)` of the nominal mass (the yaw inertia scales with it: added mass is spread like
        the car's own) and of the friction coefficient."""
        p = self.params
        return CarModel(p, mass_scale * p.mass, mass_scale * p.yaw_inertia, friction_scale * p.friction)


def unpack(state: torch.Tensor) -> CarState:
    """Rows of a component-major state `(7, N)` as views."""
    return CarState(*state.unbind(0))


def pack(parts: CarState) -> torch.Tensor:
    """Component-major state `(7, N)` from its rows."""
    return torch.stack(tuple(parts))


def magic_formula(slip: torch.Tensor, tire: TireParams, peak: torch.Tensor) -> torch.Tensor:
    """Lateral force in N `(N,)` of an axle at slip angle `slip` (rad) with peak force `peak` (N)."""
    bx = tire.b * slip
    if tire.e != 0.0:
        bx = bx - tire.e * (bx - torch.atan(bx))
    return peak * torch.sin(tire.c * torch.atan(bx))


def slip_angles(s: CarState, lf: float, lr: float) -> tuple[torch.Tensor, torch.Tensor]:
    """(front, rear) slip angles in rad `(N,)`; forward speed floored at `KINEMATIC_SPEED` (no division by 0)."""
    forward = s.vx.clamp(min=KINEMATIC_SPEED)
    front = s.steer - torch.atan2(s.vy + lf * s.yaw_rate, forward)
    rear = torch.atan2(lr * s.yaw_rate - s.vy, forward)
    return front, rear


def lateral_forces(s: CarState, model: CarModel) -> tuple[torch.Tensor, torch.Tensor]:
    """(front, rear) lateral tire forces in N `(N,)`, peaks mu times the static axle loads."""
    p = model.params
    front_slip, rear_slip = slip_angles(s, p.lf, p.lr)
    return magic_formula(front_slip, p.front_tire, model.front_peak), magic_formula(
        rear_slip, p.rear_tire, model.rear_peak
    )


def drive_acceleration(vx: torch.Tensor, throttle: torch.Tensor, model: CarModel) -> torch.Tensor:
    """Motor acceleration in m/s^2 `(N,)` for throttle in [0, 1]: the motor force falls linearly with speed to
    zero at the no-load speed, and the tires transmit at most mu g."""
    available = (1.0 - vx * (1.0 / model.params.max_speed)).clamp(min=0.0) * model.motor
    return torch.minimum(throttle * available, model.grip)


def stopping_deceleration(brake: torch.Tensor, model: CarModel) -> torch.Tensor:
    """Coulomb-type deceleration magnitude in m/s^2 `(N,)` against the motion: brake (at most mu g) plus rolling
    resistance."""
    p = model.params
    return torch.minimum(brake * model.brake, model.grip) + p.rolling_resistance * p.gravity


def steer_toward(steer: torch.Tensor, command: torch.Tensor, params: CarParams, h: float) -> torch.Tensor:
    """Wheel angle after `h` s of moving toward `command` (rad, `(N,)`) at most at the servo rate, within limits."""
    step = params.max_steer_rate * h
    target = command.clamp(-params.max_steer, params.max_steer)
    return steer + (target - steer).clamp(-step, step)


def substep(s: CarState, steer_command: torch.Tensor, drive: torch.Tensor, model: CarModel, h: float) -> CarState:
    """One semi-implicit Euler step of `h` s; `drive` in [-1, 1] is throttle (> 0) or brake (< 0)."""
    p = model.params
    steer = steer_toward(s.steer, steer_command, p, h)
    s = s._replace(steer=steer)
    weight = dynamic_weight(s.vx)
    front, rear = lateral_forces(s, model)
    front_x, front_y = front * torch.sin(steer), front * torch.cos(steer)
    push = drive_acceleration(s.vx, drive.clamp(min=0.0), model) - model.drag * s.vx * s.vx.abs()
    # The kinematic model keeps only the drive along the body axis; the dynamic one adds the front tire force
    # and the rotating-frame term.
    lateral_terms = s.vy * s.yaw_rate - front_x * model.inv_mass
    vx = s.vx + h * (push + weight * lateral_terms)
    stop = h * stopping_deceleration((-drive).clamp(min=0.0), model)
    vx = torch.sign(vx) * (vx.abs() - stop).clamp(min=0.0)
    vy = s.vy + h * ((rear + front_y) * model.inv_mass - s.vx * s.yaw_rate)
    yaw_rate = s.yaw_rate + h * (p.lf * front_y - p.lr * rear) * model.inv_yaw_inertia
    kinematic_rate = vx * torch.tan(steer) * (1.0 / p.wheelbase)
    vy = torch.lerp(p.lr * kinematic_rate, vy, weight)
    yaw_rate = torch.lerp(kinematic_rate, yaw_rate, weight)
    cos_yaw, sin_yaw = torch.cos(s.yaw), torch.sin(s.yaw)
    x = s.x + h * (vx * cos_yaw - vy * sin_yaw)
    y = s.y + h * (vx * sin_yaw + vy * cos_yaw)
    return CarState(x, y, s.yaw + h * yaw_rate, vx, vy, yaw_rate, steer)


def dynamic_weight(vx: torch.Tensor) -> torch.Tensor:
    """Weight `(N,)` of the dynamic model: 0 below `KINEMATIC_SPEED`, 1 above `DYNAMIC_SPEED`, linear between."""
    return ((vx - KINEMATIC_SPEED) * (1.0 / (DYNAMIC_SPEED - KINEMATIC_SPEED))).clamp(0.0, 1.0)


def wrap_angle(angle: torch.Tensor) -> torch.Tensor:
    """Angles in rad wrapped to [-pi, pi)."""
    return torch.remainder(angle + math.pi, 2 * math.pi) - math.pi


def integrate(
    state: torch.Tensor, steer_command: torch.Tensor, drive: torch.Tensor, model: CarModel, dt: float, substeps: int
) -> torch.Tensor:
    """State `(7, N)` after `dt` s of constant commands: wheel angle `steer_command` (rad) and `drive` in
    [-1, 1] (throttle > 0, brake < 0), both `(N,)`, in `substeps` semi-implicit Euler steps."""
    s = unpack(state)
    h = dt / substeps
    for _ in range(substeps):
        s = substep(s, steer_command, drive, model, h)
    return pack(s._replace(yaw=wrap_angle(s.yaw)))
