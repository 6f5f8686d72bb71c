"""The mean reward per step counts every step of every env, finished episode or not, and both runners log it."""

from __future__ import annotations

from typing import Any

import pytest
import torch

from robo_rl.api.configs import preset
from robo_rl.build import build_runner
from robo_rl.config import apply_overrides
from robo_rl.envs import BatchedEnv, StepResult
from robo_rl.experiment import ExperimentConfig
from robo_rl.runners.episode_stats import EpisodeTracker
from robo_rl.sim import make


class RewardRecorder:
    """Passes an env through, keeping every step's `(num_envs,)` rewards."""

    def __init__(self, env: BatchedEnv) -> None:
        self.env = env
        self.rewards: list[torch.Tensor] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self.env, name)

    def step(self, action: torch.Tensor) -> StepResult:
        result = self.env.step(action)
        self.rewards.append(result[1].clone())
        return result


def test_reward_per_step_averages_every_step_of_every_env() -> None:
    tracker = EpisodeTracker(2, "cpu")
    tracker.record(torch.tensor([1.0, 3.0]), torch.tensor([False, True]))
    tracker.record(torch.tensor([2.0, -1.0]), torch.tensor([False, False]))
    stats = tracker.flush()
    # (1 + 3 + 2 - 1) / 4 steps; the one finished episode alone has return 3
    assert stats.reward_per_step == 1.25 and stats.mean_return == 3.0 and stats.episodes == 1
    assert tracker.flush().reward_per_step is None  # nothing recorded since
    tracker.record(torch.tensor([0.0, -2.0]), torch.tensor([False, False]))
    stats = tracker.flush()
    assert stats.reward_per_step == -1.0 and stats.mean_return is None and stats.episodes == 0


def _rows_and_rewards(cfg: ExperimentConfig) -> tuple[list[dict[str, Any]], list[torch.Tensor]]:
    recorders: list[RewardRecorder] = []

    def make_recorded(*args: Any, **kwargs: Any) -> RewardRecorder:
        recorders.append(RewardRecorder(make(*args, **kwargs)))
        return recorders[-1]

    runner = build_runner(cfg, make_recorded, evaluate=False)
    rows: list[dict[str, Any]] = []
    runner.learn(rows.append)
    (recorder,) = recorders
    return rows, recorder.rewards


def test_on_policy_runner_logs_the_mean_reward_of_each_iteration() -> None:
    cfg = apply_overrides(
        preset("pendulum_ppo"), ["task.num_envs=4", "ppo.num_steps=8", "runner.loop.max_iterations=3"]
    )
    rows, rewards = _rows_and_rewards(cfg)
    per_iteration = torch.stack(rewards).reshape(3, 8 * 4).mean(dim=1)
    assert [row["train_reward_per_step"] for row in rows] == pytest.approx(per_iteration.tolist())
    assert all(row["mean_return"] is None for row in rows)  # no pendulum episode ends within 24 steps


def test_off_policy_runner_logs_the_mean_reward_of_each_step() -> None:
    cfg = apply_overrides(preset("pendulum_sac"), ["task.num_envs=2", "off_policy.loop.max_iterations=3"])
    rows, rewards = _rows_and_rewards(cfg)
    assert [row["train_reward_per_step"] for row in rows] == pytest.approx([r.mean().item() for r in rewards])
