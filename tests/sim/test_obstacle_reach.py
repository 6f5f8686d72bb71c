"""point/obstacle: the scripted expert reaches the goal on a random side (bimodal), the mean of its modes crashes."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import pytest
import torch

from robo_rl.envs import INFO_FINAL_OBS, INFO_SUCCESS, BatchedEnv, check_step_result
from robo_rl.sim import make, make_expert
from robo_rl.sim.point_obstacle import PointObstacle, PointObstacleConfig
from robo_rl.sim.point_obstacle.expert import ObstacleExpert

DEVICES = [
    "cpu",
    pytest.param("cuda", marks=pytest.mark.skipif(not torch.cuda.is_available(), reason="CUDA is not available")),
]
RADIUS = PointObstacleConfig().obstacle_radius


@dataclass
class FirstEpisodes:
    """Outcome of every env's first episode, `(num_envs,)` each."""

    success: torch.Tensor
    crashed: torch.Tensor
    passing_x: torch.Tensor
    """x − obstacle x where the robot first reaches the obstacle's height (NaN if it never does)."""
    episode_return: torch.Tensor
    progress: torch.Tensor
    """m: distance to the goal at the start minus at the end."""


def _first_episodes(env: PointObstacle, policy: Callable[[], torch.Tensor]) -> FirstEpisodes:
    n = env.num_envs
    over = torch.zeros(n, dtype=torch.bool, device=env.device)
    success, crashed = over.clone(), over.clone()
    passing_x = torch.full((n,), float("nan"), device=env.device)
    episode_return = torch.zeros(n, device=env.device)
    progress = (env.goal - env.position).norm(dim=-1)
    for _ in range(env.max_episode_steps):
        before, obstacle, goal = env.position, env.obstacle, env.goal
        _, reward, terminated, truncated, info = env.step(policy())
        after = info[INFO_FINAL_OBS][:, :2]
        crossing = ~over & passing_x.isnan() & (before[:, 1] < obstacle[:, 1]) & (after[:, 1] >= obstacle[:, 1])
        passing_x = torch.where(crossing, after[:, 0] - obstacle[:, 0], passing_x)
        episode_return = torch.where(over, episode_return, episode_return + reward)
        ending = ~over & (terminated | truncated)
        progress = torch.where(ending, progress - (goal - after).norm(dim=-1), progress)
        success |= ending & info[INFO_SUCCESS]
        crashed |= ending & terminated & ~info[INFO_SUCCESS]
        over |= ending
    return FirstEpisodes(success, crashed, passing_x, episode_return, progress)


def _expert_run(seed: int, num_envs: int = 200) -> tuple[torch.Tensor, FirstEpisodes]:
    """The sides the expert drew for the first episodes `(num_envs,)`, and how those episodes went."""
    env = make("point/obstacle", num_envs, seed=seed)
    expert = make_expert("point/obstacle", env)
    return expert.side, _first_episodes(env, expert.action)


def test_the_expert_reaches_the_goal_without_collisions() -> None:
    _, episodes = _expert_run(seed=0)
    assert episodes.success.float().mean() >= 0.95
    assert not episodes.crashed.any()


def test_the_expert_passes_left_or_right_about_equally_and_never_through_the_obstacle() -> None:
    sides, episodes = _expert_run(seed=1)
    assert not episodes.passing_x.isnan().any()
    left = episodes.passing_x < 0
    assert 0.3 <= left.float().mean() <= 0.7
    assert (episodes.passing_x.abs() >= RADIUS).all()
    assert torch.equal(left, sides < 0)


def test_the_mean_of_the_two_modes_drives_into_the_obstacle() -> None:
    env = make("point/obstacle", 200, seed=2)
    expert = ObstacleExpert(env)
    right = torch.ones(env.num_envs)
    mean_of_modes = _first_episodes(env, lambda: (expert.action_on_side(right) + expert.action_on_side(-right)) / 2)
    assert not mean_of_modes.success.any() and mean_of_modes.crashed.all()

    def straight_to_goal() -> torch.Tensor:
        direction = env.goal - env.position
        return direction / direction.norm(dim=-1, keepdim=True)

    env.reset(seed=2)
    straight = _first_episodes(env, straight_to_goal)
    assert not straight.success.any() and straight.crashed.all()


def test_reward_is_progress_plus_bonus_minus_crash_penalty() -> None:
    c = PointObstacleConfig()
    env = PointObstacle(64, config=c, seed=3)
    obs = env.reset(seed=3)
    next_obs, reward, *_ = env.step(torch.tensor([[0.6, 0.8]]).expand(64, 2))
    torch.testing.assert_close(reward, c.progress_weight * (obs[:, 4:6].norm(dim=-1) - next_obs[:, 4:6].norm(dim=-1)))
    env.reset(seed=3)
    reached = _first_episodes(env, ObstacleExpert(env).action)
    torch.testing.assert_close(reached.episode_return, c.progress_weight * reached.progress + c.success_bonus)
    env.reset(seed=3)
    crashed = _first_episodes(env, lambda: torch.tensor([[0.0, 1.0]]).expand(64, 2))
    assert crashed.crashed.all()
    torch.testing.assert_close(crashed.episode_return, c.progress_weight * crashed.progress - c.crash_penalty)


def test_the_expert_is_unsafe_only_near_the_obstacle() -> None:
    env = PointObstacle(64, seed=4)
    expert = ObstacleExpert(env)
    assert expert.recovered().all() and not expert.unsafe().any()
    seen_unsafe = torch.zeros(64, dtype=torch.bool)
    for _ in range(20):  # straight up for 1 m: from about 0.65 m below the obstacle's surface to inside it
        clearance = (env.position - env.obstacle).norm(dim=-1) - RADIUS
        assert torch.equal(expert.unsafe(), clearance < 0.1)
        seen_unsafe |= expert.unsafe()
        env.step(torch.tensor([[0.0, 1.0]]).expand(64, 2))
    assert seen_unsafe.all()


@pytest.mark.parametrize("device", DEVICES)
def test_specs_seeding_and_auto_reset(device: str) -> None:
    env = make("point/obstacle", 32, device=device, seed=5)
    assert isinstance(env, BatchedEnv) and env.dt == 0.05 and env.max_episode_steps == 120
    assert env.obs_spec.names == ("x", "y", "vx", "vy", "goal_dx", "goal_dy", "obstacle_dx", "obstacle_dy")
    assert env.action_spec.names == ("vx", "vy") and env.action_spec.high == (1.0, 1.0)

    def rollout(seed: int) -> tuple[torch.Tensor, torch.Tensor]:
        """Obs of 150 steps (every env resets at least once) and the expert's sides over 3 episodes each."""
        expert = ObstacleExpert(env)
        trajectory, sides = [env.reset(seed=seed)], []
        for _ in range(150):
            sides.append(expert.side)
            result = env.step(expert.action())
            check_step_result(env, result)
            trajectory.append(result[0])
        return torch.stack(trajectory), torch.stack(sides)

    first, sides = rollout(seed=6)
    again, sides_again = rollout(seed=6)
    assert first.device.type == torch.device(device).type
    assert torch.equal(first, again) and torch.equal(sides, sides_again)
    assert not torch.equal(first, rollout(seed=7)[0])
    assert (env.episode_index >= 3).all()  # the construction reset, the seeded reset, at least one auto-reset
    # Every env restarted near (0, -1) at rest, and its side was drawn again for the new episode.
    restarted = first[1:, :, 1] < first[:-1, :, 1] - 1.0
    assert restarted.any(dim=0).all()
    start = first[1:][restarted]
    assert (start[:, 1] + 1.0).abs().max() <= 0.05 and start[:, 2:4].abs().max() == 0
    assert (sides != sides[0]).any(dim=0).float().mean() >= 0.25
