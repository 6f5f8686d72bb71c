"""FlowPolicy: a conditional flow-matching policy over normalized actions, and its exportable sampler.

The velocity field is an MLP of (normalized observation, x, t) → dx/dt over the action in [-1, 1]. Behaviour cloning
fits it to demonstrated actions (`robo_rl.algorithms.flow_losses.flow_matching_loss`); acting draws noise x0 ~
N(0, I) and integrates `steps` Euler steps, so a flow policy can represent demonstrations with several modes (pass
an obstacle left *or* right) where a Gaussian policy averages them. The exported actor fixes `steps` and the noise
(a seeded draw, stored in the model: zero noise would sit between symmetric modes), so it is one deterministic
obs → action graph that onnxruntime, `real/` and firmware export run unchanged.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from robo_rl.algorithms.flow_losses import euler_sample, flow_matching_loss
from robo_rl.modules.actor_critic import ActionScaler
from robo_rl.modules.mlp import Activation, mlp
from robo_rl.modules.normalizer import make_normalizer


class FlowPolicy(nn.Module):
    """Velocity field v(x, t | obs) over normalized actions `(B, action_dim)`, sampled with `steps` Euler steps."""

    def __init__(
        self,
        obs_dim: int,
        action_low: torch.Tensor,
        action_high: torch.Tensor,
        hidden: tuple[int, ...] = (256, 256),
        activation: Activation = "relu",
        steps: int = 10,
        normalize_obs: bool = False,
        noise_seed: int = 0,
    ) -> None:
        super().__init__()
        if steps < 1:
            raise ValueError(f"FlowPolicy: steps must be >= 1, got {steps}")
        self.action_dim, self.steps = int(action_low.numel()), steps
        self.obs_normalizer = make_normalizer(obs_dim, normalize_obs)
        self.net = mlp(obs_dim + self.action_dim + 1, hidden, self.action_dim, activation)
        self.scaler = ActionScaler(action_low.float(), action_high.float())
        generator = torch.Generator().manual_seed(noise_seed)
        self.register_buffer("fixed_noise", torch.randn(1, self.action_dim, generator=generator))

    def velocity(self, obs: torch.Tensor, x: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
        """dx/dt `(B, action_dim)` at `x` `(B, action_dim)`, time `t` `(B, 1)`, for raw observations `obs`."""
        return self.net(torch.cat([self.obs_normalizer(obs), x, t], dim=-1))

    def sample(self, obs: torch.Tensor, noise: torch.Tensor | None = None, steps: int | None = None) -> torch.Tensor:
        """Normalized actions `(B, action_dim)` in [-1, 1] from `noise` (default: fresh N(0, I))."""
        x0 = torch.randn(obs.shape[0], self.action_dim, device=obs.device) if noise is None else noise
        x1 = euler_sample(lambda x, t: self.velocity(obs, x, t), x0, self.steps if steps is None else steps)
        return x1.clamp(-1.0, 1.0)

    def deterministic(self, obs: torch.Tensor) -> torch.Tensor:
        """Normalized actions from the stored fixed noise (what the exported policy computes)."""
        return self.sample(obs, self.fixed_noise.expand(obs.shape[0], -1))

    def bc_loss(self, obs: torch.Tensor, action: torch.Tensor) -> torch.Tensor:
        """Flow-matching loss on demonstrated normalized actions `(B, action_dim)`."""
        x0 = torch.randn_like(action)
        t = torch.rand(action.shape[0], 1, device=action.device, dtype=action.dtype)
        return flow_matching_loss(lambda x, tt: self.velocity(obs, x, tt), action, x0, t)

    def deterministic_actor(self) -> nn.Module:
        return ExportableFlowSampler(self.obs_normalizer, self.net, self.scaler, self.fixed_noise, self.steps)


@dataclass(frozen=True)
class FlowSamplerParts:
    """The pieces of an exportable flow sampler, for exporters that rebuild it (firmware export's C sampler)."""

    normalizer: nn.Module
    """Raw obs `(B, obs_dim)` → velocity-net features (an `EmpiricalNormalizer` or the identity)."""
    net: nn.Sequential
    """Velocity MLP over `cat([features, x, t])` `(B, obs_dim + action_dim + 1)` → `(B, action_dim)`."""
    center: torch.Tensor
    """`(action_dim,)` env-action center of the `ActionScaler` (applied after clamping x to [-1, 1])."""
    half_range: torch.Tensor
    """`(action_dim,)` env-action half range of the `ActionScaler`."""
    steps: int
    """Euler steps K: x ← x + v(features, x, k / K) / K for k = 0 … K-1."""
    noise: torch.Tensor | None
    """`(1, action_dim)` fixed start noise, or None when `latent` chooses it."""
    latent: nn.Sequential | None = None
    """MLP over raw obs whose first `action_dim` outputs u give the start noise `latent_scale * tanh(u)`."""
    latent_scale: float = 1.0


class ExportableFlowSampler(nn.Module):
    """Raw obs → env action: the `steps` Euler steps from the fixed noise, unrolled, then clip and scale."""

    def __init__(
        self, normalizer: nn.Module, net: nn.Module, scaler: ActionScaler, noise: torch.Tensor, steps: int
    ) -> None:
        super().__init__()
        self.normalizer, self.net, self.scaler, self.steps = normalizer, net, scaler, steps
        self.register_buffer("noise", noise.detach().clone())
        self.register_buffer("times", torch.arange(steps, dtype=torch.float32).unsqueeze(-1) / steps)

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        return self.from_noise(obs, torch.ones_like(obs[:, :1]) * self.noise)

    def sampler_parts(self) -> FlowSamplerParts:
        """What this module computes, as parts (see `FlowSamplerParts`)."""
        return FlowSamplerParts(
            self.normalizer, self.net, self.scaler.center, self.scaler.half_range, self.steps, self.noise
        )

    def from_noise(self, obs: torch.Tensor, noise: torch.Tensor) -> torch.Tensor:
        """Env actions `(B, A)` from raw observations and start noise `(B, A)`."""
        features = self.normalizer(obs)
        ones = torch.ones_like(features[:, :1])
        x = noise
        for k in range(self.steps):
            x = x + self.net(torch.cat([features, x, ones * self.times[k]], dim=-1)) / self.steps
        return self.scaler(x)
