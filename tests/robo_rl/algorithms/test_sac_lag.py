"""SAC-Lagrangian (issue 54, item 2): the priced actor loss (OmniSafe's SACLag: (alpha log pi - Q_r + lambda Q_c) /
(1 + lambda)), the cost critic's Bellman target, the multiplier stepping on the observed cost rate at its cadence
(hand-worked), and a short run on point/obstacle whose hazard it is asked to avoid (budget 0: the price rises)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import torch

from robo_rl.algorithms.lagrange import LagrangeConfig
from robo_rl.algorithms.sac import SACConfig
from robo_rl.algorithms.sac_lag import SACLag, SACLagConfig
from robo_rl.storage.replay import Transitions


def _batch(size: int, costs: torch.Tensor, terminated: bool = False) -> Transitions:
    generator = torch.Generator().manual_seed(0)
    obs = torch.randn(size, 3, generator=generator)
    flags = torch.full((size,), terminated)
    return Transitions(
        obs=obs,
        critic_obs=obs,
        actions=torch.rand(size, 1, generator=generator) * 2 - 1,
        rewards=torch.zeros(size),
        costs=costs,
        next_obs=obs,
        next_critic_obs=obs,
        terminated=flags,
        truncated=torch.zeros(size, dtype=torch.bool),
        intervened=torch.zeros(size, dtype=torch.bool),
        is_demo=torch.zeros(size, dtype=torch.bool),
    )


def _learner(config: SACLagConfig | None = None, time_limit: int = 10) -> SACLag:
    return SACLag(3, 3, -torch.ones(1), torch.ones(1), config or SACLagConfig(), time_limit=time_limit)


def test_the_actor_loss_is_priced_as_omnisafe_prices_it() -> None:
    """lambda = 1, the cost critic zeroed but for its last bias (Q_c = 3 everywhere): loss -> (loss + 3) / 2."""
    learner = _learner(SACLagConfig(lagrange=LagrangeConfig(init_multiplier=1.0)))
    with torch.no_grad():
        for parameter in learner.cost_critic.parameters():
            parameter.zero_()
        learner.cost_critic.biases[-1].fill_(3.0)  # every member's output bias
    batch = _batch(4, torch.zeros(4))
    priced = learner._price_cost(torch.tensor(5.0), batch, batch.actions)
    assert float(priced) == pytest.approx((5.0 + 3.0) / 2.0)


def test_the_cost_critic_learns_a_constant_cost_rate() -> None:
    """Cost 1 every step, never terminal: the fixed point is 1 / (1 - gamma) = 2 at gamma 0.5."""
    config = SACLagConfig(sac=SACConfig(gamma=0.5, tau=0.2, critic_learning_rate=3e-3))
    learner = _learner(config)
    batch = _batch(64, torch.ones(64))
    for _ in range(600):
        learner._update_cost_critic(batch)
    values = learner._cost_value(batch.critic_obs, batch.actions)
    assert values.mean().item() == pytest.approx(2.0, abs=0.1)
    terminal = _batch(64, torch.ones(64), terminated=True)  # a terminal step is worth its own cost only
    for _ in range(600):
        learner._update_cost_critic(terminal)
    assert learner._cost_value(terminal.critic_obs, terminal.actions).mean().item() == pytest.approx(1.0, abs=0.1)


def test_the_multiplier_steps_on_the_observed_cost_rate_every_interval_and_resumes() -> None:
    """Hand-worked, SGD at rate 0.1, budget 0, time limit 10, 2 envs observed for 3 steps costing 1 and 0 per step,
    no episode ending: the rate estimate is 0.5 x 10 = 5, and the third actor update steps lambda to 0 + 0.1 x 5."""
    lagrange = LagrangeConfig(cost_budget=0.0, init_multiplier=0.0, learning_rate=0.1, optimizer="sgd")
    config = SACLagConfig(lagrange=lagrange, lagrange_interval=3)
    learner = _learner(config)
    batch = _batch(8, torch.ones(8))
    step = _batch(2, torch.tensor([1.0, 0.0]))
    for _ in range(2):
        learner.observe(step)
        learner.update(batch)
    assert learner.lagrange.value == 0.0 and math.isnan(learner.priced_cost)
    learner.observe(step)
    learner.update(batch, update_actor=False)  # critic-only updates do not count
    learner.update(batch)
    assert learner.priced_cost == pytest.approx(5.0) and learner.lagrange.value == pytest.approx(0.5)
    learner.observe(_batch(3, torch.ones(3)))  # a batch of another size (a robot's invalid rows left out): ignored
    resumed = _learner(config)
    resumed.load_state_dict(learner.state_dict())
    assert resumed.lagrange.value == learner.lagrange.value
    for each in (learner, resumed):
        each.observe(step)
    assert learner.estimator.take() == resumed.estimator.take()
    with pytest.raises(ValueError, match="time limit"):
        _learner(config, time_limit=0).update(batch)


def test_a_run_over_its_budget_raises_the_price_of_cost(tmp_path: Path) -> None:
    from robo_rl.cli.main import main

    flags = ["--algo", "sac_lag", "--set", "task.config.hazard_margin=0.3", "--set", "sac_lag.lagrange.cost_budget=0"]
    flags += ["--set", "sac_lag.lagrange_interval=20", "--set", "off_policy.learning_starts=64"]
    flags += ["--set", "off_policy.loop.eval_interval=0", "--set", "off_policy.loop.eval_episodes=4"]
    flags += ["--set", "task.num_envs=4", "--max-iterations", "160", "--quiet", "--runs-root", str(tmp_path)]
    assert main(["train", "point_obstacle_sac", *flags]) == 0
    run = next((tmp_path / "point_obstacle_sac").iterdir())
    rows = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    priced = [row for row in rows if row.get("lagrange_multiplier") is not None]
    assert priced and priced[-1]["lagrange_multiplier"] > SACLagConfig().lagrange.init_multiplier
    assert priced[-1]["priced_episode_cost"] > 0
