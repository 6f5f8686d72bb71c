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
rolling resistance act as Coulomb friction: they stop the car but never push it backwards (throttle mode; in
speed mode the ESC's first-order speed loop sets the longitudinal acceleration, `equations.esc_acceleration`).
Steering follows its command at the servo's rate limit; the wheel angle is clamped to +-max_steer.

Integration: semi-implicit Euler with substeps (steer first, then the velocities from the forces, then the
pose from the new velocities); 4 substeps of 5 ms at a 20 ms control period resolve the fastest (yaw) mode
above `KINEMATIC_SPEED`. Load transfer, combined slip (beyond the mu m g bound on the longitudinal force) and
wheel spin are not modelled.

The equations themselves are written once in `robo_rl.sim.rc_car.equations`, which this module applies to the
state's rows and the numba race kernel (`robo_rl.sim.rc_car.fused`) to one car at a time.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import torch

import robo_rl.sim.rc_car.equations as equations
from robo_rl.sim.rc_car.params import SPEED_MODE, CarParams, TireParams

STATE_NAMES = ("x", "y", "yaw", "vx", "vy", "yaw_rate", "steer")
STATE_UNITS = ("m", "m", "rad", "m/s", "m/s", "rad/s", "rad")
STATE_DIM = len(STATE_NAMES)
X, Y, YAW, VX, VY, YAW_RATE, STEER = range(STATE_DIM)
KINEMATIC_SPEED = equations.KINEMATIC_SPEED
"""Below this forward speed in m/s the car moves as the kinematic bicycle (no tire slip)."""
DYNAMIC_SPEED = equations.DYNAMIC_SPEED
"""Above this forward speed in m/s the car moves as the dynamic bicycle; in between the two are blended."""


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
    force_scale: torch.Tensor = field(init=False)
    """`(N,)` nominal mass / mass: scales the speed loop's acceleration limits (a force limit of the ESC)."""
    car: equations.Car = field(init=False)
    """The per-env quantities above as the equations take them."""
    chassis: equations.Chassis = field(init=False)
    """The car's constants as the equations take them."""

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
            "force_scale": p.mass / self.mass,
        }
        for name, value in derived.items():
            object.__setattr__(self, name, value)
        car = equations.Car(
            derived["inv_mass"], derived["inv_yaw_inertia"], derived["front_peak"], derived["rear_peak"],
            derived["grip"], derived["motor"], derived["brake"], derived["drag"], derived["force_scale"],
        )  # fmt: skip
        object.__setattr__(self, "car", car)
        object.__setattr__(self, "chassis", chassis_of(p))

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


def magic_formula(slip: torch.Tensor, tire: TireParams, peak: torch.Tensor) -> torch.Tensor:
    """Lateral force in N `(N,)` of an axle at slip angles `slip` (rad) with peak force `peak` (N)."""
    return equations.magic_formula(slip, tire.b, tire.c, tire.e, peak)


def drive_acceleration(vx: torch.Tensor, throttle: torch.Tensor, model: CarModel) -> torch.Tensor:
    """Motor acceleration in m/s^2 `(N,)` for throttle in [0, 1]: the motor force falls linearly with speed to
    zero at the no-load speed, and the tires transmit at most mu g."""
    return equations.drive_acceleration(vx, throttle, model.car, model.chassis)


def speed_setpoint(drive: torch.Tensor, params: CarParams) -> torch.Tensor:
    """The ESC's speed setpoint in m/s `(N,)` of drive actions `(N,)` in speed mode (`equations.speed_setpoint`)."""
    return equations.speed_setpoint(drive, chassis_of(params))


def wrap_angle(angle: torch.Tensor) -> torch.Tensor:
    """Angles in rad wrapped to [-pi, pi)."""
    return torch.remainder(angle + math.pi, 2 * math.pi) - math.pi


def integrate(
    state: torch.Tensor, steer_command: torch.Tensor, drive: torch.Tensor, model: CarModel, dt: float, substeps: int
) -> torch.Tensor:
    """State `(7, N)` after `dt` s of constant commands: wheel angle `steer_command` (rad) and `drive` in
    [-1, 1] (the ESC's speed setpoint fraction, or throttle > 0 / brake < 0: `CarParams.command_mode`), both
    `(N,)`, in `substeps` semi-implicit Euler steps
    (`equations.integrate` on the state's rows; the numba kernel integrates the same equations per env)."""
    rows = equations.integrate(tuple(state.unbind(0)), steer_command, drive, model.car, model.chassis, dt, substeps)
    return torch.stack(rows)


def chassis_of(params: CarParams) -> equations.Chassis:
    """The constants of `params` as the equations take them."""
    front, rear = params.front_tire, params.rear_tire
    return equations.Chassis(
        params.lf, params.lr, params.wheelbase, params.max_speed, params.rolling_resistance * params.gravity,
        params.max_steer, params.max_steer_rate, front.b, front.c, front.e, rear.b, rear.c, rear.e,
        1.0 if params.command_mode == SPEED_MODE else 0.0, params.speed_scale, params.max_reverse_speed,
        params.speed_time_constant, params.max_acceleration, params.max_deceleration,
    )  # fmt: skip
