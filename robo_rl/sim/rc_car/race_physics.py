"""The torch step of the race as functions: reward, observation and initial states, on component-major tensors
(`(rows, num_envs)`, the car state rows of `robo_rl.sim.rc_car.dynamics`). `RCCarRace` holds the state and calls
them; `robo_rl.sim.rc_car.fused` computes the same per env in its numba kernel."""

from __future__ import annotations

from typing import NamedTuple

import torch

from robo_rl.envs import INFO_FINAL_OBS, INFO_FINAL_PRIVILEGED_OBS, INFO_PRIVILEGED_OBS, INFO_SUCCESS
from robo_rl.sim.rc_car.dynamics import STATE_DIM, VX, YAW, wrap_angle
from robo_rl.sim.rc_car.race_config import (
    INFO_LAP_TIME,
    INFO_LAPS,
    INFO_OFF_TRACK,
    INFO_PROGRESS,
    INFO_STALLED,
    RaceConfig,
)
from robo_rl.sim.rc_car.track import Track, TrackProjection

RESET_DRAWS = 4
"""Uniform draws per env at reset: arc length, lateral offset, heading error, speed."""


class RaceTensors(NamedTuple):
    """The race's tensors the numba kernel reads and writes in place (component-major, `RCCarRace`'s own)."""

    state: torch.Tensor
    """`(7, N)` car states."""
    buffer: torch.Tensor
    """`(L + D + 1, 2, N)` the last actions, for a latency of L steps and the drive's extra delay D."""
    history: torch.Tensor
    """`(2 k, N)` previous actions, newest first."""
    last_action: torch.Tensor
    """`(2, N)` the previous step's action."""
    steps: torch.Tensor
    """`(N,)` long, control steps since each episode started."""
    laps: torch.Tensor
    """`(N,)` long, laps completed in the episode."""
    slow_steps: torch.Tensor
    """`(N,)` long, steps on end below the stall speed."""
    distance: torch.Tensor
    """`(N,)` m driven along the center line in the episode."""
    lap_start: torch.Tensor
    """`(N,)` s, episode time at which the current lap started."""


def reward(
    config: RaceConfig,
    progress: torch.Tensor,
    action: torch.Tensor,
    previous_steering: torch.Tensor,
    off_track: torch.Tensor,
    stalled: torch.Tensor,
) -> torch.Tensor:
    """`(N,)` reward of a step (`RCCarRace`'s docstring gives the formula) from the `progress` `(N,)` m along the
    center line, the clipped `action` `(2, N)`, the previous steering action `(N,)` and the outcome flags `(N,)`."""
    c, dtype = config, progress.dtype
    result = progress * c.progress_weight - c.off_track_penalty * off_track.to(dtype)
    result = result - c.stall_penalty * (stalled & ~off_track).to(dtype)
    if c.action_weight > 0:
        result = result - c.action_weight * action.square().sum(0)
    if c.steering_rate_weight > 0:
        result = result - c.steering_rate_weight * (action[0] - previous_steering).square()
    return result


def observe(
    state: torch.Tensor, projection: TrackProjection, track: Track, lookahead: torch.Tensor, history: torch.Tensor
) -> torch.Tensor:
    """Component-major observation `(obs_dim, N)` of the car states `(7, N)` where `projection` finds them on
    `track`: the center-line points `lookahead` `(K,)` m ahead in the car's frame, the car's velocities, yaw rate
    and wheel angle, its place on the track, then the action `history`."""
    ahead = track.point_at(projection.s.unsqueeze(-1) + lookahead)  # (N, K, 2)
    cos, sin = torch.cos(state[YAW]).unsqueeze(-1), torch.sin(state[YAW]).unsqueeze(-1)
    dx, dy = ahead[..., 0] - state[0].unsqueeze(-1), ahead[..., 1] - state[1].unsqueeze(-1)
    local = torch.stack((cos * dx + sin * dy, cos * dy - sin * dx), dim=-1).flatten(1).T  # (2K, N)
    heading_error = wrap_angle(state[YAW] - projection.heading)
    place = torch.stack((projection.lateral_offset, heading_error, projection.half_width))
    return torch.cat((local, state[VX:STATE_DIM], place, history))


def initial_state(config: RaceConfig, track: Track, uniform: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(`(7, N)` states at random places of `track` from U(0, 1) `(4, N)`, their segments `(N,)`): a uniform arc
    length, a lateral offset within `init_offset` of the half width, a heading within `init_heading` of the center
    line's, a forward speed up to `init_speed`."""
    c = config
    s = uniform[0] * track.length
    heading = track.heading_at(s)
    offset = (2 * uniform[1] - 1) * c.init_offset * track.half_width_at(s)
    centre = track.point_at(s)
    x = centre[:, 0] - offset * torch.sin(heading)
    y = centre[:, 1] + offset * torch.cos(heading)
    yaw = wrap_angle(heading + (2 * uniform[2] - 1) * c.init_heading)
    vx = uniform[3] * c.init_speed
    zero = torch.zeros_like(vx)
    return torch.stack((x, y, yaw, vx, zero, zero, zero)), track.locate(s)[0]


class StepOutcome(NamedTuple):
    """What a step reports per env beside the observation, reward and episode ends (`step_info`'s input)."""

    success: torch.Tensor
    lap_time: torch.Tensor
    laps: torch.Tensor
    off_track: torch.Tensor
    stalled: torch.Tensor
    progress: torch.Tensor


def step_info(
    final_obs: torch.Tensor, privileged: torch.Tensor, final_privileged: torch.Tensor, outcome: StepOutcome
) -> dict[str, torch.Tensor]:
    """A step's info dict, the same from the torch and the numba step: `final_obs` `(obs_dim, N)` as the kernels
    hold it (returned `(N, obs_dim)`), the episode parameters after and before the auto-reset, and the outcome."""
    return {
        INFO_FINAL_OBS: final_obs.T.contiguous(),
        INFO_PRIVILEGED_OBS: privileged,
        INFO_FINAL_PRIVILEGED_OBS: final_privileged,
        INFO_SUCCESS: outcome.success,
        INFO_LAP_TIME: outcome.lap_time,
        INFO_LAPS: outcome.laps,
        INFO_OFF_TRACK: outcome.off_track,
        INFO_STALLED: outcome.stalled,
        INFO_PROGRESS: outcome.progress,
    }
