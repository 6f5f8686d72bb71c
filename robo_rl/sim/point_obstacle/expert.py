"""A scripted expert for `point/obstacle` that passes the obstacle on a random side: bimodal demonstrations.

Per env and per episode it draws a side, left or right with probability 1/2 each (from its own seeded generator),
and steers at full speed to a waypoint beside the obstacle on that side (`clearance` m from the obstacle centre,
level with it), then, once past the obstacle's height, straight to the goal. The mean of its two modes is the
straight line, which collides. It takes over within `unsafe_margin` m of the obstacle or the arena edge and hands
back beyond `recovered_margin` m of both.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from robo_rl.sim.point_obstacle.task import PointObstacle


@dataclass(frozen=True)
class ObstacleExpertConfig:
    clearance: float = 0.6
    """m: distance of the side waypoint from the obstacle centre."""
    unsafe_margin: float = 0.1
    """m: unsafe closer than this to the obstacle's surface or the arena edge..."""
    recovered_margin: float = 0.2
    """... recovered farther than this from both."""
    seed: int = 0
    """Seed of the side draws."""


class ObstacleExpert:
    """`Expert` for PointObstacle; `side` `(num_envs,)` is -1 (left, x < obstacle) or +1 (right) per env."""

    def __init__(self, env: PointObstacle, config: ObstacleExpertConfig = ObstacleExpertConfig()) -> None:
        self.env, self.config = env, config
        self._generator = torch.Generator(device=env.device).manual_seed(config.seed)
        self._episodes = torch.full((env.num_envs,), -1, dtype=torch.long, device=env.device)
        self._side = torch.zeros(env.num_envs, dtype=env.dtype, device=env.device)

    @property
    def side(self) -> torch.Tensor:
        """`(num_envs,)` the side of each env's current episode: -1 left, +1 right."""
        self._update_sides()
        return self._side.clone()

    def action(self) -> torch.Tensor:
        """`(num_envs, 2)` velocity in m/s: `action_on_side` of this episode's side."""
        return self.action_on_side(self.side)

    def action_on_side(self, side: torch.Tensor) -> torch.Tensor:
        """`(num_envs, 2)` velocity in m/s toward the waypoint on `side` `(num_envs,)` (-1 left, +1 right), or
        toward the goal once past the obstacle."""
        env = self.env
        position, obstacle = env.position, env.obstacle
        waypoint = obstacle + torch.stack((side * self.config.clearance, torch.zeros_like(side)), -1)
        past = (position[:, 1] >= obstacle[:, 1]).unsqueeze(-1)
        direction = torch.where(past, env.goal, waypoint) - position
        unit = direction / direction.norm(dim=-1, keepdim=True).clamp_min(1e-6)
        return unit * env.config.max_speed

    def unsafe(self) -> torch.Tensor:
        return self._margin() < self.config.unsafe_margin

    def recovered(self) -> torch.Tensor:
        return self._margin() > self.config.recovered_margin

    def _margin(self) -> torch.Tensor:
        """`(num_envs,)` m: distance to the nearer of the obstacle's surface and the arena edge."""
        c = self.env.config
        position = self.env.position
        to_obstacle = (position - self.env.obstacle).norm(dim=-1) - c.obstacle_radius
        to_edge = (c.arena_half_size - position.abs()).amin(dim=-1)
        return torch.minimum(to_obstacle, to_edge)

    def _update_sides(self) -> None:
        # A changed episode index means the env (auto-)reset: draw a fresh side there.
        episodes = self.env.episode_index
        coin = torch.rand(self.env.num_envs, generator=self._generator, device=self.env.device) < 0.5
        fresh = torch.where(coin, 1.0, -1.0).to(self._side.dtype)
        self._side = torch.where(episodes != self._episodes, fresh, self._side)
        self._episodes = episodes
