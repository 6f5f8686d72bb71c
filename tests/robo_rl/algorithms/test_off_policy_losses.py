"""SAC and TD3 targets and losses against hand-computed values, terminal vs time-out bootstrapping."""

from __future__ import annotations

import math

import pytest
import torch
from torch import nn

from robo_rl.algorithms.off_policy_targets import bootstrapped_target, ensemble_mse, polyak_update, subset_min
from robo_rl.algorithms.sac_losses import filtered_bc_loss, sac_actor_loss, soft_target, temperature_loss
from robo_rl.algorithms.td3_losses import smoothed_action, td3_actor_loss, td3_target

# Three transitions: running, time-out (truncated: bootstraps), terminal (does not).
REWARDS = torch.tensor([1.0, 2.0, 3.0])
TERMINATED = torch.tensor([False, False, True])


def test_soft_target_bootstraps_time_outs_but_not_terminations() -> None:
    next_q = torch.tensor([10.0, 20.0, 30.0])
    next_log_prob = torch.tensor([-1.0, 0.5, 2.0])
    # r + 0.9 * (Q' - 0.2 log pi): [1 + 0.9*(10 + 0.2), 2 + 0.9*(20 - 0.1), 3 + 0]
    expected = torch.tensor([1 + 0.9 * 10.2, 2 + 0.9 * 19.9, 3.0])
    got = soft_target(REWARDS, next_q, next_log_prob, TERMINATED, gamma=0.9, alpha=0.2)
    torch.testing.assert_close(got, expected)


def test_td3_target_takes_the_minimum_critic() -> None:
    next_q = torch.tensor([[10.0, 20.0, 30.0], [12.0, 18.0, 5.0]])  # 2 critics x 3 transitions
    expected = torch.tensor([1 + 0.99 * 10.0, 2 + 0.99 * 18.0, 3.0])
    torch.testing.assert_close(td3_target(REWARDS, next_q, TERMINATED, gamma=0.99), expected)


def test_bootstrapped_target_with_gamma_zero_is_the_reward() -> None:
    torch.testing.assert_close(bootstrapped_target(REWARDS, torch.full((3,), 99.0), TERMINATED, 0.0), REWARDS)


def test_subset_min_over_all_members_is_the_minimum() -> None:
    q = torch.tensor([[1.0, 5.0], [3.0, 2.0], [0.5, 9.0]])
    torch.testing.assert_close(subset_min(q, 3), torch.tensor([0.5, 2.0]))


def test_subset_min_uses_exactly_a_random_pair() -> None:
    q = torch.arange(10.0).unsqueeze(1).expand(10, 4).clone()  # member i predicts i everywhere
    generator = torch.Generator().manual_seed(0)
    draws = {float(subset_min(q, 2, generator)[0]) for _ in range(200)}
    # The min of two distinct members out of 0..9 is never 9 and takes many values.
    assert 9.0 not in draws and len(draws) >= 6
    with pytest.raises(ValueError, match="subset_size"):
        subset_min(q, 11)


def test_ensemble_mse_sums_members() -> None:
    q = torch.tensor([[1.0, 3.0], [2.0, 2.0]])
    target = torch.tensor([2.0, 2.0])
    # member 0: ((1-2)^2 + (3-2)^2)/2 = 1; member 1: 0
    assert ensemble_mse(q, target).item() == pytest.approx(1.0)


def test_sac_actor_loss() -> None:
    q = torch.tensor([1.0, 3.0])
    log_prob = torch.tensor([-2.0, 0.0])
    # mean(0.5 * log_prob - q) = mean([-1 - 1, 0 - 3]) = -2.5
    assert sac_actor_loss(q, log_prob, 0.5).item() == pytest.approx(-2.5)


def test_temperature_loss_value_and_gradient_direction() -> None:
    log_alpha = torch.tensor(math.log(0.1), requires_grad=True)
    target_entropy = -1.0
    # Entropy -log_prob = 3 is above the target -1: the loss must push alpha down (positive gradient).
    log_prob = torch.tensor([-3.0, -3.0])
    loss = temperature_loss(log_alpha, log_prob, target_entropy)
    assert loss.item() == pytest.approx(-math.log(0.1) * (-3.0 - 1.0))
    loss.backward()
    assert log_alpha.grad is not None and log_alpha.grad.item() == pytest.approx(4.0)
    # Entropy below the target: gradient is negative, so gradient descent raises alpha.
    log_alpha.grad = None
    temperature_loss(log_alpha, torch.tensor([2.0]), target_entropy).backward()
    assert log_alpha.grad.item() == pytest.approx(-1.0)


def test_td3_actor_loss_and_smoothing() -> None:
    assert td3_actor_loss(torch.tensor([1.0, 2.0, 3.0])).item() == pytest.approx(-2.0)
    action = torch.tensor([[0.95, -0.95, 0.0]]).expand(1000, 3)
    smoothed = smoothed_action(action, noise_std=0.2, noise_clip=0.5, generator=torch.Generator().manual_seed(1))
    assert smoothed.min() >= -1.0 and smoothed.max() <= 1.0  # stays in the normalized action box
    assert (smoothed - action).abs().max() <= 0.5 + 1e-6  # noise clipped to ±0.5
    assert smoothed[:, 2].std().item() == pytest.approx(0.2, rel=0.15)  # unclipped coordinate keeps its noise


def test_polyak_update_moves_target_by_tau() -> None:
    source, target = nn.Linear(2, 1), nn.Linear(2, 1)
    with torch.no_grad():
        source.weight.fill_(1.0)
        target.weight.fill_(0.0)
    polyak_update(target, source, tau=0.25)
    torch.testing.assert_close(target.weight, torch.full((1, 2), 0.25))


def test_filtered_bc_loss_clones_only_flagged_actions_the_critic_prefers() -> None:
    log_prob = torch.tensor([-1.0, -2.0, -3.0, -4.0], requires_grad=True)
    q_demo = torch.tensor([5.0, 5.0, 1.0, 5.0])
    q_policy = torch.tensor([4.0, 4.0, 2.0, 4.0])
    flagged = torch.tensor([True, True, True, False])
    loss = filtered_bc_loss(log_prob, q_demo, q_policy, flagged)
    # row 2: the policy's action is rated higher (filtered out); row 3: online data (not flagged)
    assert loss.item() == pytest.approx(1.5)
    loss.backward()
    assert log_prob.grad.tolist() == [-0.5, -0.5, 0.0, 0.0]
    none = filtered_bc_loss(log_prob, q_demo, q_demo + 1.0, flagged)  # the policy is better everywhere
    assert none.item() == 0.0
