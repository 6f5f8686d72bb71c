"""Diffusion steering (DSRL, Wagenmaker et al. 2025) for flow policies: SAC in the latent-noise space of a frozen
behaviour-cloned flow policy.

The flow policy (`robo_rl.modules.flow`, cloned from demonstrations by `off_policy.bc_pretrain_steps`) is frozen;
a squashed-Gaussian latent actor picks the noise w = `latent_scale` × tanh(u) the flow starts from, and the flow's
K Euler steps turn it into the action. Every action therefore stays on the demonstrators' manifold (a mode, not
an average), and RL only chooses *which* demonstrated behaviour to use where. As in DSRL's noise-aliased variant the
critic is Q(s, a) on executed actions, so demonstrations and interventions train it like any other transition; the
latent actor's gradient flows through the frozen flow's Euler steps. The exported policy is the latent actor's
mean followed by the unrolled flow sampler.
"""

from __future__ import annotations

import copy
import dataclasses
import math
from dataclasses import dataclass

import torch
from torch import nn

from robo_rl.algorithms.off_policy_targets import ensemble_mse, polyak_update, subset_min
from robo_rl.algorithms.sac_losses import sac_actor_loss, soft_target, temperature_loss
from robo_rl.distributed import LOCAL, Reducer
from robo_rl.modules.actor_critic import ActionScaler
from robo_rl.modules.flow import ExportableFlowSampler, FlowPolicy, FlowSamplerParts
from robo_rl.modules.freeze import frozen
from robo_rl.modules.mlp import Activation
from robo_rl.modules.q_ensemble import QEnsemble
from robo_rl.modules.squashed_actor import SquashedGaussianActor
from robo_rl.storage.replay import Transitions


@dataclass(frozen=True)
class DSRLConfig:
    gamma: float = 0.99
    """Discount per control step."""
    tau: float = 0.005
    """Polyak factor of the target critics."""
    actor_learning_rate: float = 3e-4
    """Adam step size of the latent actor."""
    critic_learning_rate: float = 3e-4
    """Adam step size of the critics."""
    alpha_learning_rate: float = 3e-4
    """Adam step size of log(alpha)."""
    init_alpha: float = 0.1
    """Initial entropy temperature (of the latent actor)."""
    latent_scale: float = 2.0
    """Largest |noise| the latent actor may choose, in standard deviations of the flow's N(0, I) prior."""
    flow_steps: int = 10
    """Euler steps of the flow policy."""
    num_critics: int = 2
    """Critic ensemble size."""
    actor_hidden: tuple[int, ...] = (256, 256)
    """Latent actor MLP hidden widths."""
    flow_hidden: tuple[int, ...] = (256, 256)
    """Flow velocity-field MLP hidden widths."""
    critic_hidden: tuple[int, ...] = (256, 256)
    """Critic MLP hidden widths."""
    activation: Activation = "relu"
    """Hidden nonlinearity."""
    noise_seed: int = 0
    """Seed of the flow's stored fixed noise (used by the flow alone; DSRL's own policy picks its noise)."""

    def __post_init__(self) -> None:
        if not 0.0 < self.tau <= 1.0 or not 0.0 <= self.gamma <= 1.0:
            raise ValueError("dsrl: need 0 < tau <= 1 and 0 <= gamma <= 1")
        if self.init_alpha <= 0 or self.latent_scale <= 0 or self.flow_steps < 1:
            raise ValueError("dsrl: need init_alpha > 0, latent_scale > 0 and flow_steps >= 1")


class DSRLActor(nn.Module):
    """The acting side: a latent actor (obs → noise) in front of a frozen flow policy (obs, noise → action)."""

    def __init__(self, obs_dim: int, action_low: torch.Tensor, action_high: torch.Tensor, cfg: DSRLConfig) -> None:
        super().__init__()
        self.latent_scale = cfg.latent_scale
        self.flow = FlowPolicy(
            obs_dim, action_low, action_high, cfg.flow_hidden, cfg.activation, cfg.flow_steps, noise_seed=cfg.noise_seed
        )
        box = torch.ones_like(action_low, dtype=torch.float32)
        self.latent = SquashedGaussianActor(obs_dim, -box, box, cfg.actor_hidden, cfg.activation, normalize_obs=False)
        self.scaler = ActionScaler(action_low.float(), action_high.float())

    def sample(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Normalized actions `(B, A)` from sampled noise, and the noise's log-probability `(B,)`."""
        w, log_prob = self.latent.sample(obs)
        return self.flow.sample(obs, self.latent_scale * w), log_prob

    def deterministic(self, obs: torch.Tensor) -> torch.Tensor:
        return self.flow.sample(obs, self.latent_scale * self.latent.deterministic(obs))

    def bc_loss(self, obs: torch.Tensor, action: torch.Tensor) -> torch.Tensor:
        """Behaviour cloning before RL (off_policy.bc_pretrain_steps) trains the flow."""
        return self.flow.bc_loss(obs, action)

    def deterministic_actor(self) -> nn.Module:
        return _ExportableSteeredFlow(self)


class _ExportableSteeredFlow(nn.Module):
    """Raw obs → env action: the latent actor's mean noise, then the unrolled flow sampler from it."""

    def __init__(self, actor: DSRLActor) -> None:
        super().__init__()
        self.latent_net, self.latent_scale = actor.latent.net, actor.latent_scale
        flow = actor.flow
        self.sampler = ExportableFlowSampler(flow.obs_normalizer, flow.net, flow.scaler, flow.fixed_noise, flow.steps)

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        mean = self.latent_net(obs)[:, : self.sampler.noise.shape[-1]]
        return self.sampler.from_noise(obs, self.latent_scale * torch.tanh(mean))

    def sampler_parts(self) -> FlowSamplerParts:
        """The flow sampler's parts with the latent actor as the source of the start noise."""
        parts = self.sampler.sampler_parts()
        return dataclasses.replace(parts, noise=None, latent=self.latent_net, latent_scale=float(self.latent_scale))


class DSRL:
    def __init__(
        self,
        obs_dim: int,
        critic_obs_dim: int,
        action_low: torch.Tensor,
        action_high: torch.Tensor,
        cfg: DSRLConfig,
        device: torch.device | str = "cpu",
    ) -> None:
        self.cfg = cfg
        self.reducer: Reducer = LOCAL  # several processes: averages gradients over ranks
        self.actor = DSRLActor(obs_dim, action_low, action_high, cfg).to(device)
        action_dim = int(action_low.numel())
        self.critic = QEnsemble(critic_obs_dim, action_dim, cfg.critic_hidden, cfg.num_critics, cfg.activation).to(
            device
        )
        self.target_critic = copy.deepcopy(self.critic).requires_grad_(False)
        self.log_alpha = torch.tensor(math.log(cfg.init_alpha), device=device, requires_grad=True)
        self.target_entropy = -float(action_dim)
        self.actor_optimizer = torch.optim.Adam(self.actor.latent.parameters(), lr=cfg.actor_learning_rate)
        self.critic_optimizer = torch.optim.Adam(self.critic.parameters(), lr=cfg.critic_learning_rate)
        self.alpha_optimizer = torch.optim.Adam([self.log_alpha], lr=cfg.alpha_learning_rate)

    @property
    def alpha(self) -> torch.Tensor:
        return self.log_alpha.detach().exp()

    @torch.no_grad()
    def act(self, obs: torch.Tensor, deterministic: bool = False) -> torch.Tensor:
        """Normalized action `(N, A)`: the flow's action from the latent actor's (sampled or mean) noise."""
        return self.actor.deterministic(obs) if deterministic else self.actor.sample(obs)[0]

    def update(self, batch: Transitions, update_actor: bool = True) -> dict[str, float]:
        metrics = {"critic_loss": self._update_critic(batch)}
        if update_actor:
            metrics.update(self._update_actor(batch))
        polyak_update(self.target_critic, self.critic, self.cfg.tau)
        return metrics

    def _update_critic(self, batch: Transitions) -> float:
        with torch.no_grad():
            next_action, next_log_prob = self.actor.sample(batch.next_obs)
            next_q = subset_min(self.target_critic(batch.next_critic_obs, next_action), self.cfg.num_critics)
            target = soft_target(batch.rewards, next_q, next_log_prob, batch.terminated, self.cfg.gamma, self.alpha)
        loss = ensemble_mse(self.critic(batch.critic_obs, batch.actions), target)
        self.critic_optimizer.zero_grad(set_to_none=True)
        loss.backward()
        self.reducer.gradients(self.critic.parameters())
        self.critic_optimizer.step()
        return loss.item()

    def _update_actor(self, batch: Transitions) -> dict[str, float]:
        with frozen(self.actor.flow), frozen(self.critic):
            action, log_prob = self.actor.sample(batch.obs)
            q = self.critic(batch.critic_obs, action).min(dim=0).values
        actor_loss = sac_actor_loss(q, log_prob, self.alpha)
        self.actor_optimizer.zero_grad(set_to_none=True)
        actor_loss.backward()
        self.reducer.gradients(self.actor.latent.parameters())
        self.actor_optimizer.step()
        alpha_loss = temperature_loss(self.log_alpha, log_prob, self.target_entropy)
        self.alpha_optimizer.zero_grad(set_to_none=True)
        alpha_loss.backward()
        self.reducer.gradients([self.log_alpha])
        self.alpha_optimizer.step()
        return {"actor_loss": actor_loss.item(), "alpha": self.alpha.item(), "entropy": -log_prob.mean().item()}

    def state_dict(self) -> dict:
        return {
            "actor": self.actor.state_dict(),
            "critic": self.critic.state_dict(),
            "target_critic": self.target_critic.state_dict(),
            "log_alpha": self.log_alpha.detach().clone(),
            "actor_optimizer": self.actor_optimizer.state_dict(),
            "critic_optimizer": self.critic_optimizer.state_dict(),
            "alpha_optimizer": self.alpha_optimizer.state_dict(),
        }

    def load_state_dict(self, state: dict) -> None:
        self.actor.load_state_dict(state["actor"])
        self.critic.load_state_dict(state["critic"])
        self.target_critic.load_state_dict(state["target_critic"])
        with torch.no_grad():
            self.log_alpha.copy_(state["log_alpha"])
        self.actor_optimizer.load_state_dict(state["actor_optimizer"])
        self.critic_optimizer.load_state_dict(state["critic_optimizer"])
        self.alpha_optimizer.load_state_dict(state["alpha_optimizer"])
