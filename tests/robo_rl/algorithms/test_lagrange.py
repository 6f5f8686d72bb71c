"""The Lagrange multiplier (issue 54, item 2) on hand-worked updates, with OmniSafe's rule (omnisafe/common/lagrange.py:
a step on -lambda (J_c - d), clamped to [0, upper bound]) and its PPOLag advantage (A_r - lambda A_c) / (1 + lambda)."""

from __future__ import annotations

import pytest
import torch

from robo_rl.algorithms.lagrange import LagrangeConfig, LagrangeMultiplier


def test_plain_ascent_raises_lambda_by_the_violation_and_clamps_at_zero() -> None:
    lagrange = LagrangeMultiplier(
        LagrangeConfig(cost_budget=25.0, init_multiplier=0.5, learning_rate=0.1, optimizer="sgd")
    )
    assert lagrange.update(30.0) == pytest.approx(0.5 + 0.1 * (30.0 - 25.0))  # 1.0: over budget, price up
    assert lagrange.update(20.0) == pytest.approx(1.0 + 0.1 * (20.0 - 25.0))  # 0.5: under budget, price down
    assert lagrange.update(10.0) == 0.0  # 0.5 - 1.5 < 0: clamped, lambda >= 0


def test_adam_moves_by_exactly_its_learning_rate_on_the_first_step() -> None:
    """Adam's first step is lr * g / (|g| + eps) (Kingma and Ba, bias-corrected moments): +lr when J_c > d, whatever
    the size of the violation; OmniSafe's PPOLag defaults: lambda 0.001, lr 0.035."""
    for cost in (25.5, 300.0):
        lagrange = LagrangeMultiplier(LagrangeConfig(cost_budget=25.0))
        assert lagrange.update(cost) == pytest.approx(0.001 + 0.035, abs=1e-6)


def test_the_upper_bound_holds_and_the_advantages_are_priced() -> None:
    config = LagrangeConfig(init_multiplier=1.0, learning_rate=10.0, optimizer="sgd", upper_bound=2.0)
    lagrange = LagrangeMultiplier(config)
    assert lagrange.update(100.0) == 2.0
    combined = lagrange.combine(torch.tensor([1.0, 3.0]), torch.tensor([2.0, 0.0]))
    torch.testing.assert_close(combined, torch.tensor([(1.0 - 4.0) / 3.0, 3.0 / 3.0]))


def test_the_multiplier_resumes_where_it_stopped() -> None:
    first = LagrangeMultiplier(LagrangeConfig())
    for cost in (40.0, 35.0, 30.0):
        first.update(cost)
    second = LagrangeMultiplier(LagrangeConfig())
    second.load_state_dict(first.state_dict())
    assert second.update(28.0) == pytest.approx(first.update(28.0))


def test_bad_settings_are_refused() -> None:
    with pytest.raises(ValueError, match="learning_rate > 0"):
        LagrangeConfig(learning_rate=0.0)
    with pytest.raises(ValueError, match="upper_bound"):
        LagrangeConfig(init_multiplier=1.0, upper_bound=0.5)
