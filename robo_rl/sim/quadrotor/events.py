"""Changes to the airframe in flight (`FlightEvent`): a payload picked up, a motor that loses thrust.

An adaptation test: at `time` s into every episode the mass grows by `mass_scale` (a payload at the centre
of mass: the inertia is unchanged) and rotor `motor` pushes `motor_scale` of its thrust. The payload is exact (the
env's mass from then on). The weak motor is the thrust it no longer gives, `(motor_scale - 1) f_i` along body +z,
applied as the force and the torques it makes (roll y_i dF, pitch -x_i dF, yaw -s_i k dF: the rotor layout of
`robo_rl.sim.quadrotor.params`), computed from the rotor's motor state and the attitude at the start of each control
step and held over that step: `equations.derivative` has one thrust curve for all four rotors, and this keeps the
shared equations (and the numba kernel that compiles them) unchanged. Torch step only.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import torch

from robo_rl.sim.quadrotor.dynamics import MOTOR_STATE, QUATERNION, DynamicsParams


@dataclass(frozen=True)
class FlightEvent:
    """What changes, and when, in every episode."""

    time: float = 2.0
    """Seconds into the episode at which the change happens (and stays)."""
    mass_scale: float = 1.0
    """Mass after the event over before (1.3: a payload of 30 % of the airframe's mass)."""
    motor: int = -1
    """The rotor (0-3, the action order) that weakens; -1: none."""
    motor_scale: float = 1.0
    """That rotor's thrust after the event over its thrust curve's (0.8: 20 % weaker)."""

    def __post_init__(self) -> None:
        if not self.time >= 0:
            raise ValueError(f"FlightEvent.time must be >= 0 s, got {self.time}")
        if not self.mass_scale > 0 or not 0 <= self.motor_scale <= 1:
            raise ValueError("FlightEvent: need mass_scale > 0 and 0 <= motor_scale <= 1")
        if self.motor not in (-1, 0, 1, 2, 3):
            raise ValueError(f"FlightEvent.motor must be -1 (none) or a rotor index 0-3, got {self.motor}")


def after_event(
    event: FlightEvent,
    episode_time: torch.Tensor,
    state: torch.Tensor,
    dynamics: DynamicsParams,
    force: torch.Tensor | None,
    torque: torch.Tensor | None,
) -> tuple[DynamicsParams, torch.Tensor | None, torch.Tensor | None]:
    """The dynamics, world force `(3, N)` and body torque `(3, N)` of this control step, with the event applied to
    the envs whose `episode_time` `(N,)` (at the step's start) has reached `event.time`."""
    active = episode_time >= event.time - 1e-5  # float32 step counts times dt
    if event.mass_scale != 1.0:
        mass = torch.where(active, dynamics.mass * event.mass_scale, dynamics.mass)
        dynamics = dataclasses.replace(dynamics, mass=mass)
    if event.motor < 0 or event.motor_scale == 1.0:
        return dynamics, force, torque
    i = event.motor
    u = state[MOTOR_STATE][i]
    c0, c1, c2 = dynamics.thrust_curve.unbind(0)
    lost = (event.motor_scale - 1.0) * (c0 + u * (c1 + u * c2)) * active  # dF <= 0 along body +z, in N
    g = dynamics.geometry
    body_torque = torch.stack((g.y[i] * lost, g.minus_x[i] * lost, g.minus_spin[i] * dynamics.torque_to_thrust * lost))
    w, x, y, z = state[QUATERNION].unbind(0)
    body_z = torch.stack((2.0 * (x * z + w * y), 2.0 * (y * z - w * x), 1.0 - 2.0 * (x * x + y * y)))
    world_force = body_z * lost
    force = world_force if force is None else force + world_force
    torque = body_torque if torque is None else torque + body_torque
    return dynamics, force, torque
