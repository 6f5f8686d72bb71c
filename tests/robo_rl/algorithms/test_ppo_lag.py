"""PPO-Lagrangian (issue 54, item 2): its priced advantages on a hand-worked rollout, and a short run on the car whose
edge speed limit it is asked to keep (budget 0: the price must rise, from the first rollout). The episode cost it
prices: tests/robo_rl/algorithms/test_episode_cost.py."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from robo_rl.algorithms.lagrange import LagrangeConfig
from robo_rl.algorithms.ppo import PPOConfig
from robo_rl.algorithms.ppo_lag import PPOLag, PPOLagConfig
from robo_rl.modules.actor_critic import ActorCritic, PolicyConfig
from robo_rl.storage.rollout import RolloutStorage


def test_the_advantages_are_priced_as_omnisafe_prices_them() -> None:
    """T = 2, one env, no episode end; the cost critic outputs 0, so cost GAE is the costs' own: A_c = [1, 0]
    (gamma lambda times 0), centered [0.5, -0.5]. Reward advantages [3, 1] standardized (torch's unbiased std,
    sqrt(2)): [0.7071, -0.7071]. With lambda = 1: (A_r - A_c) / 2 = [0.1036, -0.1036]."""
    policy = ActorCritic(3, -torch.ones(1), torch.ones(1), PolicyConfig(), 3)
    config = PPOLagConfig(lagrange=LagrangeConfig(init_multiplier=1.0))
    lag = PPOLag(policy, config, time_limit=10)
    with torch.no_grad():
        for parameter in lag.cost_critic.parameters():
            parameter.zero_()
    storage = RolloutStorage(2, 1, 3, 3, 1, "cpu")
    storage.costs.copy_(torch.tensor([[1.0], [0.0]]))
    storage.advantages = torch.tensor([[3.0], [1.0]])
    lag._price_costs(storage)
    torch.testing.assert_close(storage.advantages, torch.tensor([[0.10355], [-0.10355]]), atol=1e-4, rtol=0)


def test_a_run_over_its_budget_raises_the_price_of_cost(tmp_path: Path) -> None:
    from robo_rl.cli.main import main

    flags = [
        "--algo",
        "ppo_lag",
        "--set",
        "task.config.cost_speed_limit=0.5",
        "--set",
        "task.config.episode_length=1.0",
    ]
    flags += ["--set", "task.num_envs=32", "--set", "ppo_lag.lagrange.cost_budget=0.0", "--max-iterations", "6"]
    flags += ["--set", "runner.loop.eval_interval=0", "--set", "runner.loop.eval_episodes=2", "--quiet"]
    assert main(["train", "rc_car_race_ppo", *flags, "--runs-root", str(tmp_path)]) == 0
    run = next((tmp_path / "rc_car_race_ppo").iterdir())
    rows = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    multipliers = [row["lagrange_multiplier"] for row in rows]
    priced = [row for row in rows if row["train_cost"] is not None]  # rollouts in which episodes ended (1 s each)
    assert len(priced) >= 3 and any(row["rollout_episode_cost"] > 0 for row in priced)
    # the runner's cost per episode and the one the multiplier stepped on are the same episodes' (two counts)
    assert all(row["train_cost"] == pytest.approx(row["rollout_episode_cost"], rel=1e-5) for row in priced)
    # Adam's steps on a violated budget: up to +0.035 each (OmniSafe's rate), never down against a zero budget
    assert multipliers == sorted(multipliers) and multipliers[-1] > 0.05
    # the rate estimate steps in the first rollout (32 steps), before any 50-step episode has ended
    assert rows[0]["train_cost"] is None and rows[0]["priced_episode_cost"] > 0
    assert rows[0]["lagrange_multiplier"] > LagrangeConfig().init_multiplier


def test_the_update_state_resumes() -> None:
    policy = ActorCritic(3, -torch.ones(1), torch.ones(1), PolicyConfig(), 3)
    first = PPOLag(policy, PPOLagConfig(ppo=PPOConfig(num_steps=2)), time_limit=10)
    first.lagrange.update(40.0)
    second = PPOLag(policy, PPOLagConfig(ppo=PPOConfig(num_steps=2)), time_limit=10)
    second.load_state_dict(first.state_dict())
    assert second.lagrange.value == first.lagrange.value
    with pytest.raises(ValueError, match="eager updates only"):
        second.captured_update(RolloutStorage(2, 1, 3, 3, 1, "cpu"))
