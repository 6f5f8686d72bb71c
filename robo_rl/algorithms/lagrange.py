"""The Lagrange multiplier of a constrained MDP (safe RL): the price of cost that PPO-Lagrangian and SAC-Lagrangian
put on the policy's objective, learned so that the expected episode cost meets a budget.

The method is the Lagrangian relaxation as OmniSafe (PKU-Alignment/omnisafe, `omnisafe/common/lagrange.py`, and its
PPOLag) implements it, written here from that design: the multiplier lambda >= 0 takes a gradient step on
-lambda * (J_c - d) once per iteration, J_c being the mean cost of the episodes just collected and d the budget
(Adam by default, as OmniSafe's configs; plain gradient ascent with `optimizer="sgd"`), then is clamped to
[0, upper_bound]. The policy then maximizes (A_r - lambda A_c) / (1 + lambda): the reward advantage less the priced
cost advantage, scaled so that a large lambda does not blow up the step size.

`method="pid"` is the PID Lagrangian of Stooke, Achiam and Abbeel (2020, "Responsive Safety in Reinforcement Learning
by PID Lagrangian Methods"; OmniSafe's CPPOPID uses it), written from the paper: lambda = max(0, Kp e_p + I + Kd d)
with the violation e = J_c - d, its exponential average e_p, the integral I = max(0, I + Ki e), and d the rise of the
averaged cost over `pid_delay` updates (never negative). The gradient rule is an integral controller alone: it keeps
pricing cost long after the cost fell under the budget (on the car the policy spent 1-8 of a budget of 40 while lambda
was still 0.4-0.5, and its success fell from 97 % to 39 %); the proportional term takes the price off as soon as the
cost is under the budget.
"""

from __future__ import annotations

import copy
from collections import deque
from dataclasses import dataclass
from typing import Literal, cast

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
    method: Literal["gradient", "pid"] = "gradient"
    """gradient: OmniSafe's Lagrangian (`optimizer`, `learning_rate`); pid: the PID Lagrangian (`pid_*`)."""
    pid_kp: float = 0.1
    """PID: the proportional gain on the averaged violation (OmniSafe's CPPOPID default)."""
    pid_ki: float = 0.01
    """PID: the integral gain."""
    pid_kd: float = 0.01
    """PID: the derivative gain, on the rise of the averaged cost."""
    pid_ema: float = 0.95
    """PID: the weight of the past in the exponential averages of the violation and the cost."""
    pid_delay: int = 10
    """PID: the derivative compares the averaged cost with its value this many updates before."""

    def __post_init__(self) -> None:
        if self.method not in ("gradient", "pid"):
            raise ValueError(f"LagrangeConfig.method: expected 'gradient' or 'pid', got {self.method!r}")
        if min(self.pid_kp, self.pid_ki, self.pid_kd) < 0 or not 0 <= self.pid_ema < 1 or self.pid_delay < 1:
            raise ValueError("LagrangeConfig: PID gains >= 0, 0 <= pid_ema < 1 and pid_delay >= 1")
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
        self.pid = PidState(config)

    @property
    def value(self) -> float:
        """lambda now."""
        return float(self.multiplier.detach())

    def update(self, mean_episode_cost: float) -> float:
        """One step on -lambda * (J_c - d) with J_c = `mean_episode_cost` (or the PID law's output), then the clamp;
        returns the new lambda."""
        if self.config.method == "pid":
            with torch.no_grad():
                self.multiplier.fill_(self.pid.update(mean_episode_cost)).clamp_(0.0, self.config.upper_bound)
            return self.value
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
        return {
            "multiplier": self.multiplier.detach().clone(),
            "optimizer": copy.deepcopy(self.optimizer.state_dict()),
            "pid": self.pid.state_dict(),
        }

    def load_state_dict(self, state: dict[str, object]) -> None:
        saved = state["multiplier"]
        assert isinstance(saved, torch.Tensor)
        with torch.no_grad():
            self.multiplier.copy_(saved)
        optimizer_state = state["optimizer"]
        assert isinstance(optimizer_state, dict)
        self.optimizer.load_state_dict(optimizer_state)
        pid = state.get("pid")  # absent from checkpoints written before the PID law
        if isinstance(pid, dict):
            self.pid.load_state_dict(pid)


class PidState:
    """The PID Lagrangian's memory: the integral, the averaged violation and cost, and the averaged costs of the last
    `pid_delay` updates."""

    def __init__(self, config: LagrangeConfig) -> None:
        self.config = config
        self.integral = 0.0
        self.violation = 0.0
        self.cost = 0.0
        self.history: deque[float] = deque([0.0], maxlen=config.pid_delay)

    def update(self, cost: float) -> float:
        """The multiplier for the episode cost `cost` (before the upper bound)."""
        c = self.config
        error = cost - c.cost_budget
        self.integral = max(0.0, self.integral + c.pid_ki * error)
        self.violation = c.pid_ema * self.violation + (1.0 - c.pid_ema) * error
        self.cost = c.pid_ema * self.cost + (1.0 - c.pid_ema) * cost
        rise = max(0.0, self.cost - self.history[0])
        self.history.append(self.cost)
        return max(0.0, c.pid_kp * self.violation + self.integral + c.pid_kd * rise)

    def state_dict(self) -> dict[str, object]:
        return {
            "integral": self.integral,
            "violation": self.violation,
            "cost": self.cost,
            "history": list(self.history),
        }

    def load_state_dict(self, state: dict[str, object]) -> None:
        numbers = {key: cast(float, state[key]) for key in ("integral", "violation", "cost")}
        self.integral, self.violation, self.cost = numbers["integral"], numbers["violation"], numbers["cost"]
        history = state["history"]
        assert isinstance(history, list)
        self.history = deque((float(value) for value in history), maxlen=self.config.pid_delay)
