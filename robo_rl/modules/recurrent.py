"""Gaussian actor-critic whose actor has memory: a GRU layer, or a fixed window of past observations and actions.

The actor is `(obs, h) -> (mean, h_next)` with a state `h` `(N, state_size)` carried from step to step and set to
zeros at an episode's first step (`robo_rl.memory_spec.RESET_RULE`). Two cores share that contract:

- `gru`: raw obs -> normalizer -> `pre` MLP layers (`PolicyConfig.actor_hidden`) -> one GRU layer of
  `PolicyConfig.memory_size` units (its hidden state is `h`) -> a linear head. RAPTOR's student has this shape
  (Eschmann et al. 2025: a dense layer, a GRU, a dense output).
- `history`: `h` holds the last `PolicyConfig.history_length` steps' normalized observations and the actor's
  (mean) actions, oldest first; the MLP sees `h` and the current normalized observation. A fixed-window baseline.

The critic is a plain MLP (it may see privileged observations, e.g. the airframe's parameters). `sequence` runs the
actor over a rollout `(T, N, ...)` from the state stored at its start, zeroing the state where an episode starts:
PPO's update recomputes the whole rollout with gradients through time (truncated at the rollout's length).
`RecurrentDeterministicActor` is what evaluation runs and what is exported: `(obs, h_in) -> (action, h_out)`.
"""

from __future__ import annotations

import torch
from torch import nn

from robo_rl.distributed import LOCAL, Reducer
from robo_rl.memory_spec import MemorySpec
from robo_rl.modules.actor_critic import ActionScaler, PolicyConfig, fold_into_normalizers
from robo_rl.modules.distributions import DiagonalGaussian
from robo_rl.modules.mlp import ACTIVATIONS, init_orthogonal, mlp
from robo_rl.modules.normalizer import make_normalizer


class GruCore(nn.Module):
    """normalized obs -> pre layers -> GRU; the state is the GRU's hidden vector."""

    def __init__(self, obs_dim: int, action_dim: int, cfg: PolicyConfig) -> None:
        super().__init__()
        self.pre = (
            mlp(obs_dim, cfg.actor_hidden[:-1], cfg.actor_hidden[-1], cfg.activation) if cfg.actor_hidden else None
        )
        if self.pre is not None:
            self.pre.append(_activation(cfg))
            init_orthogonal(self.pre, output_gain=2**0.5)
        inputs = cfg.actor_hidden[-1] if cfg.actor_hidden else obs_dim
        self.gru = nn.GRU(inputs, cfg.memory_size)
        self.state_size = cfg.memory_size
        self.features = cfg.memory_size

    def step(
        self, obs: torch.Tensor, h: torch.Tensor, prev_action: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Features and next state for one step: `(N, obs_dim)`, `(N, state)` -> `(N, features)`, `(N, state)`."""
        x = self.pre(obs) if self.pre is not None else obs
        _, h_next = self.gru(x.unsqueeze(0), h.unsqueeze(0))
        h_next = h_next.squeeze(0)
        return h_next, h_next

    def sequence(self, obs: torch.Tensor, h0: torch.Tensor, starts: torch.Tensor) -> torch.Tensor:
        """Features `(T, N, features)` for obs `(T, N, obs_dim)` from `h0` `(N, state)`, zeroing the state where
        `starts` `(T, N)` is true (before that step)."""
        x = self.pre(obs) if self.pre is not None else obs
        h = h0
        out = []
        for t in range(obs.shape[0]):
            h = torch.where(starts[t].unsqueeze(-1), torch.zeros_like(h), h)
            _, h = self.gru(x[t].unsqueeze(0), h.unsqueeze(0))
            h = h.squeeze(0)
            out.append(h)
        return torch.stack(out)


class HistoryCore(nn.Module):
    """The state holds the last K steps' normalized observations and actions, oldest first; the features are the
    state and the current observation side by side (an MLP follows in the head)."""

    def __init__(self, obs_dim: int, action_dim: int, cfg: PolicyConfig) -> None:
        super().__init__()
        self.obs_dim, self.action_dim, self.length = obs_dim, action_dim, cfg.history_length
        self.state_size = cfg.history_length * (obs_dim + action_dim)
        self.features = self.state_size + obs_dim

    def step(
        self, obs: torch.Tensor, h: torch.Tensor, prev_action: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        return torch.cat([h, obs], dim=-1), h

    def advance(self, h: torch.Tensor, obs: torch.Tensor, action: torch.Tensor) -> torch.Tensor:
        """The next state: drop the oldest step, append this step's observation and action."""
        width = self.obs_dim + self.action_dim
        return torch.cat([h[..., width:], obs, action], dim=-1)


class RecurrentActorCritic(nn.Module):
    """Gaussian policy with memory and an MLP value function, for PPO.

    Args: as `robo_rl.modules.actor_critic.ActorCritic`; `cfg.memory` picks the core ("gru" or "history").
    """

    def __init__(
        self,
        obs_dim: int,
        action_low: torch.Tensor,
        action_high: torch.Tensor,
        cfg: PolicyConfig,
        critic_obs_dim: int | None = None,
        nominal_action: torch.Tensor | None = None,
    ) -> None:
        super().__init__()
        if cfg.memory not in ("gru", "history"):
            raise ValueError(f"RecurrentActorCritic needs policy.memory 'gru' or 'history', got {cfg.memory!r}")
        if cfg.log_std != "learned":
            raise ValueError("a policy with memory supports log_std 'learned' only")
        self.cfg = cfg
        self.action_dim = int(action_low.numel())
        self.critic_obs_dim = critic_obs_dim or obs_dim
        self.obs_normalizer = make_normalizer(obs_dim, cfg.normalize_obs)
        self.critic_normalizer = make_normalizer(self.critic_obs_dim, cfg.normalize_obs)
        core_class = GruCore if cfg.memory == "gru" else HistoryCore
        self.core: GruCore | HistoryCore = core_class(obs_dim, self.action_dim, cfg)
        head_hidden = cfg.actor_hidden if cfg.memory == "history" else ()
        self.head = mlp(self.core.features, head_hidden, self.action_dim, cfg.activation)
        init_orthogonal(self.head, output_gain=0.01)
        self.critic = mlp(self.critic_obs_dim, cfg.critic_hidden, 1, cfg.activation)
        init_orthogonal(self.critic, output_gain=1.0)
        self.log_std = nn.Parameter(torch.full((self.action_dim,), cfg.init_log_std))
        self.scaler = ActionScaler(action_low.float(), action_high.float())
        if cfg.init_mean == "nominal" and nominal_action is not None:
            last = self.head[-1]
            assert isinstance(last, nn.Linear)
            with torch.no_grad():
                last.bias[:] = self.scaler.normalize(nominal_action.float().reshape(-1))

    @property
    def state_size(self) -> int:
        return self.core.state_size

    @property
    def memory(self) -> MemorySpec:
        """What the artifact states about the state (`robo_rl.artifact`)."""
        return MemorySpec(self.cfg.memory, self.state_size)  # type: ignore[arg-type]

    def initial_state(self, num: int, device: torch.device | str = "cpu") -> torch.Tensor:
        """The reset state `(num, state_size)`: zeros."""
        return torch.zeros(num, self.state_size, device=device)

    def _std(self, like: torch.Tensor) -> torch.Tensor:
        return self.log_std.clamp(self.cfg.min_log_std, self.cfg.max_log_std).exp().expand_as(like)

    def step(self, obs: torch.Tensor, h: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Mean, std `(N, action_dim)` of the normalized-action Gaussian and the next state, for raw obs `(N, obs_dim)`
        and state `h` (already reset where an episode starts)."""
        normalized = self.obs_normalizer(obs)
        features, h_next = self.core.step(normalized, h)
        mean = self.head(features)
        if isinstance(self.core, HistoryCore):
            h_next = self.core.advance(h, normalized, mean.detach().clamp(-1.0, 1.0))
        return mean, self._std(mean), h_next

    def act(self, obs: torch.Tensor, h: torch.Tensor) -> tuple[torch.Tensor, DiagonalGaussian, torch.Tensor]:
        """Sample normalized actions; returns `(action, distribution, next state)`."""
        mean, std, h_next = self.step(obs, h)
        return mean + std * torch.randn_like(mean), DiagonalGaussian(mean, std), h_next

    def sequence(self, obs: torch.Tensor, h0: torch.Tensor, starts: torch.Tensor) -> DiagonalGaussian:
        """The Gaussians `(T, N, action_dim)` over a rollout of raw obs `(T, N, obs_dim)` from the state `h0`
        `(N, state)` at its first step, the state zeroed where `starts` `(T, N)` is true."""
        normalized = self.obs_normalizer(obs)
        if isinstance(self.core, GruCore):
            mean = self.head(self.core.sequence(normalized, h0, starts))
        else:
            means, h = [], h0
            for t in range(obs.shape[0]):
                h = torch.where(starts[t].unsqueeze(-1), torch.zeros_like(h), h)
                features, _ = self.core.step(normalized[t], h)
                mean_t = self.head(features)
                h = self.core.advance(h, normalized[t], mean_t.detach().clamp(-1.0, 1.0))
                means.append(mean_t)
            mean = torch.stack(means)
        return DiagonalGaussian(mean, self._std(mean))

    def value(self, critic_obs: torch.Tensor) -> torch.Tensor:
        """State value `(...,)` from raw critic observations `(..., critic_obs_dim)`."""
        return self.critic(self.critic_normalizer(critic_obs)).squeeze(-1)

    def actor_parameters(self) -> list[nn.Parameter]:
        return [*self.core.parameters(), *self.head.parameters(), self.log_std]

    def critic_parameters(self) -> list[nn.Parameter]:
        return list(self.critic.parameters())

    def update_normalizers(self, obs: torch.Tensor, critic_obs: torch.Tensor, reducer: Reducer = LOCAL) -> None:
        """Fold a batch into the normalizers; with several processes, every rank's batch (`reducer`)."""
        fold_into_normalizers(self, obs, critic_obs, reducer)

    def deterministic_actor(self) -> RecurrentDeterministicActor:
        """The exportable actor; it shares parameters and statistics with this module."""
        return RecurrentDeterministicActor(self)


class RecurrentDeterministicActor(nn.Module):
    """Raw observation `(N, obs_dim)` and state `(N, state)` -> env action `(N, action_dim)` within bounds and the
    next state: what gets deployed (`h_in` -> `h_out` in the ONNX file)."""

    def __init__(self, policy: RecurrentActorCritic) -> None:
        super().__init__()
        self.obs_normalizer = policy.obs_normalizer
        self.core = policy.core
        self.head = policy.head
        self.scaler = policy.scaler
        self.state_size = policy.state_size
        self.memory = policy.memory

    def forward(self, obs: torch.Tensor, h_in: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        normalized = self.obs_normalizer(obs)
        features, h_out = self.core.step(normalized, h_in)
        mean = self.head(features)
        if isinstance(self.core, HistoryCore):
            h_out = self.core.advance(h_in, normalized, mean.clamp(-1.0, 1.0))
        return self.scaler(mean), h_out

    def initial_state(self, num: int, device: torch.device | str = "cpu") -> torch.Tensor:
        return torch.zeros(num, self.state_size, device=device)


def _activation(cfg: PolicyConfig) -> nn.Module:
    return ACTIVATIONS[cfg.activation]()
