"""Policy-agnostic RL (PA-RL, Mark et al. 2024): fine-tune a policy by its own supervised loss on actions a critic
has improved, so that any policy class (here a flow policy, over single actions or action chunks) is trained without
changing its objective.

Written from the paper's recipe: for each state, sample `num_samples` actions from the base policy, keep the
`num_kept` best by the critic ("global" optimization), move those by `gradient_steps` steps of gradient ascent on the
critic ("local" optimization; off by default, see `PARLConfig.gradient_steps`), and take the best of them: the
optimized action. The critic learns by TD on the replay data, its target's next action a sample of the base policy
(`target_action`; the paper's optimized action overestimated here). The base policy learns by flow matching on the
optimized actions of the batch's states: PA-RL's policy improvement is distillation into the base policy, by the
base policy's own loss.

Acting while exploring is the optimized action (the sampling is the exploration). What is evaluated and exported
(`deterministic`) is the base policy alone at its fixed noise: the deployed artifact is the distilled flow, without
the critic, so the evaluation measures what runs on the robot. Offline then online: `off_policy.prior_buffer` with
demonstrations, `bc_pretrain_steps` clones the flow on them first, `critic_warmup_steps` trains the critic before the
policy moves (the offline phase), then the same updates continue on the online data.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any, Literal

import torch
from torch import nn

from robo_rl.algorithms.fixed_normalizers import fit_once, unfitted
from robo_rl.algorithms.off_policy import OffPolicyAlgorithm
from robo_rl.algorithms.off_policy_targets import bootstrapped_target, ensemble_mse, polyak_update, reduce_ensemble
from robo_rl.algorithms.part_state import load_parts_state, parts_state
from robo_rl.distributed import LOCAL, Reducer
from robo_rl.modules.flow import FlowPolicy
from robo_rl.modules.mlp import Activation
from robo_rl.modules.q_ensemble import QEnsemble
from robo_rl.storage.replay import Transitions


@dataclass(frozen=True)
class PARLConfig:
    gamma: float = 0.99
    """Discount per control step."""
    tau: float = 0.005
    """Polyak factor of the target critics."""
    actor_learning_rate: float = 3e-4
    """Adam step size of the flow policy."""
    critic_learning_rate: float = 3e-4
    """Adam step size of the critics."""
    num_samples: int = 8
    """Actions sampled from the base policy per state (global optimization)."""
    num_kept: int = 2
    """The best of them by the critic that the local optimization moves."""
    gradient_steps: int = 0
    """Gradient-ascent steps on the critic per kept action (local optimization). 0 by default: on point/obstacle
    with 10 demonstrations (bench/flow.py's setting, seed 0) the distilled flow held 96-100 % success without them,
    and fell from 100 % to 0-15 % with 2 steps of 0.02 and to 47 % with 2 steps of 0.005 as soon as the flow began
    to learn after the critic's warm-up. Without them seed 1 still fell from 99 % to 0 % there (docs/BENCHMARKS.md,
    "PA-RL")."""
    action_step_size: float = 0.02
    """Length of one local step in normalized action units ([-1, 1]): the step follows the critic's gradient
    direction, so its size does not depend on the reward scale."""
    flow_steps: int = 10
    """Euler steps of the flow policy."""
    num_critics: int = 2
    """Critic ensemble size."""
    target_action: Literal["policy", "best_sample"] = "policy"
    """The next action of the critic's TD target: a sample of the base policy (the critic evaluates the policy being
    distilled, as SAC's does), or the best of `num_samples` samples by the target critic (a max over samples, which
    overestimates: on point/obstacle it held 100 % success for 16,000 steps, then fell to 4 %)."""
    critic_q: Literal["min", "mean"] = "mean"
    """How the action optimization reduces the ensemble."""
    target_q: Literal["min", "mean"] = "min"
    """How the Bellman target reduces the target ensemble."""
    normalize_obs: bool = False
    """Observation normalizers (fitted once to the first data: the demonstrations when given, then fixed;
    `robo_rl.algorithms.fixed_normalizers`) before the flow and the critics; the exported flow carries its own. For
    observations of very different scales (the peg's)."""
    layer_norm: bool = True
    """LayerNorm after each critic hidden layer."""
    flow_hidden: tuple[int, ...] = (256, 256)
    """Flow velocity-field MLP hidden widths."""
    critic_hidden: tuple[int, ...] = (256, 256)
    """Critic MLP hidden widths."""
    activation: Activation = "relu"
    """Hidden nonlinearity."""
    noise_seed: int = 0
    """Seed of the fixed noise of the deterministic (evaluated, exported) policy."""

    def __post_init__(self) -> None:
        if not 0.0 < self.tau <= 1.0 or not 0.0 <= self.gamma <= 1.0:
            raise ValueError("pa_rl: need 0 < tau <= 1 and 0 <= gamma <= 1")
        if not 1 <= self.num_kept <= self.num_samples:
            raise ValueError(f"pa_rl: need 1 <= num_kept <= num_samples, got {self.num_kept} and {self.num_samples}")
        if self.gradient_steps < 0 or not self.action_step_size >= 0 or self.flow_steps < 1 or self.num_critics < 1:
            raise ValueError("pa_rl: need gradient_steps >= 0, action_step_size >= 0, flow_steps and num_critics >= 1")


PARTS = ("actor", "critic", "target_critic", "actor_optimizer", "critic_optimizer")
"""What a checkpoint holds."""


class PARL(OffPolicyAlgorithm):
    """PA-RL with a flow base policy; an `robo_rl.algorithms.off_policy.OffPolicyAlgorithm`."""

    def __init__(
        self,
        obs_dim: int,
        critic_obs_dim: int,
        action_low: torch.Tensor,
        action_high: torch.Tensor,
        cfg: PARLConfig,
        device: torch.device | str = "cpu",
        reducer: Reducer = LOCAL,
    ) -> None:
        if critic_obs_dim != obs_dim:
            raise ValueError(
                "pa_rl acts with its critic, which then must read the policy's observation: a task with a privileged "
                f"critic observation ({critic_obs_dim} vs {obs_dim}) is not supported"
            )
        self.cfg = cfg
        self.reducer = reducer
        self.actor: FlowPolicy = FlowPolicy(
            obs_dim,
            action_low,
            action_high,
            cfg.flow_hidden,
            cfg.activation,
            cfg.flow_steps,
            normalize_obs=cfg.normalize_obs,
            noise_seed=cfg.noise_seed,
        ).to(device)
        action_dim = int(action_low.numel())
        self.critic = QEnsemble(
            critic_obs_dim,
            action_dim,
            cfg.critic_hidden,
            cfg.num_critics,
            cfg.activation,
            cfg.layer_norm,
            cfg.normalize_obs,
        ).to(device)
        self.target_critic = copy.deepcopy(self.critic).requires_grad_(False)
        self.actor_optimizer = torch.optim.Adam(self.actor.parameters(), lr=cfg.actor_learning_rate)
        self.critic_optimizer = torch.optim.Adam(self.critic.parameters(), lr=cfg.critic_learning_rate)

    def act(self, obs: torch.Tensor, deterministic: bool = False) -> torch.Tensor:
        """Normalized action `(N, A)`: exploring, the optimized action; deterministic, the base policy at its fixed
        noise (what is exported)."""
        if deterministic:
            with torch.no_grad():
                return self.actor.deterministic(obs)
        return self.optimize_actions(obs)

    def optimize_actions(self, obs: torch.Tensor, critic: nn.Module | None = None, local: bool = True) -> torch.Tensor:
        """The optimized action `(B, A)` for each of `obs`: the best of `num_samples` base-policy samples by `critic`
        (default: the critic), the `num_kept` best moved by `gradient_steps` normalized gradient steps first (with
        `local`)."""
        cfg, critic = self.cfg, critic or self.critic
        batch = obs.shape[0]
        repeated = obs.repeat_interleave(cfg.num_samples, dim=0)
        with torch.no_grad():
            samples = self.actor.sample(repeated).reshape(batch, cfg.num_samples, -1)
            values = self._values(critic, repeated, samples.flatten(0, 1)).reshape(batch, cfg.num_samples)
        if not local or cfg.gradient_steps == 0:
            return samples[torch.arange(batch, device=obs.device), values.argmax(dim=1)]
        kept = values.topk(cfg.num_kept, dim=1).indices
        actions = samples.gather(1, kept.unsqueeze(-1).expand(-1, -1, samples.shape[-1])).flatten(0, 1)
        kept_obs = obs.repeat_interleave(cfg.num_kept, dim=0)
        actions = self._ascend(critic, kept_obs, actions)
        with torch.no_grad():
            final = self._values(critic, kept_obs, actions).reshape(batch, cfg.num_kept)
        actions = actions.reshape(batch, cfg.num_kept, -1)
        return actions[torch.arange(batch, device=obs.device), final.argmax(dim=1)]

    def _values(self, critic: nn.Module, obs: torch.Tensor, actions: torch.Tensor) -> torch.Tensor:
        values: torch.Tensor = reduce_ensemble(critic(obs, actions), self.cfg.critic_q)
        return values

    def _ascend(self, critic: nn.Module, obs: torch.Tensor, actions: torch.Tensor) -> torch.Tensor:
        """`gradient_steps` steps of `action_step_size` along each action's critic gradient, kept in [-1, 1]; the
        critic's weights get no gradient."""
        actions = actions.detach()
        for _ in range(self.cfg.gradient_steps):
            actions.requires_grad_(True)
            with torch.enable_grad():
                (gradient,) = torch.autograd.grad(self._values(critic, obs, actions).sum(), actions)
            direction = gradient / gradient.norm(dim=-1, keepdim=True).clamp_min(1e-8)
            actions = (actions.detach() + self.cfg.action_step_size * direction).clamp(-1.0, 1.0)
        return actions.detach()

    def update(self, batch: Transitions, update_actor: bool = True) -> dict[str, torch.Tensor]:
        """One critic step (and, if asked, one step of the flow on the batch's optimized actions), then the target
        update."""
        metrics = {"critic_loss": self._update_critic(batch)}
        if update_actor:
            metrics.update(self._update_actor(batch))
        polyak_update(self.target_critic, self.critic, self.cfg.tau)
        return metrics

    def _update_critic(self, batch: Transitions) -> torch.Tensor:
        with torch.no_grad():
            if self.cfg.target_action == "policy":
                next_action = self.actor.sample(batch.next_obs)
            else:
                next_action = self.optimize_actions(batch.next_obs, self.target_critic, local=False)
            next_q = reduce_ensemble(self.target_critic(batch.next_critic_obs, next_action), self.cfg.target_q)
            target = bootstrapped_target(batch.rewards, next_q, batch.terminated, self.cfg.gamma)
        loss = ensemble_mse(self.critic(batch.critic_obs, batch.actions), target)
        self.critic_optimizer.zero_grad(set_to_none=True)
        loss.backward()
        self.reducer.gradients(self.critic.parameters())
        self.critic_optimizer.step()
        return loss.detach()

    def _update_actor(self, batch: Transitions) -> dict[str, torch.Tensor]:
        optimized = self.optimize_actions(batch.obs)
        loss = self.actor.bc_loss(batch.obs, optimized)
        self.actor_optimizer.zero_grad(set_to_none=True)
        loss.backward()
        self.reducer.gradients(self.actor.parameters())
        self.actor_optimizer.step()
        with torch.no_grad():
            gain = self._values(self.critic, batch.obs, optimized) - self._values(
                self.critic, batch.obs, self.actor.deterministic(batch.obs)
            )
        return {"flow_loss": loss.detach(), "optimization_gain": gain.mean()}

    @property
    def needs_normalizers(self) -> bool:
        """True while `normalize_obs` is on and the normalizers have not been fitted (nor loaded)."""
        return unfitted(self.critic.obs_normalizer)

    @torch.no_grad()
    def fit_normalizers(self, data: Transitions) -> None:
        """Fit the flow's and the critics' observation normalizers, once, to `data`."""
        pairs = [(self.actor.obs_normalizer, data.obs)]
        pairs += [(critic.obs_normalizer, data.critic_obs) for critic in (self.critic, self.target_critic)]
        fit_once(pairs, self.reducer)

    def state_dict(self) -> dict[str, Any]:
        return parts_state(self, PARTS)

    def load_state_dict(self, state: dict[str, Any]) -> None:
        load_parts_state(self, state, PARTS)
