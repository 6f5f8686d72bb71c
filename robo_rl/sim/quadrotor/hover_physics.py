"""The torch step of the hover task as functions: crash test, reward and initial states, on component-major tensors
(`(rows, num_envs)`, the state rows of `robo_rl.sim.quadrotor.dynamics`). `QuadrotorHover` holds the state and
calls them; `robo_rl.sim.quadrotor.fused` computes the same per env in its numba kernel."""

from __future__ import annotations

import math
from typing import NamedTuple

import torch

from robo_rl.sim.quadrotor.dynamics import ANGULAR_VELOCITY, DynamicsParams, rows_matmul
from robo_rl.sim.quadrotor.hover_config import HoverConfig
from robo_rl.sim.quadrotor.params import QuadrotorParams
from robo_rl.sim.quadrotor.randomization import (
    BATTERY,
    DISTURBANCE_ACCELERATION,
    DISTURBANCE_ANGULAR_ACCELERATION,
    SCALES,
    THRUST_SCALE,
    EpisodeSampler,
    thrust_curves,
)

INIT_DRAWS = 13
"""Uniform draws per env at reset: position 3, velocity 3, angular velocity 3, attitude angle 1, axis 2, phase 1."""


class Draws(NamedTuple):
    """Every random number one `step` uses, drawn before the (compilable) transition."""

    noise: torch.Tensor | None
    """`(9, N)` standard normal observation noise, or None without noise."""
    episode: torch.Tensor | None
    """`(18, N)` U(0, 1) for the episode parameters of envs that reset, or None without randomization."""
    init: torch.Tensor
    """`(13, N)` U(0, 1) for the initial states of envs that reset (`INIT_DRAWS`)."""


class HoverTensors(NamedTuple):
    """The task's tensors the kernel reads and writes in place (component-major, `QuadrotorHover`'s own)."""

    state: torch.Tensor
    """`(17, N)` physical state."""
    history: torch.Tensor
    """`(4 k, N)` previous actions, newest first."""
    steps: torch.Tensor
    """`(N,)` long, control steps since each episode started."""
    error_sum: torch.Tensor
    """`(N,)` position error summed over the success window."""
    integral: torch.Tensor
    """`(3, N)` position integral, or `(0, N)` without it."""
    episode: torch.Tensor
    """`(rows, N)` this episode's parameters."""
    action_buffer: torch.Tensor
    """`(L + 1, 4, N)` the last actions, for a latency of up to L steps."""


Errors = tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]
"""(position error, velocity error, body rates, reference velocity), `(3, N)` each."""


def norm(vectors: torch.Tensor) -> torch.Tensor:
    """`(N,)` Euclidean norms of component-major vectors `(3, N)` (norm(dim=0) is slow on CPU)."""
    return vectors.square().sum(0).sqrt_()


def draw(
    generator: torch.Generator,
    num_envs: int,
    noise: bool,
    sampler: EpisodeSampler | None,
    device: torch.device,
    dtype: torch.dtype,
) -> Draws:
    """The random numbers of one step (or reset), in a fixed order: observation noise (with `noise`), episode
    parameters (from `sampler`, None: no draw), initial state."""
    noise_draw = None
    if noise:
        noise_draw = torch.randn((9, num_envs), generator=generator, device=device, dtype=dtype)
    episode = sampler.draw(num_envs, generator) if sampler is not None else None
    init = torch.rand(INIT_DRAWS, num_envs, generator=generator, device=device, dtype=dtype)
    return Draws(noise_draw, episode, init)


def episode_dynamics(
    config: HoverConfig,
    episode: torch.Tensor,
    nominal: DynamicsParams,
    rebuilds_thrust_curve: bool,
    gravity: float,
    nominal_mass: float,
    nominal_inertia: torch.Tensor,
) -> tuple[DynamicsParams, torch.Tensor | None, torch.Tensor | None]:
    """(dynamics parameters, disturbance force `(3, N)`, disturbance torque `(3, N)`) of the episode parameters
    `episode` `(rows, N)`: `nominal` scaled (with `rebuilds_thrust_curve`, each env's thrust curve rebuilt), the
    disturbances None without them. They are accelerations of the nominal frame (`nominal_mass` kg,
    `nominal_inertia` `(3, 1)`), or of each drawn airframe."""
    randomization = config.randomization
    airframes = config.airframes is not None
    dynamics = nominal
    if randomization.randomizes_dynamics or airframes:
        scales = episode[SCALES].clone()
        scales[THRUST_SCALE] *= episode[BATTERY]
        curve = None
        if rebuilds_thrust_curve:
            curve = thrust_curves(episode, nominal.mass * scales[0], gravity)
        dynamics = nominal.scaled(scales, curve)
    if not randomization.has_disturbance:
        return dynamics, None, None
    mass = dynamics.mass if airframes else nominal_mass
    inertia = dynamics.inertia if airframes else nominal_inertia  # the arm folded in
    force = episode[DISTURBANCE_ACCELERATION] * mass
    return dynamics, force, episode[DISTURBANCE_ANGULAR_ACCELERATION] * inertia


def crashed(config: HoverConfig, state: torch.Tensor, distance: torch.Tensor, rotation: torch.Tensor) -> torch.Tensor:
    """`(N,)` whether each env is out of bounds: farther than `max_position_error` from the reference (`distance`
    `(N,)` m), tilted beyond `max_tilt` (`rotation` `(9, N)` row-major), spinning faster than
    `max_angular_speed`, below `floor_height`. Written as "not within bounds" so that NaN states count as crashes."""
    within = (distance <= config.max_position_error) & (rotation[8] >= math.cos(config.max_tilt))
    within &= state[ANGULAR_VELOCITY].square().sum(0) <= config.max_angular_speed**2
    if config.floor_height is not None:
        within &= state[2] >= config.floor_height
    return ~within


def reward(
    config: HoverConfig,
    cost_weights: torch.Tensor,
    errors: Errors,
    distance: torch.Tensor,
    rotation: torch.Tensor,
    action_offset: torch.Tensor,
    terminated: torch.Tensor,
    integral: torch.Tensor | None,
) -> torch.Tensor:
    """`(N,)` reward of a step (`QuadrotorHover`'s docstring gives the formula). `cost_weights` `(1, 13)`: the
    weights of the squared position error, velocity error, body rates and `action_offset` `(4, N)` (action minus
    the hover action); `integral` `(3, N)` the position integral where its weight counts, else None."""
    c = config
    position_error, velocity_error, angular_velocity, _ = errors
    deviations = torch.cat((position_error, velocity_error, angular_velocity, action_offset))
    cost = rows_matmul(cost_weights, deviations.square_()).squeeze(0)
    cost = cost.add_(1.0 - rotation[8], alpha=c.attitude_weight)
    if c.reward_floor is None:
        cost = cost.add_(terminated, alpha=c.crash_penalty)
    cost = cost.add_(distance, alpha=c.distance_weight)
    if integral is not None:
        cost = cost.add_(integral.square().sum(0), alpha=c.integral_weight)
    result = cost.neg_().add_(c.alive_reward)
    if c.reward_floor is None:
        return result
    return result.clamp_(min=c.reward_floor).sub_(terminated.to(result.dtype), alpha=c.crash_penalty)


def initial_state(
    config: HoverConfig,
    uniform: torch.Tensor,
    fraction: float | torch.Tensor,
    offset: torch.Tensor,
    width: torch.Tensor,
    reference: tuple[torch.Tensor, torch.Tensor],
    rotor: torch.Tensor,
) -> torch.Tensor:
    """`(17, N)` initial states from U(0, 1) `uniform` `(13, N)`: position, velocity and body rates `offset +
    width * u` `(9, 1)` each around the `reference` (position, velocity) `(3, N)` at time 0, an attitude rotated by
    up to `init_attitude_range` about a uniformly random axis, the motors at `rotor` `(4, N)`; every range scaled by
    the curriculum `fraction`."""
    offsets = torch.addcmul(offset, uniform[:9], width)
    if isinstance(fraction, torch.Tensor) or fraction < 1.0:
        offsets = offsets * fraction
    reference_position, reference_velocity = reference
    half_angle = uniform[9] * (config.init_attitude_range * fraction / 2)
    axis_z = uniform[10] * 2 - 1  # uniform on the sphere: z ~ U(-1, 1), azimuth ~ U(0, 2 pi)
    azimuth = uniform[11] * (2 * math.pi)
    radius = (1 - axis_z.square()).clamp_(min=0.0).sqrt_()
    axis = torch.stack((radius * azimuth.cos(), radius * azimuth.sin(), axis_z))
    quaternion = torch.cat((half_angle.cos().unsqueeze(0), axis.mul_(half_angle.sin())))
    position, velocity = reference_position + offsets[0:3], reference_velocity + offsets[3:6]
    return torch.cat((position, quaternion, velocity, offsets[6:9], rotor))


def check_motor_stability(config: HoverConfig, params: QuadrotorParams) -> None:
    """ValueError when the integration step dt / substeps is not below the smallest motor time constant the
    configuration can draw (the explicit motor update would overshoot)."""
    h = config.dt / config.substeps
    ranges = config.randomization.scale_ranges(params)
    tau = min(params.motor_rise_time_constant * ranges[6][0], params.motor_fall_time_constant * ranges[7][0])
    if config.airframes is not None:  # the fall is never faster than the rise
        tau = config.airframes.motor_rise_time_constant[0]
    if h >= tau:
        raise ValueError(
            f"integration step dt/substeps = {h:.4g} s is not below the smallest motor time constant "
            f"{tau:.4g} s of frame {params.name!r}; increase HoverConfig.substeps"
        )
