"""ReinFlow's noisy flow chain (robo_rl.modules.reinflow): its log-probability is exact (checked by Monte Carlo), the
noise stays within its bounds, K = 1 is a Gaussian policy, the noise-free chain is the exported flow sampler, and
PPO's update runs on it unchanged."""

from __future__ import annotations

import copy
import math
from pathlib import Path

import numpy as np
import pytest
import torch
from torch.distributions import Normal, kl_divergence

from robo_rl.algorithms.ppo import PPO, PPOConfig
from robo_rl.export.onnx import onnx_parity
from robo_rl.modules.flow import FlowPolicy
from robo_rl.modules.reinflow import GaussianChain, ReinFlowConfig, ReinFlowPolicy
from robo_rl.storage.rollout import RolloutStorage

OBS_DIM = 3


def _policy(action_dim: int, cfg: ReinFlowConfig, seed: int = 0) -> ReinFlowPolicy:
    torch.manual_seed(seed)
    low, high = -2 * torch.ones(action_dim), 2 * torch.ones(action_dim)
    flow = FlowPolicy(OBS_DIM, low, high, hidden=(32, 32), steps=10, noise_seed=seed)
    with torch.no_grad():  # a non-trivial velocity field, as after cloning (the last layer starts near zero)
        for layer in flow.net:
            if isinstance(layer, torch.nn.Linear):
                layer.weight.normal_(0, 0.6)
    policy = ReinFlowPolicy(flow, OBS_DIM, cfg)
    with torch.no_grad():  # a state- and point-dependent noise std, not the constant it starts with
        policy.noise.net[-1].weight.normal_(0, 1.0)
    return policy


def test_k1_is_a_gaussian_policy_around_the_flow_step() -> None:
    policy = _policy(2, ReinFlowConfig(steps=1))
    obs = torch.randn(64, OBS_DIM)
    chain, distribution = policy.act(obs)
    log_prob = distribution.log_prob(chain)
    x0 = policy.flow.fixed_noise.expand(64, -1)
    assert distribution.mean.shape == distribution.std.shape == (64, 1, 2)  # K = 1 transition of 2 actions
    expected_mean = x0 + policy.flow.velocity(obs, x0, torch.zeros(64, 1))
    expected_std = policy.noise(policy.flow.obs_normalizer(obs), x0, torch.zeros(64, 1))
    assert torch.allclose(chain[:, :2], x0) and torch.allclose(distribution.mean[:, 0], expected_mean, atol=1e-6)
    assert torch.allclose(distribution.std[:, 0], expected_std, atol=1e-6)
    expected = Normal(expected_mean, expected_std).log_prob(chain[:, 2:]).sum(-1)
    assert torch.allclose(log_prob, expected, atol=1e-5)
    # the distribution of x_1 for one observation is that Gaussian (Monte Carlo over 20k draws)
    one = obs[:1].expand(20_000, -1)
    draws = policy.act(one)[0][:, 2:]
    assert torch.allclose(draws.mean(0), expected_mean[0], atol=0.01)
    assert torch.allclose(draws.std(0), expected_std[0], rtol=0.03)


def test_the_evaluated_distribution_reproduces_the_sampling_one() -> None:
    policy = _policy(2, ReinFlowConfig(steps=4, start="random"))
    obs = torch.randn(128, OBS_DIM)
    chain, sampled = policy.act(obs)
    evaluated = policy.distribution(obs, chain)
    assert torch.allclose(evaluated.log_prob(chain), sampled.log_prob(chain), atol=1e-4)
    assert torch.allclose(sampled.mean, evaluated.mean, atol=1e-6)
    assert torch.allclose(sampled.std, evaluated.std, atol=1e-6)
    assert torch.allclose(sampled.kl(evaluated), torch.zeros(128), atol=1e-6)


def test_the_chain_kl_is_the_sum_of_the_transitions_kl() -> None:
    """KL between two chain policies along one chain: the closed-form Gaussian KL of every transition (computed here
    with torch.distributions), summed; the stored parameters rebuild the old distribution."""
    policy = _policy(2, ReinFlowConfig(steps=3))
    other = copy.deepcopy(policy)
    with torch.no_grad():
        for parameter in other.actor_parameters():
            parameter.add_(0.05 * torch.randn_like(parameter))
        obs = torch.randn(32, OBS_DIM)
        chain, old = policy.act(obs)
        new = other.distribution(obs, chain)
    expected = kl_divergence(Normal(old.mean, old.std), Normal(new.mean, new.std)).sum((1, 2))
    rebuilt = GaussianChain.from_params(old.params())
    torch.testing.assert_close(rebuilt.kl(new), expected)
    assert expected.min() > 0


def test_the_chain_log_probability_is_exact_by_monte_carlo() -> None:
    """Two checks of the density, not of the code that computes it twice:
    - the final point's distribution, E over x_{K-1} of N(mean, std), gives a histogram of 400k sampled chains;
    - importance weights exp(log q − log p) of another policy q on p's chains average to 1 (they do only if both
      log-probabilities are the true densities of the sampling process, start point included)."""
    cfg = ReinFlowConfig(steps=2, start="random", max_noise_std=0.3)
    policy = _policy(1, cfg)
    obs = torch.randn(1, OBS_DIM).expand(400_000, -1)
    with torch.no_grad():
        chain, distribution = policy.act(obs)
        log_prob = distribution.log_prob(chain)
    end, last = chain[:, -1].numpy(), Normal(distribution.mean[:, -1, -1], distribution.std[:, -1, -1])
    counts, edges = np.histogram(end, bins=60)
    sampled = counts / len(end)
    # each bin's probability from the chain's last transition density, averaged over the sampled x_{K-1}
    cdf = np.stack([last.cdf(torch.tensor(edge)).mean().item() for edge in edges])
    exact = np.diff(cdf)
    dense = counts > 4000  # bins with enough draws for a ~1.5 % estimate
    assert dense.sum() >= 10
    assert np.allclose(sampled[dense], exact[dense], rtol=0.05)
    other = copy.deepcopy(policy)  # a nearby policy, so that the weights have a finite variance
    with torch.no_grad():
        for parameter in other.actor_parameters():
            parameter.add_(0.003 * torch.randn_like(parameter))
    with torch.no_grad():
        other_log_prob = other.distribution(obs, chain).log_prob(chain)
    weights = torch.exp(other_log_prob - log_prob)
    assert weights.mean().item() == pytest.approx(1.0, abs=0.01)
    assert weights.std().item() > 0.05  # the two policies really differ


def test_the_noise_std_stays_within_its_bounds() -> None:
    cfg = ReinFlowConfig(steps=3, min_noise_std=0.02, init_noise_std=0.1, max_noise_std=0.25)
    policy = _policy(2, cfg)
    fresh = ReinFlowPolicy(policy.flow, OBS_DIM, cfg)
    features, x, t = torch.randn(5, OBS_DIM), torch.randn(5, 2), torch.rand(5, 1)
    assert torch.allclose(fresh.noise(features, x, t), torch.full((5, 2), 0.1), atol=1e-5)
    for scale in (1e-3, 1.0, 1e3, 1e6):
        extreme = (torch.randn(256, OBS_DIM) * scale, torch.randn(256, 2) * scale, torch.rand(256, 1))
        std = policy.noise(*extreme)
        assert torch.all(std >= 0.02) and torch.all(std <= 0.25)
    assert policy.noise(*extreme).std() > 0  # it does depend on its inputs
    with pytest.raises(ValueError, match="min_noise_std"):
        ReinFlowConfig(min_noise_std=0.0)


def test_the_noise_free_chain_is_the_exported_flow_sampler(tmp_path: Path) -> None:
    policy = _policy(2, ReinFlowConfig(steps=4))
    obs = torch.randn(32, OBS_DIM)
    features, x = policy.flow.obs_normalizer(obs), policy.flow.fixed_noise.expand(32, -1)
    for k in range(4):
        x = policy.transition(features, x, torch.full((32, 1), k / 4))[0]
    actor = policy.deterministic_actor()
    assert torch.allclose(actor(obs), policy.scaler(torch.cat([x] * 5, -1)), atol=1e-5)
    from robo_rl.export.onnx import PolicyMetadata, export_onnx
    from robo_rl.spaces import SpaceSpec

    spec = SpaceSpec.unnamed("obs", OBS_DIM)
    act = SpaceSpec(("a", "b"), (-2.0, -2.0), (2.0, 2.0), ("", ""))
    path = export_onnx(actor, PolicyMetadata(spec, act, 0.1, "test", "h", "g"), tmp_path / "policy.onnx")
    assert onnx_parity(actor, path, obs) < 1e-5


def test_ppo_updates_the_chain_policy_with_a_ratio_of_one_before_its_first_step() -> None:
    policy = _policy(2, ReinFlowConfig(steps=2, warmup_iterations=0))
    ppo = PPO(policy, PPOConfig(num_steps=8, num_epochs=2, num_minibatches=2, learning_rate=1e-3))
    storage = RolloutStorage(8, 16, OBS_DIM, OBS_DIM, policy.action_dim, "cpu")
    with torch.no_grad():
        for _ in range(8):
            obs = torch.randn(16, OBS_DIM)
            chain, distribution = policy.act(obs)
            reward = -policy.scaler(chain).square().sum(-1)  # prefer actions near zero
            zeros = torch.zeros(16, dtype=torch.bool)
            storage.add(
                obs=obs,
                critic_obs=obs,
                actions=chain,
                log_probs=distribution.log_prob(chain),
                values=policy.value(obs),
                next_values=torch.zeros(16),
                distribution=distribution.params(),
                rewards=reward,
                terminated=zeros,
                dones=zeros,
            )
    chains = storage.actions.flatten(0, 1)
    ratio = torch.exp(
        policy.distribution(storage.obs.flatten(0, 1), chains).log_prob(chains) - storage.log_probs.flatten()
    )
    assert torch.allclose(ratio, torch.ones_like(ratio), atol=1e-4)
    before = [p.detach().clone() for p in policy.actor_parameters()]
    metrics = ppo.update(storage)
    assert math.isfinite(metrics["kl"]) and metrics["kl"] >= 0
    assert any(not torch.equal(b, p) for b, p in zip(before, policy.actor_parameters(), strict=True))
    policy.freeze_actor(True)
    frozen = [p.detach().clone() for p in policy.actor_parameters()]
    ppo.update(storage)
    assert all(torch.equal(b, p) for b, p in zip(frozen, policy.actor_parameters(), strict=True))


def test_the_actor_stays_frozen_for_its_warm_up_and_a_restored_policy_knows_where_it_was() -> None:
    policy = _policy(2, ReinFlowConfig(steps=2, warmup_iterations=2))
    assert not any(p.requires_grad for p in policy.actor_parameters())
    assert all(p.requires_grad for p in policy.critic_parameters())
    obs = torch.randn(8, OBS_DIM)
    policy.update_normalizers(obs, obs)
    assert not any(p.requires_grad for p in policy.actor_parameters())
    policy.update_normalizers(obs, obs)
    assert all(p.requires_grad for p in policy.actor_parameters())
    restored = ReinFlowPolicy(policy.flow, OBS_DIM, ReinFlowConfig(steps=2, warmup_iterations=2))
    assert not any(p.requires_grad for p in restored.actor_parameters())
    restored.load_state_dict(policy.state_dict())
    assert int(restored.updates) == 2 and all(p.requires_grad for p in restored.actor_parameters())
