"""SAC-Lagrangian: soft actor-critic that keeps the expected episode cost of a task with a constraint
(`info["cost"]`, `robo_rl.cost_spec`) under a budget, by a learned price on cost (`robo_rl.algorithms.lagrange`).

The design follows OmniSafe's SACLag (PKU-Alignment/omnisafe, `omnisafe/algorithms/off_policy/sac_lag.py`), written
here from it: a cost critic beside SAC's reward critics, fitted to c + gamma (1 - terminated) Q_c(s', a') with a'
drawn from the policy (no entropy term: entropy is a reward bonus, not a cost); the actor minimizes
(alpha log pi - Q_r + lambda Q_c) / (1 + lambda). SAC itself is `robo_rl.algorithms.sac.SAC`, given the priced loss
through its `shape_actor_loss` hook (composition: SAC does not know about costs).

What the multiplier steps on differs from OmniSafe's, which waits for logged episodes: the cost per step of the env
steps collected since its last step times the mean episode length (`robo_rl.algorithms.episode_cost`, the same rate
estimate as PPO-Lagrangian's), seen through `observe` as the runner collects them. It steps once every
`lagrange_interval` actor updates, so that its learning rate means per interval what PPO-Lagrangian's means per
rollout. (An estimate from the cost critic's values, converted to an episode's cost under a constant rate, lagged
far behind on the car: 2-48 while the evaluation's cost per episode rose to 715-1375.)
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass, field
from typing import Any

import torch

from robo_rl.algorithms.capturable import adam, load_optimizer_state
from robo_rl.algorithms.episode_cost import EpisodeCostEstimator
from robo_rl.algorithms.fixed_normalizers import fit_once
from robo_rl.algorithms.lagrange import LagrangeConfig, LagrangeMultiplier
from robo_rl.algorithms.off_policy import OffPolicyAlgorithm
from robo_rl.algorithms.off_policy_targets import bootstrapped_target, ensemble_mse, polyak_update
from robo_rl.algorithms.sac import SAC, SACConfig
from robo_rl.distributed import LOCAL, Reducer, optimizer_parameters
from robo_rl.modules.freeze import frozen
from robo_rl.modules.q_ensemble import QEnsemble
from robo_rl.storage.replay import Transitions


@dataclass(frozen=True)
class SACLagConfig:
    """SAC's settings, the budget and the multiplier's (`lagrange`), and the cost critic."""

    sac: SACConfig = field(default_factory=SACConfig)
    lagrange: LagrangeConfig = field(default_factory=lambda: LagrangeConfig(learning_rate=0.01))
    """`lagrange.cost_budget`: the expected cost per episode the policy may spend. The learning rate is per
    `lagrange_interval` updates."""
    lagrange_interval: int = 100
    """Actor updates between two steps of the multiplier, each on the episode-cost estimate of the env steps
    collected meanwhile."""
    num_cost_critics: int = 2
    """Members of the cost critic ensemble; the target and the actor read their mean."""

    def __post_init__(self) -> None:
        if self.lagrange_interval < 1 or self.num_cost_critics < 1:
            raise ValueError("SACLagConfig: lagrange_interval and num_cost_critics must be at least 1")


class SACLag(OffPolicyAlgorithm):
    """SAC-Lagrangian on the replay runner; an `robo_rl.algorithms.off_policy.OffPolicyAlgorithm`."""

    def __init__(
        self,
        obs_dim: int,
        critic_obs_dim: int,
        action_low: torch.Tensor,
        action_high: torch.Tensor,
        cfg: SACLagConfig,
        device: torch.device | str = "cpu",
        reducer: Reducer = LOCAL,
        time_limit: int = 0,
    ) -> None:
        """`time_limit`: the task's episode length in steps (`max_episode_steps`), where the rate estimate's mean
        episode length starts; 0 (a policy rebuilt for deployment from recorded specs) refuses to train."""
        self.cfg = cfg
        self.reducer = reducer
        self.time_limit = time_limit
        self.estimator = EpisodeCostEstimator(max(time_limit, 1), reducer)
        bounds = (action_low, action_high)
        self.sac = SAC(
            obs_dim, critic_obs_dim, *bounds, cfg.sac, device, reducer=reducer, shape_actor_loss=self._price_cost
        )
        self.actor = self.sac.actor
        sac = cfg.sac
        self.cost_critic = QEnsemble(
            critic_obs_dim,
            int(action_low.numel()),
            sac.critic_hidden,
            cfg.num_cost_critics,
            sac.activation,
            sac.layer_norm,
            sac.normalize_obs,
        ).to(device)
        self.target_cost_critic = copy.deepcopy(self.cost_critic).requires_grad_(False)
        self.cost_optimizer = adam(self.cost_critic.parameters(), sac.critic_learning_rate)
        self.lagrange = LagrangeMultiplier(cfg.lagrange, device)
        self._actor_updates = 0
        self._num_envs: int | None = None
        self.priced_cost = math.nan
        """The episode cost the multiplier last stepped on."""

    def observe(self, transitions: Transitions) -> None:
        """The transitions of one env step of every env, in env order, as collected: their costs and episode ends go
        to the estimate (a batch of another size, a robot's step without its invalid rows, is left out)."""
        if self._num_envs is None:
            self._num_envs = len(transitions)
        if len(transitions) != self._num_envs or len(transitions) == 0:
            return
        ended = transitions.terminated | transitions.truncated
        self.estimator.add(transitions.costs.unsqueeze(0), ended.unsqueeze(0))

    def act(self, obs: Any, deterministic: bool = False) -> torch.Tensor:
        return self.sac.act(obs, deterministic)

    @property
    def needs_normalizers(self) -> bool:
        return self.sac.needs_normalizers

    @torch.no_grad()
    def fit_normalizers(self, data: Transitions) -> None:
        """SAC's normalizers and the cost critics' (with `normalize_obs`), once, to `data`."""
        self.sac.fit_normalizers(data)
        cost_critics = (self.cost_critic, self.target_cost_critic)
        fit_once([(critic.obs_normalizer, data.critic_obs) for critic in cost_critics], self.reducer)

    def capture_problem(self) -> str | None:
        return "SAC-Lagrangian's updates are not captured (its multiplier steps on the host)"

    def update(self, batch: Transitions, update_actor: bool = True) -> dict[str, torch.Tensor]:
        """SAC's update with the priced actor loss, one cost critic step, and every `lagrange_interval` actor
        updates a step of the multiplier."""
        if self.time_limit < 1:
            raise ValueError("SAC-Lagrangian trains only with the task's time limit (built from an env)")
        metrics = self.sac.update(batch, update_actor)
        metrics["cost_critic_loss"] = self._update_cost_critic(batch)
        self._actor_updates += int(update_actor)
        if update_actor and self._actor_updates % self.cfg.lagrange_interval == 0:
            estimate = self.estimator.take().rate_estimate
            if estimate is not None:
                self.priced_cost = estimate
                self.lagrange.update(estimate)
        metrics["lagrange_multiplier"] = torch.tensor(self.lagrange.value)
        metrics["priced_episode_cost"] = torch.tensor(self.priced_cost)
        return metrics

    def _cost_value(self, critic_obs: torch.Tensor, action: torch.Tensor, target: bool = False) -> torch.Tensor:
        critic = self.target_cost_critic if target else self.cost_critic
        value: torch.Tensor = critic(critic_obs, action).mean(dim=0)
        return value

    def _update_cost_critic(self, batch: Transitions) -> torch.Tensor:
        gamma = self.cfg.sac.gamma
        with torch.no_grad():
            next_action, _ = self.sac._sample(batch.next_obs, None)
            next_value = self._cost_value(batch.next_critic_obs, next_action, target=True)
            target = bootstrapped_target(batch.costs, next_value, batch.terminated, gamma)
        loss = ensemble_mse(self.cost_critic(batch.critic_obs, batch.actions), target)
        self.cost_optimizer.zero_grad(set_to_none=True)
        loss.backward()
        self.reducer.gradients(optimizer_parameters(self.cost_optimizer))
        self.cost_optimizer.step()
        polyak_update(self.target_cost_critic, self.cost_critic, self.cfg.sac.tau)
        return loss.detach()

    def _price_cost(self, loss: torch.Tensor, batch: Transitions, action: torch.Tensor) -> torch.Tensor:
        """(SAC's loss + lambda mean Q_c(s, a)) / (1 + lambda)."""
        with frozen(self.cost_critic):
            cost_value = self._cost_value(batch.critic_obs, action)
        price = self.lagrange.value
        return (loss + price * cost_value.mean()) / (1.0 + price)

    def state_dict(self) -> dict[str, Any]:
        return {
            "sac": self.sac.state_dict(),
            "cost_critic": self.cost_critic.state_dict(),
            "target_cost_critic": self.target_cost_critic.state_dict(),
            "cost_optimizer": self.cost_optimizer.state_dict(),
            "lagrange": self.lagrange.state_dict(),
            "estimator": self.estimator.state_dict(),
            "actor_updates": self._actor_updates,
            "num_envs": self._num_envs,
            "priced_cost": self.priced_cost,
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.sac.load_state_dict(state["sac"])
        self.cost_critic.load_state_dict(state["cost_critic"])
        self.target_cost_critic.load_state_dict(state["target_cost_critic"])
        load_optimizer_state(self.cost_optimizer, state["cost_optimizer"])
        self.lagrange.load_state_dict(state["lagrange"])
        self.estimator.load_state_dict(state["estimator"])
        self._actor_updates = int(state["actor_updates"])
        self._num_envs = state["num_envs"]
        self.priced_cost = float(state["priced_cost"])


def sac_lag(
    obs_dim: int,
    critic_obs_dim: int,
    action_low: torch.Tensor,
    action_high: torch.Tensor,
    cfg: SACLagConfig,
    device: torch.device | str = "cpu",
    reducer: Reducer = LOCAL,
    time_limit: int = 0,
) -> SACLag:
    """The registry's builder."""
    return SACLag(obs_dim, critic_obs_dim, action_low, action_high, cfg, device, reducer, time_limit)
