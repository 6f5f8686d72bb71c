"""PPO-Lagrangian (issue 54, item 2): the episode cost it prices (OmniSafe's ended episodes, and the rate estimate),
its priced advantages on a hand-worked rollout, and a short run on the car whose edge speed limit it is asked to keep
(budget 0: the price must rise, from the first rollout)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from robo_rl.algorithms.lagrange import LagrangeConfig
from robo_rl.algorithms.ppo import PPOConfig
from robo_rl.algorithms.ppo_lag import EpisodeCosts, EpisodeLength, PPOLag, PPOLagConfig
from robo_rl.modules.actor_critic import ActorCritic, PolicyConfig
from robo_rl.storage.rollout import RolloutStorage


def test_episode_costs_are_summed_across_rollouts_and_counted_where_episodes_end() -> None:
    costs = EpisodeCosts(2, "cpu")
    sums = costs.ended(torch.tensor([[1.0, 2.0], [0.5, 2.0]]), torch.tensor([[False, False], [False, True]]))
    assert (float(sums.ended_cost), float(sums.ended_count), float(sums.ended_steps)) == (4.0, 1.0, 2.0)  # env 1
    assert (float(sums.step_cost), float(sums.steps)) == (5.5, 4.0)
    sums = costs.ended(torch.tensor([[0.5, 1.0]]), torch.tensor([[True, False]]))
    # env 0 carried 1.5 and 2 steps from the last rollout: its episode cost 2.0 over 3 steps
    assert (float(sums.ended_cost), float(sums.ended_count), float(sums.ended_steps)) == (2.0, 1.0, 3.0)


def test_the_rate_estimate_prices_cost_before_any_episode_ends() -> None:
    """Hand-worked: 2 envs, a time limit of 10 steps. A rollout of 2 steps costing 1 and 0 per step in env 0 and 1:
    0.5 per step times the 10-step prior length = 5, though no episode ended. Then env 1 ends a 4-step episode:
    the length pools 4 with the prior weighted as 2 episodes, (4 + 2 x 10) / 3 = 8."""
    length = EpisodeLength(10, weight=2.0)
    assert length.update(0.0, 0.0) == 10.0
    assert length.update(4.0, 1.0) == 8.0
    policy = ActorCritic(3, -torch.ones(1), torch.ones(1), PolicyConfig(), 3)
    lag = PPOLag(policy, PPOLagConfig(ppo=PPOConfig(num_steps=2)), time_limit=10)
    storage = RolloutStorage(2, 2, 3, 3, 1, "cpu")
    storage.costs.copy_(torch.tensor([[1.0, 0.0], [1.0, 0.0]]))
    assert lag._estimate_episode_cost(storage) == 5.0
    omnisafe = PPOLag(policy, PPOLagConfig(ppo=PPOConfig(num_steps=2), cost_estimate="episodes"), time_limit=10)
    assert omnisafe._estimate_episode_cost(storage) is None  # no episode ended: no step for the multiplier


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
