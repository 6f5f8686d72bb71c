"""Actors for off-policy algorithms, both ending in tanh so actions stay in the normalized box [-1, 1].

`SquashedGaussianActor` (SAC) samples `tanh(mean + std * eps)` with the change-of-variables log-probability;
`TanhActor` (TD3) is deterministic. `deterministic_actor()` gives the exportable obs → env-action module.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import torch
from torch import nn

from robo_rl.modules.actor_critic import ActionScaler
from robo_rl.modules.mlp import Activation, mlp
from robo_rl.modules.normalizer import make_normalizer

LOG_STD_MIN, LOG_STD_MAX = -5.0, 2.0
ACTION_EDGE = 1e-3


class _Parts(NamedTuple):
    """The pieces both actors share: obs normalizer, network with `outputs` heads per action, action scaler."""

    action_dim: int
    obs_normalizer: nn.Module
    net: nn.Module
    scaler: ActionScaler


def _build_parts(
    obs_dim: int,
    outputs: int,
    action_low: torch.Tensor,
    action_high: torch.Tensor,
    hidden: tuple[int, ...],
    activation: Activation,
    normalize_obs: bool,
) -> _Parts:
    action_dim = int(action_low.numel())
    return _Parts(
        action_dim,
        make_normalizer(obs_dim, normalize_obs),
        mlp(obs_dim, hidden, outputs * action_dim, activation),
        ActionScaler(action_low.float(), action_high.float()),
    )


def squashed_log_prob(pre_tanh: torch.Tensor, mean: torch.Tensor, log_std: torch.Tensor) -> torch.Tensor:
    """log pi(tanh(u)) for u ~ N(mean, exp(log_std)), summed over actions → `(B,)`.

    Uses the stable identity log(1 - tanh(u)^2) = 2 (log 2 - u - softplus(-2u)).
    """
    gaussian = -0.5 * ((pre_tanh - mean) / log_std.exp()).square() - log_std - 0.5 * math.log(2 * math.pi)
    jacobian = 2.0 * (math.log(2.0) - pre_tanh - nn.functional.softplus(-2.0 * pre_tanh))
    return (gaussian - jacobian).sum(-1)


class SquashedGaussianActor(nn.Module):
    def __init__(
        self,
        obs_dim: int,
        action_low: torch.Tensor,
        action_high: torch.Tensor,
        hidden: tuple[int, ...] = (256, 256),
        activation: Activation = "relu",
        normalize_obs: bool = True,
    ) -> None:
        super().__init__()
        parts = _build_parts(obs_dim, 2, action_low, action_high, hidden, activation, normalize_obs)
        self.action_dim: int = parts.action_dim
        self.obs_normalizer: nn.Module = parts.obs_normalizer
        self.net: nn.Module = parts.net
        self.scaler: ActionScaler = parts.scaler

    def _mean_log_std(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        mean, log_std = self.net(self.obs_normalizer(obs)).chunk(2, dim=-1)
        return mean, log_std.clamp(LOG_STD_MIN, LOG_STD_MAX)

    def sample(self, obs: torch.Tensor, noise: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        """Reparameterized normalized action `(B, A)` in (-1, 1) and its log-probability `(B,)`.

        `noise`: the standard normal draws `(B, A)`, drawn before (a captured update has no random call); None
        draws them here."""
        mean, log_std = self._mean_log_std(obs)
        eps = torch.randn_like(mean) if noise is None else noise
        pre_tanh = mean + log_std.exp() * eps
        return torch.tanh(pre_tanh), squashed_log_prob(pre_tanh, mean, log_std)

    def deterministic(self, obs: torch.Tensor) -> torch.Tensor:
        """Normalized action `tanh(mean)`."""
        return torch.tanh(self._mean_log_std(obs)[0])

    def log_prob(self, obs: torch.Tensor, action: torch.Tensor) -> torch.Tensor:
        """`(B,)` log-probability of normalized actions `(B, A)`; actions on the bounds (a demonstrator pushing a
        stick to its end) are moved `ACTION_EDGE` inside, where tanh is still invertible."""
        mean, log_std = self._mean_log_std(obs)
        pre_tanh = torch.atanh(action.clamp(-1.0 + ACTION_EDGE, 1.0 - ACTION_EDGE))
        return squashed_log_prob(pre_tanh, mean, log_std)

    def deterministic_actor(self) -> nn.Module:
        return _ExportableTanhActor(self.obs_normalizer, self.net, self.scaler, self.action_dim)


class TanhActor(nn.Module):
    """Deterministic policy `tanh(MLP(normalized obs))` in normalized action units."""

    def __init__(
        self,
        obs_dim: int,
        action_low: torch.Tensor,
        action_high: torch.Tensor,
        hidden: tuple[int, ...] = (256, 256),
        activation: Activation = "relu",
        normalize_obs: bool = True,
    ) -> None:
        super().__init__()
        parts = _build_parts(obs_dim, 1, action_low, action_high, hidden, activation, normalize_obs)
        self.action_dim: int = parts.action_dim
        self.obs_normalizer: nn.Module = parts.obs_normalizer
        self.net: nn.Module = parts.net
        self.scaler: ActionScaler = parts.scaler

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        return torch.tanh(self.net(self.obs_normalizer(obs)))

    def deterministic_actor(self) -> nn.Module:
        return _ExportableTanhActor(self.obs_normalizer, self.net, self.scaler, self.action_dim)


class _ExportableTanhActor(nn.Module):
    """Raw obs → env action: normalizer, network, tanh of the mean part, scaling onto the bounds."""

    def __init__(self, normalizer: nn.Module, net: nn.Module, scaler: ActionScaler, action_dim: int) -> None:
        super().__init__()
        self.normalizer, self.net, self.scaler, self.action_dim = normalizer, net, scaler, action_dim

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        return self.scaler(torch.tanh(self.net(self.normalizer(obs))[:, : self.action_dim]))
