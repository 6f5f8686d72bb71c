"""Preallocated on-policy rollout buffer on the env's device."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import torch


@dataclass
class Minibatch:
    """One flattened minibatch for a PPO update; every field is `(B, ...)`."""

    obs: torch.Tensor
    critic_obs: torch.Tensor
    actions: torch.Tensor
    old_log_probs: torch.Tensor
    old_values: torch.Tensor
    old_mean: torch.Tensor
    old_std: torch.Tensor
    advantages: torch.Tensor
    returns: torch.Tensor


class RolloutStorage:
    """Holds `num_steps` transitions of `num_envs` envs; tensors are `(num_steps, num_envs, ...)`.

    `next_values[t]` is the critic's value of the state reached after step t: the next observation, or the
    final observation of an episode that was truncated there. That is what lets GAE bootstrap time-outs.
    """

    def __init__(
        self,
        num_steps: int,
        num_envs: int,
        obs_dim: int,
        critic_obs_dim: int,
        action_dim: int,
        device: torch.device | str,
    ) -> None:
        self.num_steps = num_steps
        self.num_envs = num_envs

        def zeros(*shape: int, dtype: torch.dtype = torch.float32) -> torch.Tensor:
            return torch.zeros(num_steps, num_envs, *shape, dtype=dtype, device=device)

        self.obs = zeros(obs_dim)
        self.critic_obs = zeros(critic_obs_dim)
        self.actions = zeros(action_dim)
        self.log_probs = zeros()
        self.values = zeros()
        self.next_values = zeros()
        self.mean = zeros(action_dim)
        self.std = zeros(action_dim)
        self.rewards = zeros()
        self.terminated = zeros(dtype=torch.bool)
        self.dones = zeros(dtype=torch.bool)
        self.advantages = zeros()
        self.returns = zeros()
        self.step = 0

    def add(self, **fields: torch.Tensor) -> None:
        """Store one step; keyword names are the buffer attributes (obs, actions, rewards, ...)."""
        if self.step >= self.num_steps:
            raise RuntimeError("rollout storage is full; call clear() after the update")
        for name, value in fields.items():
            getattr(self, name)[self.step].copy_(value)
        self.step += 1

    def clear(self) -> None:
        self.step = 0

    def minibatches(
        self, num_minibatches: int, num_epochs: int, generator: torch.Generator | None = None
    ) -> Iterator[Minibatch]:
        """Shuffled minibatches over all `num_steps * num_envs` transitions, `num_epochs` passes."""
        total = self.num_steps * self.num_envs
        size = total // num_minibatches
        names = ("obs", "critic_obs", "actions", "log_probs", "values", "mean", "std", "advantages", "returns")
        columns = [getattr(self, name).reshape(total, -1) for name in names]
        # One packed table, copied once per update: a minibatch is then one row gather instead of nine.
        table = torch.cat(columns, dim=1)
        widths = [column.shape[1] for column in columns]
        scalar = {"log_probs", "values", "advantages", "returns"}
        for _ in range(num_epochs):
            perm = torch.randperm(total, device=self.obs.device, generator=generator)
            for i in range(num_minibatches):
                rows = table.index_select(0, perm[i * size : (i + 1) * size])
                parts = dict(zip(names, rows.split(widths, dim=1), strict=True))
                fields = {name: part.squeeze(1) if name in scalar else part for name, part in parts.items()}
                yield Minibatch(
                    obs=fields["obs"],
                    critic_obs=fields["critic_obs"],
                    actions=fields["actions"],
                    old_log_probs=fields["log_probs"],
                    old_values=fields["values"],
                    old_mean=fields["mean"],
                    old_std=fields["std"],
                    advantages=fields["advantages"],
                    returns=fields["returns"],
                )
