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

import dataclasses
from dataclasses import dataclass

import torch
from torch import nn

from robo_rl.algorithms.sac import SAC, SACConfig
from robo_rl.distributed import LOCAL, Reducer
from robo_rl.modules.actor_critic import ActionScaler
from robo_rl.modules.flow import ExportableFlowSampler, FlowPolicy, FlowSamplerParts
from robo_rl.modules.freeze import frozen
from robo_rl.modules.mlp import Activation
from robo_rl.modules.squashed_actor import SquashedGaussianActor


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
        """Normalized actions `(B, A)` from sampled noise, and the noise's log-probability `(B,)`; gradients
        reach the latent actor through the flow, whose own parameters stay fixed."""
        w, log_prob = self.latent.sample(obs)
        with frozen(self.flow):
            return self.flow.sample(obs, self.latent_scale * w), log_prob

    def trainable_parameters(self) -> list[nn.Parameter]:
        """What RL moves: the latent actor (the flow was cloned and stays frozen)."""
        return list(self.latent.parameters())

    def deterministic(self, obs: torch.Tensor) -> torch.Tensor:
        return self.flow.sample(obs, self.latent_scale * self.latent.deterministic(obs))

    def bc_loss(self, obs: torch.Tensor, action: torch.Tensor) -> torch.Tensor:
        """Behaviour cloning before RL (off_policy.bc_pretrain_steps) trains the flow."""
        return self.flow.bc_loss(obs, action)

    def fit_action_standardization(self, actions: torch.Tensor) -> None:
        self.flow.fit_action_standardization(actions)

    def deterministic_actor(self) -> nn.Module:
        return _ExportableSteeredFlow(self)


class _ExportableSteeredFlow(nn.Module):
    """Raw obs → env action: the latent actor's mean noise, then the unrolled flow sampler from it."""

    def __init__(self, actor: DSRLActor) -> None:
        super().__init__()
        latent_net = actor.latent.net
        if not isinstance(latent_net, nn.Sequential):
            raise TypeError(f"the latent actor's network is {type(latent_net).__name__}, not an MLP (Sequential)")
        self.latent_net, self.latent_scale = latent_net, actor.latent_scale
        self.action_dim = actor.flow.action_dim
        sampler = actor.flow.deterministic_actor()
        if not isinstance(sampler, ExportableFlowSampler):
            raise TypeError(f"the flow's deterministic actor is {type(sampler).__name__}, not an ExportableFlowSampler")
        self.sampler = sampler

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        mean = self.latent_net(obs)[:, : self.action_dim]
        return self.sampler.from_noise(obs, self.latent_scale * torch.tanh(mean))

    def sampler_parts(self) -> FlowSamplerParts:
        """The flow sampler's parts with the latent actor as the source of the start noise."""
        parts = self.sampler.sampler_parts()
        return dataclasses.replace(
            parts,
            noise=None,
            latent=self.latent_net,
            latent_scale=float(self.latent_scale),
            latent_gain=self.sampler.scale,
            latent_offset=self.sampler.loc,
        )


def dsrl(
    obs_dim: int,
    critic_obs_dim: int,
    action_low: torch.Tensor,
    action_high: torch.Tensor,
    cfg: DSRLConfig,
    device: torch.device | str = "cpu",
    reducer: Reducer = LOCAL,
) -> SAC:
    """DSRL is SAC whose actor is the steered flow: critic, temperature and updates are SAC's, and the actor
    optimizer moves only the latent actor. `reducer`: as SAC's."""
    sac = SACConfig(
        gamma=cfg.gamma,
        tau=cfg.tau,
        actor_learning_rate=cfg.actor_learning_rate,
        critic_learning_rate=cfg.critic_learning_rate,
        alpha_learning_rate=cfg.alpha_learning_rate,
        init_alpha=cfg.init_alpha,
        num_critics=cfg.num_critics,
        critic_subset=cfg.num_critics,
        critic_hidden=cfg.critic_hidden,
        activation=cfg.activation,
    )
    actor = DSRLActor(obs_dim, action_low, action_high, cfg)
    return SAC(obs_dim, critic_obs_dim, action_low, action_high, sac, device=device, actor=actor, reducer=reducer)
