"""The episode cost a Lagrange multiplier steps on (issue 54): OmniSafe's mean over the episodes that ended, and the
rate estimate (cost per step times the mean episode length), on hand-worked steps; and the renewal-reward argument
behind the rate estimate checked on simulated episodes of random lengths and costs."""

from __future__ import annotations

import math

import pytest
import torch

from robo_rl.algorithms.episode_cost import EpisodeCostEstimator, EpisodeCosts, EpisodeLength


def test_episode_costs_are_summed_across_calls_and_counted_where_episodes_end() -> None:
    costs = EpisodeCosts(2, "cpu")
    sums = costs.ended(torch.tensor([[1.0, 2.0], [0.5, 2.0]]), torch.tensor([[False, False], [False, True]]))
    assert (float(sums.ended_cost), float(sums.ended_count), float(sums.ended_steps)) == (4.0, 1.0, 2.0)  # env 1
    assert (float(sums.step_cost), float(sums.steps)) == (5.5, 4.0)
    sums = costs.ended(torch.tensor([[0.5, 1.0]]), torch.tensor([[True, False]]))
    # env 0 carried 1.5 and 2 steps from the last call: its episode cost 2.0 over 3 steps
    assert (float(sums.ended_cost), float(sums.ended_count), float(sums.ended_steps)) == (2.0, 1.0, 3.0)


def test_the_rate_estimate_prices_cost_before_any_episode_ends() -> None:
    """Hand-worked: 2 envs, a time limit of 10 steps. Two steps costing 1 and 0 per step in env 0 and 1: 0.5 per step
    times the 10-step prior length = 5, though no episode ended (OmniSafe's estimate has none: NaN). Then env 1 ends a
    4-step episode: the length pools 4 with the prior weighted as 2 episodes, (4 + 2 x 10) / 3 = 8."""
    length = EpisodeLength(10, weight=2.0)
    assert length.update(0.0, 0.0) == 10.0
    assert length.update(4.0, 1.0) == 8.0
    estimator = EpisodeCostEstimator(10)
    estimator.add(torch.tensor([[1.0, 0.0], [1.0, 0.0]]), torch.zeros(2, 2, dtype=torch.bool))
    estimate = estimator.take()
    assert estimate.rate_estimate == 5.0 and math.isnan(estimate.ended_mean) and estimate.mean_length == 10.0
    estimator.add(torch.tensor([[0.0, 3.0], [0.0, 1.0]]), torch.tensor([[False, False], [False, True]]))
    estimate = estimator.take()
    assert estimate.ended_mean == 4.0  # env 1: 0 + 0 + 3 + 1
    assert estimate.mean_length == 8.0 and estimate.rate_estimate == pytest.approx(1.0 * 8.0)  # 4 / 4 steps x 8
    assert estimator.take().rate_estimate is None  # nothing added since


def test_the_rate_estimate_converges_to_the_expected_episode_cost() -> None:
    """Renewal-reward: 64 envs run episodes of random length (uniform 20-100 steps, mean 60) with a per-episode cost
    rate drawn uniform 0-2 (expected episode cost E[L r] = 60 x 1 = 60, lengths and rates independent). After 3,000
    steps the rate estimate must be within 5 % of 60, and of the ended episodes' mean."""
    generator = torch.Generator().manual_seed(0)
    envs, steps = 64, 3000
    left = torch.randint(20, 101, (envs,), generator=generator)
    rate = torch.rand(envs, generator=generator) * 2
    estimator = EpisodeCostEstimator(100)
    for _ in range(steps):
        left -= 1
        done = left == 0
        estimator.add((rate + 0.0).unsqueeze(0), done.unsqueeze(0))
        left = torch.where(done, torch.randint(20, 101, (envs,), generator=generator), left)
        rate = torch.where(done, torch.rand(envs, generator=generator) * 2, rate)
    estimate = estimator.take()
    assert estimate.rate_estimate == pytest.approx(60.0, rel=0.05)
    assert estimate.ended_mean == pytest.approx(60.0, rel=0.05)
    assert estimate.mean_length == pytest.approx(60.0, rel=0.05)


def test_the_estimator_resumes_mid_episode() -> None:
    first = EpisodeCostEstimator(10)
    first.add(torch.tensor([[1.0, 2.0]]), torch.zeros(1, 2, dtype=torch.bool))
    second = EpisodeCostEstimator(10)
    second.load_state_dict(first.state_dict())
    for estimator in (first, second):
        estimator.add(torch.tensor([[1.0, 1.0]]), torch.tensor([[True, False]]))
    assert first.take() == second.take()
