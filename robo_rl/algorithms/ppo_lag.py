"""PPO-Lagrangian: PPO that keeps the expected episode cost of a task with a constraint (`info["cost"]`,
`robo_rl.cost_spec`) under a budget, by a learned price on cost (`robo_rl.algorithms.lagrange`).

The design is OmniSafe's PPOLag (PKU-Alignment/omnisafe, `omnisafe/algorithms/on_policy/naive_lagrange/ppo_lag.py`
and its buffer), written here from it: a cost critic beside the reward critic; cost advantages by GAE with the
same gamma and lambda; before each update the multiplier takes its step on the expected episode cost; the policy's
advantage is (A_r - lambda A_c) / (1 + lambda), with A_r standardized and A_c centered over the rollout. The PPO
update itself is `robo_rl.algorithms.ppo.PPO`, given the priced advantages through its `shape_advantages` hook
(composition: PPO does not know about costs). Eager updates only (no captured graph).

One departure, the default (`cost_estimate="rate"`): the multiplier steps on the rollout's cost per step times the
mean episode length, not on the episodes that ended in it (`robo_rl.algorithms.episode_cost`), so that it reacts in
the first rollout; `cost_estimate="episodes"` keeps OmniSafe's.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Literal

import torch
from torch import nn

from robo_rl.algorithms.episode_cost import EpisodeCostEstimator
from robo_rl.algorithms.lagrange import LagrangeConfig, LagrangeMultiplier
from robo_rl.algorithms.ppo import PPO, PPOConfig, gae
from robo_rl.capture import CaptureBackend
from robo_rl.distributed import LOCAL, Reducer
from robo_rl.modules.actor_critic import ActorCritic
from robo_rl.modules.distributions import StochasticPolicy
from robo_rl.modules.mlp import mlp
from robo_rl.storage.rollout import RolloutStorage


@dataclass(frozen=True)
class PPOLagConfig:
    """PPO's settings, the budget and the multiplier's (`lagrange`), and the cost critic."""

    ppo: PPOConfig = field(default_factory=PPOConfig)
    lagrange: LagrangeConfig = field(default_factory=LagrangeConfig)
    """`lagrange.cost_budget`: the expected cost per episode the policy may spend."""
    cost_critic_hidden: tuple[int, ...] = (64, 64)
    """Hidden layers of the cost critic (ELU), fed the critic's normalized observation."""
    cost_critic_learning_rate: float = 1e-3
    cost_estimate: Literal["rate", "episodes"] = "rate"
    """What the multiplier steps on. rate: the rollout's mean cost per step times the mean episode length (the
    lengths of the episodes that ended so far, starting from the task's time limit), which reacts from the first
    rollout; episodes: OmniSafe's, the mean cost of the episodes that ended in the rollout (no step until one does)."""

    def __post_init__(self) -> None:
        if not self.cost_critic_learning_rate > 0:
            raise ValueError("PPOLagConfig.cost_critic_learning_rate must be positive")
        if self.cost_estimate not in ("rate", "episodes"):
            raise ValueError(f"PPOLagConfig.cost_estimate: expected 'rate' or 'episodes', got {self.cost_estimate!r}")


class PPOLag:
    """PPO-Lagrangian on a policy with a reward critic (`robo_rl.modules.actor_critic.ActorCritic`); an
    `robo_rl.algorithms.on_policy_update.OnPolicyUpdate`."""

    policy: ActorCritic
    reducer: Reducer
    ppo: PPO
    cost_critic: nn.Sequential
    cost_optimizer: torch.optim.Adam
    _cost_returns: torch.Tensor | None
    lagrange: LagrangeMultiplier
    estimator: EpisodeCostEstimator
    last_episode_cost: float
    priced_cost: float

    def __init__(
        self, policy: StochasticPolicy, cfg: PPOLagConfig, *, time_limit: int, reducer: Reducer = LOCAL
    ) -> None:
        """`time_limit`: the task's episode length in steps (`max_episode_steps`), where the rate estimate starts."""
        self.cfg = cfg
        if not isinstance(policy, ActorCritic):
            raise ValueError("PPO-Lagrangian trains a policy without memory (policy.memory none)")
        self.policy = policy
        self.reducer = reducer
        self.estimator = EpisodeCostEstimator(time_limit, reducer)
        self.ppo = PPO(policy, cfg.ppo, reducer=reducer, shape_advantages=self._price_costs)
        device = next(iter(policy.parameters())).device
        self.cost_critic = mlp(policy.critic_obs_dim, cfg.cost_critic_hidden, 1, "elu").to(device)
        self.cost_optimizer = torch.optim.Adam(self.cost_critic.parameters(), lr=cfg.cost_critic_learning_rate)
        self.lagrange = LagrangeMultiplier(cfg.lagrange, device)
        self.last_episode_cost = math.nan
        """The mean cost of the episodes that ended in the last rollout (NaN where none did)."""
        self.priced_cost = math.nan
        """J_c, the episode cost the multiplier last stepped on (`cfg.cost_estimate`)."""
        self._cost_returns: torch.Tensor | None = None

    @property
    def num_steps(self) -> int:
        return self.cfg.ppo.num_steps

    def update(self, storage: RolloutStorage) -> dict[str, float]:
        """The multiplier's step on the rollout's episode cost, PPO on the priced advantages, the cost critic's fit."""
        self.estimator.add(storage.costs, storage.dones)
        estimate = self.estimator.take()
        self.last_episode_cost = estimate.ended_mean
        cost = estimate.rate_estimate if self.cfg.cost_estimate == "rate" else estimate.ended_mean
        if cost is not None and not math.isnan(cost):
            self.priced_cost = cost
            self.lagrange.update(cost)
        metrics = {key: float(value) for key, value in self.ppo.update(storage).items()}
        metrics["cost_value_loss"] = self._fit_cost_critic(storage)
        metrics["lagrange_multiplier"] = self.lagrange.value
        metrics["rollout_episode_cost"] = self.last_episode_cost
        metrics["priced_episode_cost"] = self.priced_cost
        metrics["mean_episode_length"] = estimate.mean_length
        return metrics

    def captured_update(self, storage: RolloutStorage, backend: CaptureBackend = "eager") -> Any:
        raise ValueError("PPO-Lagrangian runs eager updates only: train without runner.capture")

    def _cost_values(self, critic_obs: torch.Tensor) -> torch.Tensor:
        normalizer: nn.Module = self.policy.critic_normalizer
        return self.cost_critic(normalizer(critic_obs)).squeeze(-1)

    @torch.no_grad()
    def _price_costs(self, storage: RolloutStorage) -> None:
        """After PPO's GAE: cost advantages by GAE (bootstrapping time-outs from the final observation, the rollout's
        end from the observation after it), then `storage.advantages` = (A_r - lambda A_c) / (1 + lambda), A_r
        standardized and A_c centered over the rollout. PPO's value targets (`storage.returns`) stay as they were."""
        steps, envs = storage.num_steps, storage.num_envs
        values = self._cost_values(storage.critic_obs.flatten(0, 1)).reshape(steps, envs)
        final = self._cost_values(storage.final_critic_obs.flatten(0, 1)).reshape(steps, envs)
        following = torch.cat([values[1:], self._cost_values(storage.last_critic_obs).unsqueeze(0)])
        next_values = torch.where(storage.dones, final, following)
        ppo = self.cfg.ppo
        cost_advantages, self._cost_returns = gae(
            storage.costs, values, next_values, storage.terminated, storage.dones, ppo.gamma, ppo.lam
        )
        rewards = storage.advantages
        rewards = (rewards - rewards.mean()) / (rewards.std() + 1e-8)
        storage.advantages = self.lagrange.combine(rewards, cost_advantages - cost_advantages.mean())

    def _fit_cost_critic(self, storage: RolloutStorage) -> float:
        """`num_epochs` passes of `num_minibatches` minibatches of MSE to the cost returns; the mean loss."""
        assert self._cost_returns is not None, "the cost returns are computed by the PPO update first"
        ppo = self.cfg.ppo
        obs = storage.critic_obs.flatten(0, 1)
        targets = self._cost_returns.flatten()
        size = max(1, len(targets) // ppo.num_minibatches)
        losses = []
        for _ in range(ppo.num_epochs):
            order = torch.randperm(len(targets), device=targets.device)
            for start in range(0, size * ppo.num_minibatches, size):
                rows = order[start : start + size]
                loss = (self._cost_values(obs[rows]) - targets[rows]).square().mean()
                self.cost_optimizer.zero_grad(set_to_none=True)
                loss.backward()
                self.reducer.gradients(self.cost_critic.parameters())
                nn.utils.clip_grad_norm_(self.cost_critic.parameters(), ppo.max_grad_norm)
                self.cost_optimizer.step()
                losses.append(loss.detach())
        return float(torch.stack(losses).mean())

    def state_dict(self) -> dict[str, Any]:
        return {
            "ppo": self.ppo.state_dict(),
            "cost_critic": self.cost_critic.state_dict(),
            "cost_optimizer": self.cost_optimizer.state_dict(),
            "lagrange": self.lagrange.state_dict(),
            "estimator": self.estimator.state_dict(),
            "last_episode_cost": self.last_episode_cost,
            "priced_cost": self.priced_cost,
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.ppo.load_state_dict(state["ppo"])
        self.cost_critic.load_state_dict(state["cost_critic"])
        self.cost_optimizer.load_state_dict(state["cost_optimizer"])
        self.lagrange.load_state_dict(state["lagrange"])
        self.estimator.load_state_dict(state["estimator"])
        self.last_episode_cost = float(state["last_episode_cost"])
        self.priced_cost = float(state["priced_cost"])


def ppo_lag(policy: StochasticPolicy, cfg: PPOLagConfig, *, time_limit: int, reducer: Reducer = LOCAL) -> PPOLag:
    """The registry's builder (`time_limit`: the task's `max_episode_steps`; a constrained algorithm is given it)."""
    return PPOLag(policy, cfg, time_limit=time_limit, reducer=reducer)
