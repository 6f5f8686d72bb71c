"""Pure pursuit with a friction-limited speed profile: the scripted baseline driver of `RCCarRace`.

Steering: the car aims its rear axle at the center-line point `L(v) = lookahead_time * vx` (clamped) ahead along
the track and steers the wheel angle of the circle through it, `atan(wheelbase * 2 sin(alpha) / l)`.
Speed: the fastest speed from which the car can still brake to every corner ahead, each corner taken at
`v = sqrt(lateral_acceleration * mu g / |curvature|)`, capped at `max_speed` (and at the ESC's largest setpoint).
A car in speed mode (`CarParams.command_mode`) gets that speed as its ESC's setpoint, drive = speed /
speed_scale; a throttle car gets a P controller's throttle or brake on the speed error. The driver uses the
nominal car (it does not know randomized parameters).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from robo_rl.sim.rc_car.dynamics import VX, YAW, X, Y
from robo_rl.sim.rc_car.params import SPEED_MODE
from robo_rl.sim.rc_car.race import RCCarRace


@dataclass(frozen=True)
class PurePursuitConfig:
    """Gains and margins of the pure-pursuit driver."""

    lookahead_time: float = 0.25
    """Look-ahead distance per m/s of forward speed in s."""
    min_lookahead: float = 0.6
    """Shortest look-ahead distance in m."""
    max_lookahead: float = 3.0
    """Longest look-ahead distance in m."""
    lateral_acceleration: float = 0.7
    """Fraction of the friction limit mu g used as the lateral acceleration in corners."""
    braking_deceleration: float = 0.6
    """Fraction of the full brake deceleration (speed mode: the ESC's `max_deceleration`) assumed when braking
    for a corner ahead."""
    preview: float = 6.0
    """Center line checked for corners ahead of the car in m."""
    preview_step: float = 0.2
    """Spacing in m of the curvature samples over the preview."""
    curvature_window: float = 0.6
    """Length in m over which the center-line curvature is averaged (smooths polyline noise)."""
    max_speed: float = 8.0
    """Speed cap in m/s."""
    speed_gain: float = 2.0
    """Throttle mode: drive command per m/s of speed error (throttle when too slow, brake when too fast)."""

    def __post_init__(self) -> None:
        positive: tuple[str, ...] = ("lookahead_time", "min_lookahead", "max_lookahead", "lateral_acceleration")
        positive += ("braking_deceleration", "preview", "preview_step", "curvature_window", "max_speed", "speed_gain")
        bad = [name for name in positive if not getattr(self, name) > 0]
        if bad:
            raise ValueError(f"PurePursuitConfig fields must be positive: {bad}")
        if self.min_lookahead > self.max_lookahead:
            raise ValueError("PurePursuitConfig: min_lookahead must not exceed max_lookahead")


class PurePursuit:
    """A batched scripted driver: `PurePursuit(config)(env)` returns actions `(env.num_envs, 2)` in [-1, 1] for
    the current state of an `RCCarRace` (usable as an expert for demonstrations)."""

    def __init__(self, config: PurePursuitConfig = PurePursuitConfig()) -> None:
        self.config = config

    def __call__(self, env: RCCarRace) -> torch.Tensor:
        state, projection, track, params = env.state, env.projection, env.track, env.params
        c = self.config
        speed = state[:, VX]
        distance = (c.lookahead_time * speed).clamp(c.min_lookahead, c.max_lookahead)
        target = track.point_at(projection.s + distance)
        steer = self._steer(state, target, params.lr, params.wheelbase) / params.max_steer
        target_speed = self._speed_target(env, projection.s)
        if params.command_mode == SPEED_MODE:  # the ESC's loop tracks the speed itself
            drive = target_speed / params.speed_scale
        else:
            drive = c.speed_gain * (target_speed - speed)
        return torch.stack((steer, drive), dim=-1).clamp(-1.0, 1.0)

    @staticmethod
    def _steer(state: torch.Tensor, target: torch.Tensor, lr: float, wheelbase: float) -> torch.Tensor:
        """Wheel angle in rad `(N,)` that puts the rear axle on a circle through `target` `(N, 2)`."""
        yaw = state[:, YAW]
        cos, sin = torch.cos(yaw), torch.sin(yaw)
        rear_x, rear_y = state[:, X] - lr * cos, state[:, Y] - lr * sin
        dx, dy = target[:, 0] - rear_x, target[:, 1] - rear_y
        ahead, left = cos * dx + sin * dy, cos * dy - sin * dx
        squared = (ahead.square() + left.square()).clamp(min=1e-6)
        # Curvature of the circle tangent to the heading through the target: 2 sin(alpha) / l = 2 left / l^2.
        return torch.atan(wheelbase * 2.0 * left / squared)

    def _speed_target(self, env: RCCarRace, s: torch.Tensor) -> torch.Tensor:
        """Speed in m/s `(N,)` from which every corner of the preview can still be reached at its corner speed."""
        c, params = self.config, env.params
        g = params.gravity
        ahead = torch.arange(0.0, c.preview + 1e-9, c.preview_step, device=s.device, dtype=s.dtype)
        window = torch.linspace(-c.curvature_window / 2, c.curvature_window / 2, 7, device=s.device, dtype=s.dtype)
        samples = s.unsqueeze(-1) + ahead  # (N, P)
        curvature = env.track.curvature_at(samples.unsqueeze(-1) + window).mean(-1).abs()  # (N, P)
        corner = (c.lateral_acceleration * params.friction * g / curvature.clamp(min=1e-6)).sqrt()
        speed_mode = params.command_mode == SPEED_MODE
        brake = params.max_deceleration if speed_mode else params.max_brake_force / params.mass
        deceleration = c.braking_deceleration * min(brake, params.friction * g)
        cap = min(c.max_speed, params.speed_scale) if speed_mode else c.max_speed
        reachable = (corner.clamp(max=cap).square() + 2 * deceleration * ahead).sqrt()
        return reachable.min(dim=-1).values.clamp(max=cap)
