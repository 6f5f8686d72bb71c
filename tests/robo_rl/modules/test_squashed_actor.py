"""SquashedGaussianActor.log_prob agrees with the log-probability of its own samples (what BC maximizes)."""

from __future__ import annotations

import torch

from robo_rl.modules.squashed_actor import SquashedGaussianActor


def test_log_prob_of_sampled_actions_matches_sample() -> None:
    torch.manual_seed(0)
    actor = SquashedGaussianActor(5, -2 * torch.ones(3), 2 * torch.ones(3), hidden=(16,))
    obs = torch.randn(64, 5)
    action, log_prob = actor.sample(obs)
    torch.testing.assert_close(actor.log_prob(obs, action), log_prob, atol=2e-3, rtol=1e-4)


def test_log_prob_is_finite_on_the_bounds() -> None:
    torch.manual_seed(0)
    actor = SquashedGaussianActor(5, -torch.ones(2), torch.ones(2), hidden=(16,))
    obs = torch.randn(4, 5)
    edge = actor.log_prob(obs, torch.tensor([[1.0, -1.0]]).expand(4, 2))
    assert bool(torch.isfinite(edge).all())  # a demonstrator's stick at its end must not give -inf
    edge.sum().backward()
    assert all(bool(torch.isfinite(p.grad).all()) for p in actor.parameters())
