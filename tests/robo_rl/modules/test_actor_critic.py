"""ActorCritic and DeterministicActor: action bounds and scaling, log-probs, log-std modes, asymmetric critic."""

from __future__ import annotations

import math

import pytest
import torch
from torch import nn

from robo_rl.modules.actor_critic import ActionScaler, ActorCritic, PolicyConfig
from robo_rl.modules.normalizer import EmpiricalNormalizer

# Asymmetric bounds so that a wrong center or half range shows: center [0, 2.5], half range [2, 2.5].
LOW = torch.tensor([-2.0, 0.0])
HIGH = torch.tensor([2.0, 5.0])
SMALL = PolicyConfig(actor_hidden=(16, 16), critic_hidden=(16,))


def _policy(cfg: PolicyConfig = SMALL, critic_obs_dim: int | None = None) -> ActorCritic:
    torch.manual_seed(0)
    return ActorCritic(3, LOW, HIGH, cfg, critic_obs_dim=critic_obs_dim)


def _amplify_actor_output(policy: ActorCritic, factor: float) -> None:
    """Scale the actor's output layer so that its means leave [-1, 1] for ordinary inputs."""
    last = policy.actor[-1]
    assert isinstance(last, nn.Linear)
    with torch.no_grad():
        last.weight.mul_(factor)


def test_action_scaler_maps_unit_box_onto_bounds() -> None:
    scaler = ActionScaler(LOW, HIGH)
    normalized = torch.tensor([[-1.0, -1.0], [1.0, 1.0], [0.0, 0.0], [0.5, -0.2], [7.0, -3.0]])
    # low + (x + 1) / 2 * (high - low): [0.5, -0.2] -> [1.0, 2.0]; [7, -3] is clipped first -> [2, 0]
    expected = torch.tensor([[-2.0, 0.0], [2.0, 5.0], [0.0, 2.5], [1.0, 2.0], [2.0, 0.0]])
    torch.testing.assert_close(scaler(normalized), expected)


def test_deterministic_actor_stays_within_bounds_for_extreme_obs() -> None:
    policy = _policy()
    _amplify_actor_output(policy, 1e4)
    actor = policy.deterministic_actor()
    obs = torch.tensor(
        [[1e6, -1e6, 1e6], [-1e6, 1e6, -1e6], [1e30, 0.0, -1e30], [math.inf, -math.inf, 0.0], [3.0, -7.0, 100.0]]
    )
    with torch.no_grad():
        action = actor(obs)
    assert action.shape == (5, 2)
    assert torch.isfinite(action).all()
    assert (action >= LOW).all() and (action <= HIGH).all()
    # With the amplified output layer at least one extreme observation saturates at a bound.
    assert ((action == LOW) | (action == HIGH)).any()


def test_deterministic_actor_equals_scaled_clamped_mean() -> None:
    policy = _policy()
    _amplify_actor_output(policy, 300.0)
    with torch.no_grad():
        policy.obs_normalizer.update(torch.randn(64, 3) * torch.tensor([1.0, 2.0, 5.0]) + 1.0)
        obs = torch.randn(50, 3) * 4.0
        mean, _ = policy.mean_and_std(obs)
        action = policy.deterministic_actor()(obs)
    clamped = mean.clamp(-1.0, 1.0)
    assert (mean.abs() > 1.0).any() and (mean.abs() < 1.0).any()  # both branches of the clip are exercised
    torch.testing.assert_close(action, LOW + (clamped + 1.0) / 2.0 * (HIGH - LOW))


def test_deterministic_actor_shares_parameters_and_statistics() -> None:
    policy = _policy()
    actor = policy.deterministic_actor()
    assert actor.normalizer is policy.obs_normalizer
    obs = torch.randn(4, 3)
    with torch.no_grad():
        before = actor(obs)
        policy.obs_normalizer.update(torch.randn(32, 3) * 10.0 + 5.0)
        _amplify_actor_output(policy, 50.0)
        after = actor(obs)
    assert not torch.equal(before, after)


def test_act_log_prob_equals_the_evaluated_distribution_and_the_gaussian_formula() -> None:
    policy = _policy(PolicyConfig(actor_hidden=(16,), critic_hidden=(16,), init_log_std=-0.5))
    obs = torch.randn(10, 3)
    with torch.no_grad():
        action, sampled = policy.act(obs)
        evaluated = policy.distribution(obs, action)
    log_prob, entropy, mean, std = sampled.log_prob(action), evaluated.entropy(), sampled.mean, sampled.std
    torch.testing.assert_close(log_prob, evaluated.log_prob(action))
    torch.testing.assert_close(mean, evaluated.mean)
    torch.testing.assert_close(std, evaluated.std)
    torch.testing.assert_close(std, torch.full((10, 2), math.exp(-0.5)))
    # log N(a; m, s) = -((a - m) / s)^2 / 2 - log s - log(2 pi) / 2, summed over the 2 actions
    by_hand = (-0.5 * ((action - mean) / std) ** 2 - torch.log(std) - 0.5 * math.log(2 * math.pi)).sum(-1)
    torch.testing.assert_close(log_prob, by_hand)
    # entropy of N(m, s) = log s + log(2 pi e) / 2 per action
    torch.testing.assert_close(entropy, torch.full((10,), 2 * (-0.5 + 0.5 * math.log(2 * math.pi * math.e))))


def test_log_std_is_clamped() -> None:
    policy = _policy(PolicyConfig(actor_hidden=(8,), critic_hidden=(8,), min_log_std=-3.0, max_log_std=1.0))
    with torch.no_grad():
        policy.log_std.copy_(torch.tensor([-10.0, 10.0]))
        _, std = policy.mean_and_std(torch.zeros(2, 3))
    torch.testing.assert_close(std, torch.tensor([[math.exp(-3.0), math.exp(1.0)]] * 2))


def test_state_dependent_log_std() -> None:
    cfg = PolicyConfig(actor_hidden=(16,), critic_hidden=(16,), log_std="state_dependent", init_log_std=-1.0)
    policy = _policy(cfg)
    assert "log_std" not in dict(policy.named_parameters())
    last = policy.actor[-1]
    assert isinstance(last, nn.Linear) and last.out_features == 4  # mean and log-std for 2 actions
    torch.testing.assert_close(last.bias.detach(), torch.tensor([0.0, 0.0, -1.0, -1.0]))
    with torch.no_grad():
        last.weight.mul_(100.0)  # make the log-std visibly depend on the state
        obs = torch.randn(6, 3)
        raw = policy.actor(policy.obs_normalizer(obs))
        mean, std = policy.mean_and_std(obs)
        action, sampled = policy.act(obs)
        log_prob, eval_log_prob = sampled.log_prob(action), policy.distribution(obs, action).log_prob(action)
    torch.testing.assert_close(mean, raw[:, :2])
    torch.testing.assert_close(std, raw[:, 2:].clamp(cfg.min_log_std, cfg.max_log_std).exp())
    assert std.std(dim=0).min() > 0  # differs between states
    torch.testing.assert_close(log_prob, eval_log_prob)
    # The deployed actor ignores the log-std half of the head.
    with torch.no_grad():
        deployed = policy.deterministic_actor()(obs)
    torch.testing.assert_close(deployed, LOW + (mean.clamp(-1, 1) + 1) / 2 * (HIGH - LOW))


def test_critic_with_larger_critic_obs_dim() -> None:
    policy = _policy(critic_obs_dim=5)
    first = policy.critic[0]
    assert isinstance(first, nn.Linear) and first.in_features == 5
    assert isinstance(policy.critic_normalizer, EmpiricalNormalizer)
    assert policy.critic_normalizer.mean.shape == (5,)
    obs, critic_obs = torch.randn(7, 3), torch.randn(7, 5) * 3.0 + 1.0
    policy.update_normalizers(obs, critic_obs)
    torch.testing.assert_close(policy.critic_normalizer.mean, critic_obs.mean(0))
    torch.testing.assert_close(policy.obs_normalizer.mean, obs.mean(0))
    with torch.no_grad():
        values = policy.value(critic_obs)
    assert values.shape == (7,)
    with pytest.raises(RuntimeError):
        policy.value(obs)  # the actor's observation alone is not a valid critic input


def test_normalize_obs_off_uses_identity() -> None:
    policy = _policy(PolicyConfig(actor_hidden=(8,), critic_hidden=(8,), normalize_obs=False))
    assert isinstance(policy.obs_normalizer, nn.Identity)
    policy.update_normalizers(torch.randn(4, 3), torch.randn(4, 3))  # a no-op, not an error
    assert not any(isinstance(m, EmpiricalNormalizer) for m in policy.modules())
