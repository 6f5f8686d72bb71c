"""FlowPolicy: a conditional flow-matching policy over normalized actions, and its exportable sampler.

The velocity field is an MLP of (normalized observation, x, t) → dx/dt over the action in [-1, 1]. Behaviour cloning
fits it to demonstrated actions (`robo_rl.modules.flow_losses.flow_matching_loss`); acting draws noise x0 ~
N(0, I) and integrates `steps` Euler steps, so a flow policy can represent demonstrations with several modes (pass
an obstacle left *or* right) where a Gaussian policy averages them. The exported actor fixes `steps` and the noise
(a seeded draw, stored in the model: zero noise would sit between symmetric modes), so it is one deterministic
obs → action graph that onnxruntime, `robo_rl.real` and the firmware export run unchanged.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass

import torch
from torch import nn

from robo_rl.modules.actor_critic import ActionScaler
from robo_rl.modules.flow_losses import euler_sample, flow_matching_loss
from robo_rl.modules.mlp import Activation, mlp
from robo_rl.modules.normalizer import make_normalizer


class FlowPolicy(nn.Module):
    """Velocity field v(x, t | obs) over normalized actions `(B, action_dim)`, sampled with `steps` Euler steps."""

    action_dim: int
    steps: int
    obs_normalizer: nn.Module
    net: nn.Sequential
    scaler: ActionScaler
    fixed_noise: torch.Tensor
    action_loc: torch.Tensor
    action_scale: torch.Tensor

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
        # The flow runs in standardized action units, x = (action - loc) / scale (identity until fitted).
        self.register_buffer("action_loc", torch.zeros(self.action_dim))
        self.register_buffer("action_scale", torch.ones(self.action_dim))

    @torch.no_grad()
    def fit_action_standardization(self, actions: torch.Tensor, min_scale: float = 1e-3) -> None:
        """Standardize by the demonstrations' per-action mean and spread `(N, action_dim)` (normalized units).

        A demonstrator that holds its actions in a narrow band (a hover controller: spread 0.06 of the range)
        leaves the flow errors of about 0.01–0.02 in action units, which crash a quadrotor; learned in units of
        that spread the same network clones it: 0 % → 100 % hover success from 10 demos."""
        self.action_loc.copy_(actions.mean(dim=0))
        self.action_scale.copy_(actions.std(dim=0).clamp(min=min_scale))

    def velocity(self, obs: torch.Tensor, x: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
        """dx/dt `(B, action_dim)` at `x` `(B, action_dim)`, time `t` `(B, 1)`, for raw observations `obs`."""
        return self.net(torch.cat([self.obs_normalizer(obs), x, t], dim=-1))

    def sample(self, obs: torch.Tensor, noise: torch.Tensor | None = None, steps: int | None = None) -> torch.Tensor:
        """Normalized actions `(B, action_dim)` in [-1, 1] from `noise` (default: fresh N(0, I))."""
        x0 = torch.randn(obs.shape[0], self.action_dim, device=obs.device) if noise is None else noise
        x1 = euler_sample(lambda x, t: self.velocity(obs, x, t), x0, self.steps if steps is None else steps)
        return (x1 * self.action_scale + self.action_loc).clamp(-1.0, 1.0)

    def deterministic(self, obs: torch.Tensor) -> torch.Tensor:
        """Normalized actions from the stored fixed noise (what the exported policy computes)."""
        return self.sample(obs, self.fixed_noise.expand(obs.shape[0], -1))

    def bc_loss(self, obs: torch.Tensor, action: torch.Tensor) -> torch.Tensor:
        """Flow-matching loss on demonstrated normalized actions `(B, action_dim)`."""
        x1 = (action - self.action_loc) / self.action_scale
        x0 = torch.randn_like(x1)
        t = torch.rand(action.shape[0], 1, device=action.device, dtype=action.dtype)
        return flow_matching_loss(lambda x, tt: self.velocity(obs, x, tt), x1, x0, t)

    def deterministic_actor(self) -> nn.Module:
        return ExportableFlowSampler(
            self.obs_normalizer, self.net, self.scaler, self.fixed_noise, self.steps, self.action_loc, self.action_scale
        )


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
    """MLP over raw obs whose first `action_dim` outputs u give the start point
    `latent_scale * tanh(u) * latent_gain + latent_offset`."""
    latent_scale: float = 1.0
    latent_gain: torch.Tensor | None = None
    """`(action_dim,)` per-action factor after `latent_scale` (the action standardization's scale), or None."""
    latent_offset: torch.Tensor | None = None
    """`(action_dim,)` added last (the action standardization's mean), or None."""


class ExportableFlowSampler(nn.Module):
    """Raw obs → env action: the `steps` Euler steps from the fixed noise, unrolled, then clip and scale.

    The action standardization (`loc`, `scale`) is folded into a copy of the velocity net, so the sampler
    integrates in action units: x' = scale x + loc and v' = scale v((x' - loc) / scale), i.e. the net's x inputs
    divided by scale (bias shifted by -W_x loc / scale) and its outputs multiplied by scale.
    """

    loc: torch.Tensor
    scale: torch.Tensor
    noise: torch.Tensor
    times: torch.Tensor

    def __init__(
        self,
        normalizer: nn.Module,
        net: nn.Sequential,
        scaler: ActionScaler,
        noise: torch.Tensor,
        steps: int,
        loc: torch.Tensor | None = None,
        scale: torch.Tensor | None = None,
    ) -> None:
        super().__init__()
        action_dim = noise.shape[-1]
        loc = torch.zeros(action_dim) if loc is None else loc.detach().clone()
        scale = torch.ones(action_dim) if scale is None else scale.detach().clone()
        self.normalizer, self.scaler, self.steps = normalizer, scaler, steps
        self.net = _folded(net, loc, scale)
        self.register_buffer("loc", loc)
        self.register_buffer("scale", scale)
        self.register_buffer("noise", noise.detach().clone())
        self.register_buffer("times", torch.arange(steps, dtype=torch.float32).unsqueeze(-1) / steps)

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        return self.from_noise(obs, torch.ones_like(obs[:, :1]) * self.noise)

    def sampler_parts(self) -> FlowSamplerParts:
        """What this module computes, as parts (see `FlowSamplerParts`), in action units."""
        start = self.noise * self.scale + self.loc
        return FlowSamplerParts(
            self.normalizer, self.net, self.scaler.center, self.scaler.half_range, self.steps, start
        )

    def from_noise(self, obs: torch.Tensor, noise: torch.Tensor) -> torch.Tensor:
        """Env actions `(B, A)` from raw observations and start noise `(B, A)` (standard-normal units)."""
        features = self.normalizer(obs)
        ones = torch.ones_like(features[:, :1])
        x = noise * self.scale + self.loc
        for k in range(self.steps):
            x = x + self.net(torch.cat([features, x, ones * self.times[k]], dim=-1)) / self.steps
        return self.scaler(x)


def _folded(net: nn.Sequential, loc: torch.Tensor, scale: torch.Tensor) -> nn.Sequential:
    """A copy of the velocity MLP over [features, x', t] in action units (see ExportableFlowSampler)."""
    if bool((loc == 0).all()) and bool((scale == 1).all()):
        return net
    layers = list(copy.deepcopy(net))
    linears = [layer for layer in layers if isinstance(layer, nn.Linear)]
    first, last = linears[0], linears[-1]
    action_dim = loc.numel()
    columns = slice(first.in_features - action_dim - 1, first.in_features - 1)
    with torch.no_grad():
        w_x = first.weight[:, columns].clone()
        first.weight[:, columns] = w_x / scale
        first.bias.sub_(w_x @ (loc / scale))
        last.weight.mul_(scale.unsqueeze(-1))
        last.bias.mul_(scale)
    return nn.Sequential(*layers)
