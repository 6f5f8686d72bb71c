"""`evaluate`: one episode per env, and the success rate of tasks that define success."""

from __future__ import annotations

import pytest
import torch

from robo_rl.api.configs import override, preset
from robo_rl.api.runs import make_env
from robo_rl.build import build_runner
from robo_rl.config import apply_overrides
from robo_rl.runners.episode_stats import EpisodeStats, EpisodeTracker
from robo_rl.runners.evaluate import eval_metrics, evaluate, evaluation_due
from robo_rl.sim import make


def _zero_torque(obs: torch.Tensor) -> torch.Tensor:
    return torch.zeros(obs.shape[0], 1)


def test_success_rate_counts_each_episode_once_at_its_end() -> None:
    lenient = make("pendulum", num_envs=8, max_episode_steps=5, success_angle=4.0, success_speed=100.0)
    strict = make("pendulum", num_envs=8, max_episode_steps=5, success_angle=1e-9)
    assert evaluate(lenient, _zero_torque, seed=0).success_rate == 1.0
    result = evaluate(strict, _zero_torque, seed=0)
    assert result.success_rate == 0.0 and result.lengths == (5,) * 8


def test_success_rate_matches_the_final_angles() -> None:
    env = make("pendulum", num_envs=64, max_episode_steps=3, success_angle=1.0, success_speed=100.0)
    result = evaluate(env, _zero_torque, seed=4)
    replay = make("pendulum", num_envs=64, max_episode_steps=3)
    obs = replay.reset(seed=4)
    for _ in range(3):
        obs, *_, info = replay.step(_zero_torque(obs))
    final_cos = info["final_obs"][:, 0]
    expected = final_cos >= torch.cos(torch.tensor(1.0))
    assert result.successes == tuple(expected.tolist()) and 0 < sum(result.successes) < 64


def test_tasks_without_success_report_none() -> None:
    env = make("gym/InvertedPendulum-v5", num_envs=2, max_episode_steps=3)
    result = evaluate(env, lambda obs: torch.zeros(obs.shape[0], 1), seed=0)
    assert result.successes is None and result.success_rate is None
    assert eval_metrics(result)["eval_success_rate"] is None and eval_metrics(None)["eval_return"] is None


def test_targets_reached_requires_every_target_that_is_set() -> None:
    from robo_rl.runners.evaluate import EvalResult, targets_reached

    with_success = EvalResult(returns=(-100.0, -300.0), lengths=(200, 200), successes=(True, False))
    no_success = EvalResult(returns=(-100.0, -300.0), lengths=(200, 200))
    assert not targets_reached(with_success, None, None)
    assert targets_reached(with_success, -200.0, None) and not targets_reached(with_success, -199.0, None)
    assert targets_reached(with_success, None, 0.5) and not targets_reached(with_success, None, 0.51)
    assert not targets_reached(with_success, -199.0, 0.5) and targets_reached(with_success, -200.0, 0.5)
    assert not targets_reached(no_success, None, 0.0)


def test_evaluation_due_skips_only_periodic_evaluations_below_the_training_success_rate() -> None:
    assert evaluation_due(10, 100, 5) and not evaluation_due(11, 100, 5)
    assert not evaluation_due(10, 100, 5, training_success_rate=0.2, min_training_success_rate=0.5)
    assert evaluation_due(10, 100, 5, training_success_rate=0.5, min_training_success_rate=0.5)
    # Unknown training success (no episode ended, or a task without success) does not block the evaluation.
    assert evaluation_due(10, 100, 5, training_success_rate=None, min_training_success_rate=0.5)
    # The final evaluation always runs.
    assert evaluation_due(100, 100, 0, training_success_rate=0.0, min_training_success_rate=0.5)


def test_episode_tracker_counts_the_successes_of_finished_episodes() -> None:
    tracker = EpisodeTracker(4, "cpu")
    done = torch.tensor([True, True, False, True])
    # Env 2 reports success without finishing: it must not count.
    tracker.record(torch.ones(4), done, success=torch.tensor([True, False, True, True]))
    stats = tracker.flush()
    assert stats.episodes == 3 and stats.success_rate == 2 / 3 and stats.mean_length == 1.0
    tracker.record(torch.ones(4), torch.zeros(4, dtype=torch.bool), success=torch.zeros(4, dtype=torch.bool))
    assert tracker.flush() == EpisodeStats(None, None, 0, None, reward_per_step=1.0)
    without_success = EpisodeTracker(2, "cpu")
    without_success.record(torch.ones(2), torch.ones(2, dtype=torch.bool))
    assert without_success.flush().success_rate is None


def test_on_policy_runner_logs_the_training_success_rate() -> None:
    cfg = apply_overrides(
        preset("pendulum_ppo"), ["task.num_envs=16", "ppo.num_steps=8", "runner.loop.max_iterations=2"]
    )
    runner = build_runner(cfg, make, evaluate=False)
    lenient = ["task.max_episode_steps=4", "task.success_angle=4.0", "task.success_speed=100.0"]
    lenient_runner = build_runner(override(cfg, lenient), make, evaluate=False)
    rows: list[dict] = []
    lenient_runner.learn(rows.append)
    assert [row["train_success_rate"] for row in rows] == [1.0, 1.0]
    rows.clear()
    runner.learn(rows.append)
    assert all(row["train_success_rate"] is None for row in rows)  # no pendulum episode ends within 16 steps


def test_tracking_rms_covers_every_step_of_every_episode() -> None:
    env = make("quadrotor/track", num_envs=8, episode_length=0.2)
    hover = torch.tensor(env.hover_action)

    def actor(obs: torch.Tensor) -> torch.Tensor:
        return hover.expand(obs.shape[0], 4)

    result = evaluate(env, actor, seed=3)
    assert result.lengths == (20,) * 8  # no crash in 0.2 s
    replay = make("quadrotor/track", num_envs=8, episode_length=0.2)
    obs = replay.reset(seed=3)
    errors = []
    for _ in range(20):
        obs, *_, info = replay.step(actor(obs))
        errors.append(info["tracking_error"])
    expected = torch.stack(errors).square().mean().sqrt().item()
    assert result.tracking_rms == pytest.approx(expected, rel=1e-5) and expected > 0.1
    assert evaluate(make("pendulum", num_envs=2, max_episode_steps=3), _zero_torque, seed=0).tracking_rms is None


def test_runner_evaluates_with_the_task_eval_config() -> None:
    cfg = override(
        preset("quadrotor_hover_ppo"),
        [
            "task.num_envs=4",
            "runner.loop.eval_episodes=3",
            "task.config.randomization.mass=0.1",
            "task.eval_config.randomization={mass: 0.3, min_action_latency: 1, max_action_latency: 1}",
        ],
    )
    runner = build_runner(cfg, make)
    assert runner.env.config.randomization.mass == 0.1
    assert runner.eval_env.config.randomization.mass == 0.3
    assert runner.eval_env.config.randomization.min_action_latency == 1
    assert make_env(cfg, 2, "cpu").config.randomization.mass == 0.1
    assert make_env(cfg, 2, "cpu", evaluation=True).config.randomization.mass == 0.3
