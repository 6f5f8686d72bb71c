"""PPO: GAE and the losses against hand-computed values, the adaptive LR rule, and one real update."""

from __future__ import annotations

import math

import pytest
import torch
from torch.distributions import Normal, kl_divergence

from robo_rl.algorithms.ppo import (
    PPO,
    PPOConfig,
    adapt_learning_rate,
    clipped_surrogate_loss,
    gae,
    value_loss,
)
from robo_rl.modules.actor_critic import ActorCritic, PolicyConfig
from robo_rl.modules.distributions import DiagonalGaussian, gaussian_kl
from robo_rl.storage.rollout import RolloutStorage

GAMMA, LAM = 0.9, 0.8  # gamma * lam = 0.72


def _gae_inputs() -> dict[str, torch.Tensor]:
    """T=3 steps of N=3 envs; env 0 truncated at t=1, env 1 terminated at t=1, env 2 never done.

    All envs share rewards [1, 2, 3] and values [0.5, 1.0, 1.5]; next_values differ: env 0 and 1 carry
    V(final obs) = 4.0 at t=1 (only the truncated env may use it), env 2 carries V(obs at t+1).
    """
    rewards = torch.tensor([[1.0, 1.0, 1.0], [2.0, 2.0, 2.0], [3.0, 3.0, 3.0]])
    values = torch.tensor([[0.5, 0.5, 0.5], [1.0, 1.0, 1.0], [1.5, 1.5, 1.5]])
    next_values = torch.tensor([[1.0, 1.0, 1.0], [4.0, 4.0, 1.5], [2.0, 2.0, 2.0]])
    terminated = torch.tensor([[False, False, False], [False, True, False], [False, False, False]])
    dones = torch.tensor([[False, False, False], [True, True, False], [False, False, False]])
    return dict(rewards=rewards, values=values, next_values=next_values, terminated=terminated, dones=dones)


def test_gae_matches_hand_computation() -> None:
    # delta_t = r_t + gamma * (not terminal) * next_value_t - value_t; A_t = delta_t + 0.72 * (not done) * A_{t+1}
    # t=2 (all envs): delta = 3 + 0.9*2.0 - 1.5 = 3.3
    # env 0 (truncated at t=1): delta_1 = 2 + 0.9*4.0 - 1.0 = 4.6, A_1 = 4.6 (recursion stops)
    #                           A_0 = (1 + 0.9*1.0 - 0.5) + 0.72*4.6 = 1.4 + 3.312 = 4.712
    # env 1 (terminated at t=1): delta_1 = 2 - 1.0 = 1.0, A_1 = 1.0; A_0 = 1.4 + 0.72*1.0 = 2.12
    # env 2 (no done): delta_1 = 2 + 0.9*1.5 - 1.0 = 2.35, A_1 = 2.35 + 0.72*3.3 = 4.726
    #                  A_0 = 1.4 + 0.72*4.726 = 4.80272
    expected = torch.tensor([[4.712, 2.12, 4.80272], [4.6, 1.0, 4.726], [3.3, 3.3, 3.3]])
    inputs = _gae_inputs()
    advantages, returns = gae(**inputs, gamma=GAMMA, lam=LAM)
    torch.testing.assert_close(advantages, expected, atol=1e-5, rtol=0)
    # returns = advantages + values: env 0 [5.212, 5.6, 4.8], env 1 [2.62, 2.0, 4.8], env 2 [5.30272, 5.726, 4.8]
    expected_returns = torch.tensor([[5.212, 2.62, 5.30272], [5.6, 2.0, 5.726], [4.8, 4.8, 4.8]])
    torch.testing.assert_close(returns, expected_returns, atol=1e-5, rtol=0)
    torch.testing.assert_close(returns, advantages + inputs["values"])


def test_gae_with_lambda_one_and_no_dones_is_discounted_return_minus_value() -> None:
    # lam=1, one env: A_0 = r0 + g r1 + g^2 r2 + g^3 V_last - V_0 = 1 + 0.9*2 + 0.81*3 + 0.729*10 - 0.5 = 12.02
    rewards = torch.tensor([[1.0], [2.0], [3.0]])
    values = torch.tensor([[0.5], [0.7], [0.9]])
    next_values = torch.tensor([[0.7], [0.9], [10.0]])
    flags = torch.zeros(3, 1, dtype=torch.bool)
    advantages, _ = gae(rewards, values, next_values, flags, flags, gamma=0.9, lam=1.0)
    assert advantages[0, 0].item() == pytest.approx(12.02, abs=1e-5)


@pytest.mark.parametrize(
    ("ratio", "advantage", "objective"),
    [
        (1.1, 2.0, 2.2),  # inside the clip range: ratio * A
        (1.5, 2.0, 2.4),  # A > 0, ratio above 1 + clip: clipped to 1.2 * 2
        (0.5, 2.0, 1.0),  # A > 0, ratio below 1 - clip: the unclipped 0.5 * 2 is the smaller one
        (1.5, -1.0, -1.5),  # A < 0, ratio above 1 + clip: the unclipped -1.5 is the smaller one
        (0.5, -1.0, -0.8),  # A < 0, ratio below 1 - clip: clipped to 0.8 * -1
        (0.9, -1.0, -0.9),  # inside the clip range
    ],
)
def test_clipped_surrogate_single_samples(ratio: float, advantage: float, objective: float) -> None:
    old = torch.tensor([0.3])
    new = old + math.log(ratio)
    loss = clipped_surrogate_loss(new, old, torch.tensor([advantage]), clip=0.2)
    assert loss.item() == pytest.approx(-objective, abs=1e-6)


def test_clipped_surrogate_batch_mean_and_zero_gradient_where_clipped() -> None:
    ratios = torch.tensor([1.1, 1.5, 0.5, 1.5, 0.5, 0.9])
    advantages = torch.tensor([2.0, 2.0, 2.0, -1.0, -1.0, -1.0])
    old = torch.zeros(6)
    new = ratios.log().requires_grad_(True)
    loss = clipped_surrogate_loss(new, old, advantages, clip=0.2)
    # objectives 2.2 + 2.4 + 1.0 - 1.5 - 0.8 - 0.9 = 2.4; mean 0.4; loss -0.4
    assert loss.item() == pytest.approx(-0.4, abs=1e-6)
    loss.backward()
    # d(-ratio*A/6)/d(log ratio) = -ratio*A/6 where unclipped wins; zero where the clipped term wins.
    expected_grad = torch.tensor([-1.1 * 2 / 6, 0.0, -0.5 * 2 / 6, 1.5 / 6, 0.0, 0.9 / 6])
    torch.testing.assert_close(new.grad, expected_grad, atol=1e-6, rtol=0)


def test_value_loss_unclipped_and_clipped() -> None:
    values = torch.tensor([1.0, 3.0, 0.0])
    old_values = torch.tensor([0.5, 0.5, 0.5])
    returns = torch.tensor([2.0, 0.0, 0.0])
    # unclipped squared errors: 1, 9, 0 -> mean 10/3
    assert value_loss(values, old_values, returns, clip=None).item() == pytest.approx(10 / 3, abs=1e-6)
    # clipped values 0.7, 0.7, 0.3 -> errors 1.69, 0.49, 0.09; elementwise max 1.69, 9, 0.09 -> mean 10.78/3
    assert value_loss(values, old_values, returns, clip=0.2).item() == pytest.approx(10.78 / 3, abs=1e-6)


def test_gaussian_kl_zero_for_equal_distributions() -> None:
    mean = torch.tensor([[0.3, -1.2], [2.0, 0.0]])
    std = torch.tensor([[0.5, 1.5], [0.1, 3.0]])
    torch.testing.assert_close(gaussian_kl(mean, std, mean, std), torch.zeros(2))


def test_gaussian_kl_hand_computed() -> None:
    # KL(N(0, 1) || N(1, 2^2)) = log 2 + (1 + 1) / (2 * 4) - 1/2 = 0.693147 - 0.25 = 0.443147
    kl = gaussian_kl(torch.tensor([[0.0]]), torch.tensor([[1.0]]), torch.tensor([[1.0]]), torch.tensor([[2.0]]))
    assert kl.shape == (1,)
    assert kl.item() == pytest.approx(math.log(2) - 0.25, abs=1e-6)
    # Two actions sum: the same term plus KL(N(0,1) || N(0,1)) = 0, and it is not symmetric.
    zeros, ones = torch.zeros(1, 2), torch.ones(1, 2)
    two = gaussian_kl(zeros, ones, torch.tensor([[1.0, 0.0]]), torch.tensor([[2.0, 1.0]]))
    assert two.item() == pytest.approx(math.log(2) - 0.25, abs=1e-6)
    reverse = gaussian_kl(torch.tensor([[1.0]]), torch.tensor([[2.0]]), torch.tensor([[0.0]]), torch.tensor([[1.0]]))
    # KL(N(1, 4) || N(0, 1)) = log(1/2) + (4 + 1)/2 - 1/2 = 2 - log 2
    assert reverse.item() == pytest.approx(2 - math.log(2), abs=1e-6)


def test_adapt_learning_rate_up_down_and_bounds() -> None:
    cfg = PPOConfig(desired_kl=0.01, min_learning_rate=1e-5, max_learning_rate=1e-2)
    assert adapt_learning_rate(1e-3, 0.05, cfg) == pytest.approx(1e-3 / 1.5)  # kl > 2 * 0.01
    assert adapt_learning_rate(1e-3, 0.001, cfg) == pytest.approx(1.5e-3)  # kl < 0.5 * 0.01
    assert adapt_learning_rate(1e-3, 0.01, cfg) == 1e-3  # in the band
    assert adapt_learning_rate(1e-3, 0.02, cfg) == 1e-3  # the band's edges keep the LR
    assert adapt_learning_rate(1e-3, 0.005, cfg) == 1e-3
    assert adapt_learning_rate(9e-3, 0.0, cfg) == 1e-2  # growth stops at the upper bound
    assert adapt_learning_rate(1.2e-5, 1.0, cfg) == 1e-5  # shrinking stops at the lower bound


def _filled_storage(policy: ActorCritic, num_steps: int, num_envs: int, mean_offset: float) -> RolloutStorage:
    """A rollout of random observations with actions, log-probs and values from `policy` itself.

    `mean_offset` is added to the stored (old) mean, so the first minibatch's KL is exactly 0 when it is 0.
    """
    gen = torch.Generator().manual_seed(1)
    storage = RolloutStorage(num_steps, num_envs, obs_dim=3, critic_obs_dim=3, action_dim=1, device="cpu")
    with torch.no_grad():
        for t in range(num_steps):
            obs = torch.randn(num_envs, 3, generator=gen)
            action, distribution = policy.act(obs)
            value = policy.value(obs)
            storage.add(
                obs=obs,
                critic_obs=obs,
                actions=action,
                log_probs=distribution.log_prob(action),
                values=value,
                next_values=value + 0.1,
                distribution={"mean": distribution.mean + mean_offset, "std": distribution.std},
                rewards=torch.randn(num_envs, generator=gen),
                terminated=torch.zeros(num_envs, dtype=torch.bool),
                dones=torch.full((num_envs,), t == 1),
            )
    return storage


def _policy() -> ActorCritic:
    torch.manual_seed(0)
    cfg = PolicyConfig(actor_hidden=(16,), critic_hidden=(16,))
    return ActorCritic(3, torch.tensor([-2.0]), torch.tensor([2.0]), cfg)


def test_ppo_update_changes_parameters_and_returns_finite_metrics() -> None:
    policy = _policy()
    cfg = PPOConfig(num_steps=4, num_epochs=2, num_minibatches=2, learning_rate=1e-3)
    algorithm = PPO(policy, cfg)
    storage = _filled_storage(policy, num_steps=4, num_envs=8, mean_offset=0.0)
    before = {name: p.detach().clone() for name, p in policy.named_parameters()}
    metrics = algorithm.update(storage)
    assert set(metrics) == {"policy_loss", "value_loss", "entropy", "kl", "learning_rate"}
    assert all(math.isfinite(v) for v in metrics.values())
    for name, p in policy.named_parameters():
        assert not torch.equal(before[name], p.detach()), f"{name} did not change"
    # Entropy of a 1-D Gaussian with std exp(0) = 1 at init: 0.5 * log(2 pi e) = 1.4189; it moves only a little.
    assert metrics["entropy"] == pytest.approx(0.5 * math.log(2 * math.pi * math.e), abs=0.05)
    # The first minibatch sees the rollout's own policy (KL 0 < 0.005), so the adaptive LR grows.
    assert metrics["learning_rate"] > cfg.learning_rate
    assert all(group["lr"] == algorithm.learning_rate for group in algorithm.optimizer.param_groups)


def test_ppo_adaptive_lr_shrinks_when_kl_overshoots() -> None:
    policy = _policy()
    cfg = PPOConfig(num_steps=4, num_epochs=2, num_minibatches=2, learning_rate=1e-3, desired_kl=0.01)
    algorithm = PPO(policy, cfg)
    # Old means one std away from the current ones: KL = 1^2 / 2 = 0.5 > 0.02 on each of the 4 minibatches.
    metrics = algorithm.update(_filled_storage(policy, num_steps=4, num_envs=8, mean_offset=1.0))
    assert metrics["kl"] == pytest.approx(0.5, abs=0.05)
    assert metrics["learning_rate"] == pytest.approx(1e-3 / 1.5**4)
    assert algorithm.optimizer.param_groups[0]["lr"] == pytest.approx(1e-3 / 1.5**4)


def test_ppo_fixed_schedule_keeps_lr() -> None:
    policy = _policy()
    algorithm = PPO(policy, PPOConfig(num_steps=4, num_epochs=1, num_minibatches=2, schedule="fixed"))
    metrics = algorithm.update(_filled_storage(policy, num_steps=4, num_envs=8, mean_offset=1.0))
    assert metrics["learning_rate"] == 1e-3
    assert algorithm.optimizer.param_groups[0]["lr"] == 1e-3


def test_ppo_state_dict_round_trip_restores_lr_into_optimizer() -> None:
    policy = _policy()
    algorithm = PPO(policy, PPOConfig(num_steps=4, num_epochs=1, num_minibatches=2))
    algorithm.update(_filled_storage(policy, num_steps=4, num_envs=8, mean_offset=1.0))
    fresh = PPO(policy, PPOConfig(num_steps=4, num_epochs=1, num_minibatches=2))
    fresh.load_state_dict(algorithm.state_dict())
    assert fresh.learning_rate == algorithm.learning_rate != 1e-3
    assert fresh.optimizer.param_groups[0]["lr"] == algorithm.learning_rate


def test_the_gaussian_kl_is_the_closed_form_of_torch_distributions() -> None:
    gen = torch.Generator().manual_seed(3)
    mean0, mean1 = torch.randn(50, 4, generator=gen), torch.randn(50, 4, generator=gen)
    std0, std1 = torch.rand(50, 4, generator=gen) + 0.1, torch.rand(50, 4, generator=gen) + 0.1
    expected = kl_divergence(Normal(mean0, std0), Normal(mean1, std1)).sum(-1)
    old = DiagonalGaussian.from_params(DiagonalGaussian(mean0, std0).params())
    torch.testing.assert_close(old.kl(DiagonalGaussian(mean1, std1)), expected)


def test_ppo_kl_and_adaptive_learning_rate_follow_the_closed_form_kl() -> None:
    """One minibatch, one epoch: the update's KL is KL(stored ‖ current) before its step, by torch.distributions,
    and the learning rate follows it (the old distribution here is far off: the rate shrinks once)."""
    policy = _policy()
    storage = _filled_storage(policy, num_steps=4, num_envs=8, mean_offset=0.3)
    gen = torch.Generator().manual_seed(4)
    storage.distribution["std"].mul_(torch.rand(storage.distribution["std"].shape, generator=gen) + 0.5)
    obs = storage.obs.flatten(0, 1)
    with torch.no_grad():
        mean, std = policy.mean_and_std(obs)
    old = Normal(storage.distribution["mean"].flatten(0, 1), storage.distribution["std"].flatten(0, 1))
    expected = kl_divergence(old, Normal(mean, std)).sum(-1).mean().item()
    cfg = PPOConfig(num_steps=4, num_epochs=1, num_minibatches=1, learning_rate=1e-3, desired_kl=0.01)
    metrics = PPO(policy, cfg).update(storage)
    assert metrics["kl"] == pytest.approx(expected, rel=1e-5)
    assert expected > 2 * cfg.desired_kl and metrics["learning_rate"] == pytest.approx(1e-3 / 1.5)
