"""The action distribution an on-policy policy hands to PPO, and the diagonal Gaussian that implements it.

PPO needs three things of a policy's distribution: the log-probability of the actions the rollout took, the
entropy, and the KL divergence from the distribution that collected the rollout (the adaptive learning rate keeps
it near a target). `ActionDistribution` is that contract, so that PPO never assumes a Gaussian: the rollout stores
what `params()` returns, `from_params` rebuilds the old distribution from it, and `old.kl(new)` is KL(old ‖ new).
`ActorCritic` returns a `DiagonalGaussian`; ReinFlow's chain policy a product of Gaussian transitions
(`robo_rl.modules.reinflow.GaussianChain`).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any, Protocol

import torch
from torch import nn
from torch.distributions import Normal

if TYPE_CHECKING:
    from typing_extensions import Self


class ActionDistribution(Protocol):
    """A batch `(N, ...)` of action distributions, one per observation."""

    def log_prob(self, actions: torch.Tensor) -> torch.Tensor:
        """Log-probability `(N,)` of `actions` (summed over action dimensions)."""
        ...

    def entropy(self) -> torch.Tensor:
        """Entropy `(N,)` (summed over action dimensions)."""
        ...

    def kl(self, other: Self) -> torch.Tensor:
        """KL(self ‖ other) `(N,)`, `other` a distribution of the same kind and batch."""
        ...

    def params(self) -> dict[str, torch.Tensor]:
        """The tensors `(N, ...)` that determine it, for the rollout to store (`from_params` rebuilds it)."""
        ...

    @classmethod
    def from_params(cls, params: Mapping[str, torch.Tensor]) -> Self:
        """The distribution that `params()` returned `params`, e.g. the one that collected a rollout."""
        ...


class StochasticPolicy(Protocol):
    """What PPO and the on-policy runner need of a policy (`ActorCritic`, `ReinFlowPolicy`): an `nn.Module` that
    samples actions with their distribution, re-evaluates stored actions, and has a critic."""

    action_dim: int
    """Width of a stored action (what `act` returns)."""
    critic_obs_dim: int
    scaler: nn.Module
    """Stored action → env action."""

    def act(self, obs: torch.Tensor) -> tuple[torch.Tensor, ActionDistribution]:
        """Sampled actions `(N, action_dim)` and the distribution they were drawn from."""
        ...

    def distribution(self, obs: torch.Tensor, actions: torch.Tensor) -> ActionDistribution:
        """The current distribution at `obs`, for evaluating the stored `actions` (a policy whose law is a chain of
        steps, ReinFlow's, conditions each step on the stored points)."""
        ...

    def value(self, critic_obs: torch.Tensor) -> torch.Tensor: ...

    def actor_parameters(self) -> list[nn.Parameter]: ...

    def critic_parameters(self) -> list[nn.Parameter]: ...

    def parameters(self, recurse: bool = True) -> Iterator[nn.Parameter]: ...

    def update_normalizers(self, obs: torch.Tensor, critic_obs: torch.Tensor, reducer: Any = ...) -> None: ...

    def deterministic_actor(self) -> nn.Module: ...

    def state_dict(self, *args: Any, **kwargs: Any) -> dict[str, Any]: ...

    def load_state_dict(self, state_dict: Mapping[str, Any], strict: bool = True, assign: bool = False) -> Any: ...


def gaussian_kl(mean0: torch.Tensor, std0: torch.Tensor, mean1: torch.Tensor, std1: torch.Tensor) -> torch.Tensor:
    """KL(N0 ‖ N1) of diagonal Gaussians `(B, ..., A)`, summed over the last dimension → `(B, ...)`."""
    return (torch.log(std1 / std0) + (std0.square() + (mean0 - mean1).square()) / (2 * std1.square()) - 0.5).sum(-1)


class DiagonalGaussian:
    """Independent Gaussians `(N, A)` per action dimension: `ActorCritic`'s distribution."""

    def __init__(self, mean: torch.Tensor, std: torch.Tensor) -> None:
        self.mean, self.std = mean, std

    def log_prob(self, actions: torch.Tensor) -> torch.Tensor:
        return self._normal().log_prob(actions).sum(-1)

    def entropy(self) -> torch.Tensor:
        return self._normal().entropy().sum(-1)

    def _normal(self) -> Normal:
        # unvalidated: the argument check reads a tensor on the host (`.all()`), a sync per call that a captured
        # graph refuses (robo_rl/capture.py); the policy's std is positive by construction
        return Normal(self.mean, self.std, validate_args=False)

    def kl(self, other: DiagonalGaussian) -> torch.Tensor:
        return gaussian_kl(self.mean, self.std, other.mean, other.std)

    def params(self) -> dict[str, torch.Tensor]:
        return {"mean": self.mean, "std": self.std}

    @classmethod
    def from_params(cls, params: Mapping[str, torch.Tensor]) -> DiagonalGaussian:
        return cls(params["mean"], params["std"])
