"""The Lagrange multiplier of a constrained MDP (safe RL): the price of cost that PPO-Lagrangian and SAC-Lagrangian
put on the policy's objective, learned so that the expected episode cost meets a budget.

The method is the Lagrangian relaxation as OmniSafe (PKU-Alignment/omnisafe, `omnisafe/common/lagrange.py`, and its
PPOLag) implements it, written here from that design: the multiplier lambda >= 0 takes a gradient step on
-lambda * (J_c - d) once per iteration, J_c being the mean cost of the episodes just collected and d the budget
(Adam by default, as OmniSafe's configs; plain gradient ascent with `optimizer="sgd"`), then is clamped to
[0, upper_bound]. The policy then maximizes (A_r - lambda A_c) / (1 + lambda): the reward advantage less the priced
cost advantage, scaled so that a large lambda does not blow up the step size.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Literal

import torch


@dataclass(frozen=True)
class LagrangeConfig:
    """The budget and how the multiplier learns."""

    cost_budget: float = 25.0
    """d: the expected cost per episode the policy may spend (in the task's cost unit times steps)."""
    init_multiplier: float = 0.001
    """lambda at the start (OmniSafe's PPOLag default)."""
    learning_rate: float = 0.035
    """The multiplier's learning rate (OmniSafe's PPOLag default with Adam)."""
    optimizer: Literal["adam", "sgd"] = "adam"
    """adam: OmniSafe's choice (a first step of exactly `learning_rate` toward the violated side); sgd: plain ascent,
    lambda += learning_rate * (J_c - d)."""
    upper_bound: float | None = None
    """lambda is clamped to at most this; None: no upper bound."""

    def __post_init__(self) -> None:
        if not (self.cost_budget >= 0 and self.init_multiplier >= 0 and self.learning_rate > 0):
            raise ValueError("LagrangeConfig: cost_budget and init_multiplier must be >= 0, learning_rate > 0")
        if self.upper_bound is not None and not self.upper_bound >= self.init_multiplier:
            raise ValueError("LagrangeConfig.upper_bound must be at least init_multiplier")


class LagrangeMultiplier:
    """lambda, its optimizer and its update from the mean episode cost."""

    def __init__(self, config: LagrangeConfig, device: str | torch.device = "cpu") -> None:
        self.config = config
        self.multiplier = torch.nn.Parameter(torch.tensor(float(config.init_multiplier), device=device))
        optimizer = torch.optim.Adam if config.optimizer == "adam" else torch.optim.SGD
        self.optimizer = optimizer([self.multiplier], lr=config.learning_rate)

    @property
    def value(self) -> float:
        """lambda now."""
        return float(self.multiplier.detach())

    def update(self, mean_episode_cost: float) -> float:
        """One step on -lambda * (J_c - d) with J_c = `mean_episode_cost`, then the clamp; returns the new lambda."""
        self.optimizer.zero_grad()
        loss = -self.multiplier * (mean_episode_cost - self.config.cost_budget)
        loss.backward()
        self.optimizer.step()
        with torch.no_grad():
            self.multiplier.clamp_(0.0, self.config.upper_bound)
        return self.value

    def combine(self, reward_advantages: torch.Tensor, cost_advantages: torch.Tensor) -> torch.Tensor:
        """The advantages the policy maximizes: (A_r - lambda A_c) / (1 + lambda)."""
        price = self.multiplier.detach()
        return (reward_advantages - price * cost_advantages) / (1.0 + price)

    def state_dict(self) -> dict[str, object]:
        # a copy: torch's optimizer state holds live tensors that the next step changes in place
        return {"multiplier": self.multiplier.detach().clone(), "optimizer": copy.deepcopy(self.optimizer.state_dict())}

    def load_state_dict(self, state: dict[str, object]) -> None:
        saved = state["multiplier"]
        assert isinstance(saved, torch.Tensor)
        with torch.no_grad():
            self.multiplier.copy_(saved)
        optimizer_state = state["optimizer"]
        assert isinstance(optimizer_state, dict)
        self.optimizer.load_state_dict(optimizer_state)
