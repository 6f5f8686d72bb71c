"""A scripted driver for the RC car race: pure pursuit as the `Expert` of robo_rl.hil's SimulatedHuman.

It takes over when the car gets within `unsafe_margin` m of the track border (|lateral offset| > half width −
margin), points more than `unsafe_heading` away from the track direction, or crawls below `unsafe_min_speed`
(about to stall), and hands back once the car is back within `recovered_fraction` of the half width and
`recovered_heading` of the track direction, faster than `recovered_min_speed`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import torch

from robo_rl.sim.rc_car.dynamics import VX, YAW, wrap_angle
from robo_rl.sim.rc_car.pure_pursuit import PurePursuit, PurePursuitConfig
from robo_rl.sim.rc_car.race import RCCarRace


@dataclass(frozen=True)
class RaceDriverConfig:
    unsafe_margin: float = 0.25
    """m: the driver takes over this close to the border."""
    unsafe_heading: float = math.radians(50.0)
    recovered_fraction: float = 0.4
    """Hands back once |lateral offset| < this × half width..."""
    recovered_heading: float = math.radians(15.0)
    """... and the heading error is below this..."""
    unsafe_min_speed: float = 0.3
    """m/s: the driver also takes over a car slower than this (about to stall)..."""
    recovered_min_speed: float = 1.0
    """... and hands back once it is faster than this."""
    pursuit: PurePursuitConfig = field(default_factory=PurePursuitConfig)


class RaceDriver:
    """`Expert` for RCCarRace."""

    def __init__(self, env: RCCarRace, config: RaceDriverConfig = RaceDriverConfig()) -> None:
        self.env, self.config = env, config
        self.pursuit = PurePursuit(config.pursuit)

    def action(self) -> torch.Tensor:
        return self.pursuit(self.env)

    def _measures(self) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        projection, state = self.env.projection, self.env.state
        heading = wrap_angle(state[:, YAW] - projection.heading).abs()
        return projection.lateral_offset.abs(), projection.half_width, heading, state[:, VX]

    def unsafe(self) -> torch.Tensor:
        offset, half_width, heading, speed = self._measures()
        c = self.config
        near_border = offset > half_width - c.unsafe_margin
        return near_border | (heading > c.unsafe_heading) | (speed < c.unsafe_min_speed)

    def recovered(self) -> torch.Tensor:
        offset, half_width, heading, speed = self._measures()
        c = self.config
        centred = (offset < c.recovered_fraction * half_width) & (heading < c.recovered_heading)
        return centred & (speed > c.recovered_min_speed)
