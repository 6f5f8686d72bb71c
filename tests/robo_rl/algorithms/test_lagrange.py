"""The Lagrange multiplier (issue 54, item 2) on hand-worked updates, with OmniSafe's rule (omnisafe/common/lagrange.py:
a step on -lambda (J_c - d), clamped to [0, upper bound]) and its PPOLag advantage (A_r - lambda A_c) / (1 + lambda)."""

from __future__ import annotations

import itertools

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


def test_the_pid_law_by_hand() -> None:
    """Stooke et al.'s PID Lagrangian, budget 10, Kp 0.1, Ki 0.01, Kd 0.01, averages weighing the past 0.95.
    J = 30: e = 20, I = 0.2, e_p = 0.05 x 20 = 1.0, averaged cost 1.5 (rise 1.5 over the start's 0):
    lambda = 0.1 + 0.2 + 0.015 = 0.315. Then J = 0: e = -10, I = 0.1, e_p = 0.95 - 0.5 = 0.45, averaged cost 1.425
    (rise 1.425 over the oldest kept, 0): lambda = 0.045 + 0.1 + 0.01425 = 0.15925: the price falls at once."""
    lagrange = LagrangeMultiplier(LagrangeConfig(cost_budget=10.0, method="pid"))
    assert lagrange.update(30.0) == pytest.approx(0.315)
    assert lagrange.update(0.0) == pytest.approx(0.15925)
    resumed = LagrangeMultiplier(LagrangeConfig(cost_budget=10.0, method="pid"))
    resumed.load_state_dict(lagrange.state_dict())
    assert resumed.update(5.0) == pytest.approx(lagrange.update(5.0))


def test_under_the_budget_the_pid_price_falls_at_once_where_the_gradient_price_keeps_rising() -> None:
    """Ten updates far over the budget, then twenty at a tenth of it: from the first update under the budget the PID
    price falls at every update; the gradient rule's (Adam, OmniSafe's rate) keeps rising for several more on its
    momentum: the overshoot the PID law is for (Stooke et al. 2020, Figure 1)."""
    pid = LagrangeMultiplier(LagrangeConfig(cost_budget=40.0, method="pid"))
    gradient = LagrangeMultiplier(LagrangeConfig(cost_budget=40.0))
    for _ in range(10):
        pid.update(400.0)
        gradient.update(400.0)
    pid_prices = [pid.update(4.0) for _ in range(20)]
    gradient_prices = [gradient.update(4.0) for _ in range(20)]
    assert all(later < earlier for earlier, later in itertools.pairwise(pid_prices))
    assert gradient_prices[5] > gradient_prices[0]
