"""Gaussian actor-critic whose observation normalizer and action scaling live inside the module.

Actions are produced in a normalized space where the action bounds map to [-1, 1]; `ActionScaler` maps them
onto the env's bounds. `DeterministicActor` packages normalizer → actor → clip → scale as one module, which
is what evaluation runs and what is exported, so the two cannot drift apart.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import torch
from torch import nn

from robo_rl.distributed import LOCAL, Reducer, update_normalizer
from robo_rl.modules.distributions import DiagonalGaussian
from robo_rl.modules.mlp import Activation, init_orthogonal, mlp
from robo_rl.modules.normalizer import EmpiricalNormalizer, make_normalizer


@dataclass(frozen=True)
class PolicyConfig:
    actor_hidden: tuple[int, ...] = (64, 64)
    """Hidden layer widths of the actor MLP."""
    critic_hidden: tuple[int, ...] = (64, 64)
    """Hidden layer widths of the critic MLP."""
    activation: Activation = "elu"
    """Nonlinearity between layers: elu, relu, tanh or leaky_relu."""
    log_std: Literal["learned", "state_dependent"] = "learned"
    """`learned`: one free log-std per action; `state_dependent`: the actor outputs mean and log-std."""
    init_log_std: float = 0.0
    """Initial log standard deviation of the Gaussian in normalized action units."""
    init_mean: Literal["zero", "nominal"] = "zero"
    """Where the Gaussian's mean starts: "zero" (the middle of the action bounds) or "nominal", the env's
    `nominal_action` (e.g. the quadrotor's hover command) where the env has one, else the middle."""
    min_log_std: float = -5.0
    """Lower clamp on the log-std (keeps the log-probability finite)."""
    max_log_std: float = 2.0
    """Upper clamp on the log-std."""
    normalize_obs: bool = True
    """Keep running mean/std of observations inside the module and normalize inputs with them."""
    memory: Literal["none", "gru", "history"] = "none"
    """The actor's memory (`robo_rl.modules.recurrent`): "none" (an MLP of the current observation), "gru" (a GRU
    layer after `actor_hidden`, its hidden state carried between steps) or "history" (the last `history_length`
    observations and actions, fed to an MLP of `actor_hidden`)."""
    memory_size: int = 32
    """Units of the GRU layer (`memory: gru`)."""
    history_length: int = 4
    """Past steps the window holds (`memory: history`)."""


class ActionScaler(nn.Module):
    """Maps normalized actions in [-1, 1] onto `[low, high]`, clipping first."""

    center: torch.Tensor
    half_range: torch.Tensor

    def __init__(self, low: torch.Tensor, high: torch.Tensor) -> None:
        super().__init__()
        self.register_buffer("center", (high + low) / 2)
        self.register_buffer("half_range", (high - low) / 2)

    def forward(self, normalized: torch.Tensor) -> torch.Tensor:
        return self.center + self.half_range * normalized.clamp(-1.0, 1.0)

    def normalize(self, action: torch.Tensor) -> torch.Tensor:
        """The inverse map: env actions (clipped to `[low, high]`) → `[-1, 1]`, e.g. for demonstrations."""
        return ((action - self.center) / self.half_range).clamp(-1.0, 1.0)


class ActorCritic(nn.Module):
    """Gaussian policy and value function for PPO (a `StochasticPolicy`, `robo_rl.modules.distributions`).

    Args:
        obs_dim: actor observation size.
        action_low, action_high: `(action_dim,)` env action bounds (finite).
        cfg: network and distribution settings.
        critic_obs_dim: critic input size when the critic sees privileged observations (asymmetric);
            defaults to `obs_dim`.
        nominal_action: `(action_dim,)` env action where the mean starts with `cfg.init_mean="nominal"`.
    """

    def __init__(
        self,
        obs_dim: int,
        action_low: torch.Tensor,
        action_high: torch.Tensor,
        cfg: PolicyConfig = PolicyConfig(),
        critic_obs_dim: int | None = None,
        nominal_action: torch.Tensor | None = None,
    ) -> None:
        super().__init__()
        self.cfg = cfg
        self.action_dim = int(action_low.numel())
        self.critic_obs_dim = critic_obs_dim or obs_dim
        self.obs_normalizer = make_normalizer(obs_dim, cfg.normalize_obs)
        self.critic_normalizer = make_normalizer(self.critic_obs_dim, cfg.normalize_obs)
        head = 2 * self.action_dim if cfg.log_std == "state_dependent" else self.action_dim
        self.actor = mlp(obs_dim, cfg.actor_hidden, head, cfg.activation)
        self.critic = mlp(self.critic_obs_dim, cfg.critic_hidden, 1, cfg.activation)
        init_orthogonal(self.actor, output_gain=0.01)
        init_orthogonal(self.critic, output_gain=1.0)
        if cfg.log_std == "learned":
            self.log_std = nn.Parameter(torch.full((self.action_dim,), cfg.init_log_std))
        else:
            last = self.actor[-1]
            assert isinstance(last, nn.Linear)
            nn.init.constant_(last.bias[self.action_dim :], cfg.init_log_std)
        self.scaler = ActionScaler(action_low.float(), action_high.float())
        if cfg.init_mean == "nominal" and nominal_action is not None:
            last = self.actor[-1]
            assert isinstance(last, nn.Linear)
            with torch.no_grad():
                last.bias[: self.action_dim] = self.scaler.normalize(nominal_action.float().reshape(-1))

    def mean_and_std(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Mean and std `(N, action_dim)` of the normalized-action Gaussian for raw obs `(N, obs_dim)`."""
        out = self.actor(self.obs_normalizer(obs))
        if self.cfg.log_std == "learned":
            mean, log_std = out, self.log_std.expand_as(out)
        else:
            mean, log_std = out[:, : self.action_dim], out[:, self.action_dim :]
        return mean, log_std.clamp(self.cfg.min_log_std, self.cfg.max_log_std).exp()

    def act(self, obs: torch.Tensor) -> tuple[torch.Tensor, DiagonalGaussian]:
        """Sample normalized actions; returns `(action, distribution)`."""
        mean, std = self.mean_and_std(obs)
        return mean + std * torch.randn_like(mean), DiagonalGaussian(mean, std)

    def act_with_noise(self, obs: torch.Tensor, noise: torch.Tensor) -> tuple[torch.Tensor, DiagonalGaussian]:
        """`act` with its standard normal draws `noise` `(N, action_dim)` given (drawn before a captured rollout,
        `robo_rl.runners.device_rollout`): the same action `act` takes when its `randn_like` returns `noise`."""
        mean, std = self.mean_and_std(obs)
        return mean + std * noise, DiagonalGaussian(mean, std)

    def distribution(self, obs: torch.Tensor, actions: torch.Tensor | None = None) -> DiagonalGaussian:
        """The current Gaussian at `obs` (it does not depend on the `actions` to evaluate)."""
        return DiagonalGaussian(*self.mean_and_std(obs))

    def value(self, critic_obs: torch.Tensor) -> torch.Tensor:
        """State value `(N,)` from raw critic observations `(N, critic_obs_dim)`."""
        return self.critic(self.critic_normalizer(critic_obs)).squeeze(-1)

    def actor_parameters(self) -> list[nn.Parameter]:
        """Parameters of the action distribution (network and learned log-std)."""
        extra = [self.log_std] if isinstance(getattr(self, "log_std", None), nn.Parameter) else []
        return [*self.actor.parameters(), *extra]

    def critic_parameters(self) -> list[nn.Parameter]:
        return list(self.critic.parameters())

    def update_normalizers(self, obs: torch.Tensor, critic_obs: torch.Tensor, reducer: Reducer = LOCAL) -> None:
        """Fold a batch into the normalizers; with several processes, every rank's batch (`reducer`)."""
        fold_into_normalizers(self, obs, critic_obs, reducer)

    def deterministic_actor(self) -> DeterministicActor:
        """The exportable actor; it shares parameters and statistics with this module."""
        return DeterministicActor(self.obs_normalizer, self.actor, self.scaler, self.action_dim)


def fold_into_normalizers(policy: nn.Module, obs: torch.Tensor, critic_obs: torch.Tensor, reducer: Reducer) -> None:
    """Fold a batch into `policy`'s `obs_normalizer` and `critic_normalizer` where they keep statistics."""
    for normalizer, batch in ((policy.obs_normalizer, obs), (policy.critic_normalizer, critic_obs)):
        if isinstance(normalizer, EmpiricalNormalizer):
            update_normalizer(normalizer, batch, reducer)


class DeterministicActor(nn.Module):
    """Raw observation `(N, obs_dim)` → env action `(N, action_dim)` within bounds: what gets deployed."""

    def __init__(self, normalizer: nn.Module, actor: nn.Module, scaler: ActionScaler, action_dim: int) -> None:
        super().__init__()
        self.normalizer = normalizer
        self.actor = actor
        self.scaler = scaler
        self.action_dim = action_dim

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        mean = self.actor(self.normalizer(obs))[:, : self.action_dim]
        return self.scaler(mean)
