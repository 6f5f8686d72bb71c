"""A scripted hover pilot for the quadrotor tasks: the `Expert` of robo_rl.hil's SimulatedHuman.

Cascaded control on the true state, with the nominal frame parameters:
- position PD → desired acceleration (horizontal part clamped) + gravity → thrust vector;
- its body-z projection is the collective thrust; its direction, with zero yaw, the desired attitude;
- the geometric attitude error (vee of R_dᵀR − RᵀR_d) gives body-rate setpoints;
- the "ctbr" action map's rate loop and mixer turn those into motor commands;
- in "motor" mode the motor commands become motor actions (the inverse of the motor map).

Safe sets: the pilot takes over beyond `unsafe_distance` from the reference, `unsafe_tilt`, `unsafe_speed` or
`unsafe_angular_speed`, and hands back within all of the `recovered_*` limits (hysteresis).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from robo_rl.sim.quadrotor.actions import CtbrActionMap, MotorActionMap
from robo_rl.sim.quadrotor.hover import QuadrotorHover
from robo_rl.sim.quadrotor.track import QuadrotorTrack


@dataclass(frozen=True)
class HoverPilotConfig:
    position_gain: float = 4.0
    """1/s² : desired acceleration per m of position error."""
    velocity_gain: float = 3.0
    """1/s : desired acceleration per m/s of velocity."""
    max_horizontal_acceleration: float = 5.0
    """m/s² : clamp on the horizontal desired acceleration (limits the tilt the pilot commands)."""
    attitude_gain: float = 5.0
    """1/s : body-rate setpoint per rad of attitude error. 5 flies both Crazyflie frames from the hover task's
    initial states without a crash (500 of 500 succeed); 8, tuned on the bare 2023 model, crashes 70 % of the
    identified model's flights, whose propellers spin down 4.5x slower than they spin up."""
    unsafe_distance: float = 0.6
    unsafe_tilt: float = math.radians(30.0)
    """Tilted more than this is unsafe: the identified Crazyflie's slow propeller spin-down makes a late takeover fail
    (with a 3-step reaction, from a noisy untrained policy: 87 crashes in 400 steps of 32 envs at 60 deg and
    8 rad/s, 7 at 30 deg and 4 rad/s)."""
    unsafe_speed: float = 3.0
    unsafe_angular_speed: float = 4.0
    """rad/s: spinning faster than this is unsafe too (the task ends at 35 rad/s)."""
    recovered_distance: float = 0.15
    recovered_tilt: float = math.radians(15.0)
    recovered_speed: float = 0.5
    recovered_angular_speed: float = 1.0


class HoverPilot:
    """`Expert` for QuadrotorHover (and QuadrotorTrack, whose reference it follows)."""

    def __init__(self, env: QuadrotorHover, config: HoverPilotConfig = HoverPilotConfig()) -> None:
        self.env, self.config = env, config
        params, device, dtype = env.params, env.device, env.dtype
        self.mass, self.gravity = params.mass, params.gravity
        self.ctbr = CtbrActionMap(params, env.config.ctbr, device, dtype)
        self.max_rate = torch.tensor(env.config.ctbr.max_body_rate, device=device, dtype=dtype)
        self.motor = MotorActionMap(params) if env.config.action_mode == "motor" else None
        self.up = torch.tensor([0.0, 0.0, 1.0], device=device, dtype=dtype)

    def _parts(
        self, setpoint: tuple[torch.Tensor, torch.Tensor] | None = None
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        state = self.env.state
        reference, reference_velocity = setpoint or self.env.reference_at(self.env.episode_time)
        rotation = _rotation(state[:, 3:7])
        return state[:, 0:3] - reference, state[:, 7:10] - reference_velocity, rotation, state[:, 10:13], state

    def action(self, setpoint: tuple[torch.Tensor, torch.Tensor] | None = None) -> torch.Tensor:
        """The pilot's action `(N, 4)` toward the task's reference, or toward `setpoint` (position and velocity
        `(N, 3)` each, in the env's frame) when given: e.g. a vehicle's own position controller in a rehearsal."""
        c = self.config
        error, velocity, rotation, rates, _ = self._parts(setpoint)
        accel = -c.position_gain * error - c.velocity_gain * velocity
        horizontal = accel[:, :2]
        norm = horizontal.norm(dim=1, keepdim=True).clamp(min=1e-9)
        accel = torch.cat((horizontal * (c.max_horizontal_acceleration / norm).clamp(max=1.0), accel[:, 2:]), dim=1)
        thrust = self.mass * (accel + self.gravity * self.up)
        collective = (thrust * rotation[:, :, 2]).sum(dim=1)
        desired = _attitude(thrust)
        error_matrix = desired.transpose(1, 2) @ rotation - rotation.transpose(1, 2) @ desired
        attitude_error = 0.5 * torch.stack((error_matrix[:, 2, 1], error_matrix[:, 0, 2], error_matrix[:, 1, 0]), 1)
        rate_setpoint = (-c.attitude_gain * attitude_error).clamp(-self.max_rate, self.max_rate)
        thrust_action = self.ctbr.collective_action(collective.unsqueeze(1))
        ctbr_action = torch.cat((thrust_action, rate_setpoint / self.max_rate), dim=1).clamp(-1.0, 1.0)
        if self.motor is None:
            return ctbr_action
        commands = self.ctbr(ctbr_action.T.contiguous(), rates.T.contiguous())
        return self.motor.action_of(commands).T.clamp(-1.0, 1.0)

    def _measures(self) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        error, velocity, rotation, rates, _ = self._parts()
        tilt = torch.acos(rotation[:, 2, 2].clamp(-1.0, 1.0))
        return error.norm(dim=1), tilt, velocity.norm(dim=1), rates.norm(dim=1)

    def unsafe(self) -> torch.Tensor:
        c = self.config
        distance, tilt, speed, spin = self._measures()
        far = (distance > c.unsafe_distance) | (speed > c.unsafe_speed)
        return far | (tilt > c.unsafe_tilt) | (spin > c.unsafe_angular_speed)

    def recovered(self) -> torch.Tensor:
        c = self.config
        distance, tilt, speed, spin = self._measures()
        near = (distance < c.recovered_distance) & (speed < c.recovered_speed)
        return near & (tilt < c.recovered_tilt) & (spin < c.recovered_angular_speed)


def _rotation(quaternion: torch.Tensor) -> torch.Tensor:
    """`(N, 3, 3)` body-to-world rotations of unit quaternions `(N, 4)` (w, x, y, z)."""
    w, x, y, z = quaternion.unbind(dim=1)
    rows = (
        (1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)),
        (2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)),
        (2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)),
    )
    return torch.stack([torch.stack(row, dim=1) for row in rows], dim=1)


def _attitude(thrust: torch.Tensor) -> torch.Tensor:
    """`(N, 3, 3)` desired rotation: body z along `thrust` `(N, 3)`, zero yaw."""
    z_axis = thrust / thrust.norm(dim=1, keepdim=True).clamp(min=1e-9)
    heading = torch.zeros_like(z_axis)
    heading[:, 0] = 1.0
    y_axis = torch.linalg.cross(z_axis, heading)
    y_axis = y_axis / y_axis.norm(dim=1, keepdim=True).clamp(min=1e-9)
    x_axis = torch.linalg.cross(y_axis, z_axis)
    return torch.stack((x_axis, y_axis, z_axis), dim=2)


def track_pilot(env: QuadrotorTrack, config: HoverPilotConfig = HoverPilotConfig()) -> HoverPilot:
    """The HoverPilot of a QuadrotorTrack: it flies the hover task inside, whose reference is the track's."""
    return HoverPilot(env.task, config)
