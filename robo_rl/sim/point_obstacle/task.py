"""Batched 2-D point robot that must reach a goal around a round obstacle, passing it left or right.

The robot starts near (0, -1) m, the goal lies near (0, +1) m and an obstacle of radius 0.35 m sits near the
origin between them, so the straight line collides: a good policy goes around either side, both equally good.
Demonstrations of this task are bimodal, the case flow-matching and diffusion policies are made for (a Gaussian
policy fit by MSE averages the two sides and drives into the obstacle). The robot is velocity-controlled: the
action is its velocity in m/s for the next `dt`. All envs step together on one torch device without host syncs.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from robo_rl.cost_spec import CostSpec
from robo_rl.envs import INFO_COST, INFO_SUCCESS, SpaceSpec, StepResult
from robo_rl.sim.batched_task import BatchedTask


@dataclass(frozen=True)
class PointObstacleConfig:
    """Geometry, reward and episode parameters (lengths in m)."""

    dt: float = 0.05
    """Control period in s."""
    max_episode_steps: int = 120
    """Steps after which an episode is truncated (6 s; the expert needs about 50)."""
    max_speed: float = 1.0
    """Velocity limit in m/s per axis; actions are clipped to +-max_speed."""
    start_y: float = -1.0
    """Nominal start is (0, start_y)."""
    goal_y: float = 1.0
    """Nominal goal is (0, goal_y)."""
    spread: float = 0.05
    """Start and goal are drawn uniformly within +-spread per axis of their nominal positions."""
    obstacle_radius: float = 0.35
    """Radius of the obstacle; the robot collides when its centre gets closer than this."""
    obstacle_jitter: float = 0.05
    """The obstacle centre is drawn uniformly within +-obstacle_jitter per axis of the origin."""
    arena_half_size: float = 1.5
    """The episode ends (failed) when |x| or |y| of the robot exceeds this."""
    goal_radius: float = 0.1
    """The episode ends successfully within this distance of the goal."""
    progress_weight: float = 10.0
    """Reward per m of decrease of the distance to the goal."""
    success_bonus: float = 10.0
    """Reward on reaching the goal."""
    crash_penalty: float = 10.0
    """Subtracted on hitting the obstacle or leaving the arena."""

    hazard_margin: float = 0.0
    """A constraint for safe RL (`info["cost"]`, issue 54): a step costs 1 while the robot is within this distance
    (m) of the obstacle's surface, as a Safety-Gymnasium hazard costs 1 per step inside it; an episode's cost counts
    those steps. The reward does not change. 0: no cost (the task declares none)."""

    def __post_init__(self) -> None:
        if not self.hazard_margin >= 0:
            raise ValueError(f"PointObstacleConfig.hazard_margin must not be negative, got {self.hazard_margin}")
        positive = ("dt", "max_episode_steps", "max_speed", "obstacle_radius", "arena_half_size", "goal_radius")
        bad = [name for name in positive if not getattr(self, name) > 0]
        if bad:
            raise ValueError(f"PointObstacleConfig fields must be positive: {bad}")


def hazard_spec(config: PointObstacleConfig) -> CostSpec:
    """The cost `PointObstacleConfig.hazard_margin` declares."""
    return CostSpec("near_obstacle", "1", f"1 per step within {config.hazard_margin:g} m of the obstacle's surface")


class PointObstacle(BatchedTask):
    """`num_envs` point robots implementing the `BatchedEnv` protocol.

    Observation `(num_envs, 8)`: position, velocity (the last applied action), goal − position and obstacle
    centre − position. Action `(num_envs, 2)`: velocity in m/s. Reward `(num_envs,)`: `progress_weight` × decrease
    of the distance to the goal, + `success_bonus` on reaching it, − `crash_penalty` on hitting the obstacle or
    leaving the arena. Reaching the goal, a collision or leaving the arena terminates; the time limit truncates.
    `info["success"]`: the episode ended within `goal_radius` of the goal.
    """

    state_attributes = ("_position", "_velocity", "_goal", "_obstacle", "_episodes")

    def __init__(
        self,
        num_envs: int,
        device: str | torch.device = "cpu",
        config: PointObstacleConfig = PointObstacleConfig(),
        seed: int | None = None,
    ) -> None:
        """Build the envs and reset them; `seed` is passed to `reset`, None draws a non-deterministic seed."""
        super().__init__(num_envs, device, config.dt, config.max_episode_steps, seed)
        self.config = config
        inf, v = math.inf, config.max_speed
        self.obs_spec = SpaceSpec(
            names=("x", "y", "vx", "vy", "goal_dx", "goal_dy", "obstacle_dx", "obstacle_dy"),
            low=(-inf, -inf, -v, -v, -inf, -inf, -inf, -inf),
            high=(inf, inf, v, v, inf, inf, inf, inf),
            units=("m", "m", "m/s", "m/s", "m", "m", "m", "m"),
        )
        self.action_spec = SpaceSpec(names=("vx", "vy"), low=(-v, -v), high=(v, v), units=("m/s", "m/s"))
        zeros2 = torch.zeros(num_envs, 2, dtype=self.dtype, device=self.device)
        self._position, self._velocity, self._goal, self._obstacle = (zeros2.clone() for _ in range(4))
        self._episodes = torch.zeros(num_envs, dtype=torch.long, device=self.device)
        self.cost_spec = None if config.hazard_margin <= 0 else hazard_spec(config)
        self.reset(seed)

    @property
    def position(self) -> torch.Tensor:
        """`(num_envs, 2)` robot position in m."""
        return self._position.clone()

    @property
    def goal(self) -> torch.Tensor:
        """`(num_envs, 2)` goal position in m."""
        return self._goal.clone()

    @property
    def obstacle(self) -> torch.Tensor:
        """`(num_envs, 2)` obstacle centre in m."""
        return self._obstacle.clone()

    @property
    def episode_index(self) -> torch.Tensor:
        """`(num_envs,)` long: episodes each env has started since it was built (changes on every reset)."""
        return self._episodes.clone()

    def step(self, action: torch.Tensor) -> StepResult:
        """Move at velocity `action` `(num_envs, 2)` in m/s for `dt`; auto-resets envs whose episode is over."""
        c = self.config
        velocity = action.to(device=self.device, dtype=self.dtype).reshape(self.num_envs, 2)
        self._velocity = velocity.clamp(-c.max_speed, c.max_speed)
        distance_before = (self._goal - self._position).norm(dim=-1)
        self._position = self._position + self._velocity * c.dt
        distance = (self._goal - self._position).norm(dim=-1)
        crashed = self._collided() | (self._position.abs() > c.arena_half_size).any(dim=-1)
        success = (distance <= c.goal_radius) & ~crashed
        reward = (
            c.progress_weight * (distance_before - distance) + c.success_bonus * success - c.crash_penalty * crashed
        )
        info = {INFO_SUCCESS: success}
        if self.cost_spec is not None:
            clearance = (self._position - self._obstacle).norm(dim=-1) - c.obstacle_radius
            info[INFO_COST] = (clearance < c.hazard_margin).to(self.dtype)
        return self._end_step(self._current_obs(), reward, info, terminated=success | crashed)

    def _collided(self) -> torch.Tensor:
        return (self._position - self._obstacle).norm(dim=-1) < self.config.obstacle_radius

    def _uniform(self, center: tuple[float, float], half_width: float) -> torch.Tensor:
        unit = torch.rand(self.num_envs, 2, generator=self._generator, device=self.device, dtype=self.dtype)
        return torch.tensor(center, dtype=self.dtype, device=self.device) + (2 * unit - 1) * half_width

    def _reset_where(self, done: torch.Tensor) -> None:
        c = self.config
        self._renew(
            done,
            _position=self._uniform((0.0, c.start_y), c.spread),
            _velocity=torch.zeros_like(self._velocity),
            _goal=self._uniform((0.0, c.goal_y), c.spread),
            _obstacle=self._uniform((0.0, 0.0), c.obstacle_jitter),
        )
        self._episodes = self._episodes + done.long()

    def _current_obs(self) -> torch.Tensor:
        p = self._position
        return torch.cat((p, self._velocity, self._goal - p, self._obstacle - p), dim=-1)
