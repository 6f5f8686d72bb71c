"""Preallocated on-policy rollout buffer on the env's device."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
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
    old_distribution: dict[str, torch.Tensor]
    """The parameters of the distribution that collected the actions (`ActionDistribution.params()`)."""
    advantages: torch.Tensor
    returns: torch.Tensor
    hidden: torch.Tensor | None = None
    """A policy with memory: the state `(n, state)` of each of the minibatch's n envs at the rollout's first step;
    the other fields then hold whole sequences, `(T * n, ...)` time-major (step t's rows `[t * n, (t + 1) * n)`)."""
    starts: torch.Tensor | None = None
    """A policy with memory: `(T, n)`, true where an episode starts at step t (the state is zeroed before it)."""

    def sequences(self, field: torch.Tensor) -> torch.Tensor:
        """A time-major field `(T * n, ...)` of a sequence minibatch as `(T, n, ...)`."""
        assert self.starts is not None, "not a sequence minibatch"
        return field.reshape(self.starts.shape[0], self.starts.shape[1], *field.shape[1:])


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
        state_size: int = 0,
    ) -> None:
        """`state_size` > 0: the policy has memory; `hidden_start` and `starts` then hold what `sequence_minibatches`
        needs to replay the rollout through it."""
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
        self.distribution: dict[str, torch.Tensor] = {}
        """The parameters of each step's action distribution (`ActionDistribution.params()`, for PPO's KL):
        allocated at the first `add`, which knows their shapes."""
        self.rewards = zeros()
        self.terminated = zeros(dtype=torch.bool)
        self.dones = zeros(dtype=torch.bool)
        self.advantages = zeros()
        self.returns = zeros()
        self.costs = zeros()
        """Each step's cost (`info["cost"]`; zero for a task without a constraint): what a constrained update prices."""
        self.final_critic_obs = zeros(critic_obs_dim)
        """The critic's input at the final observation of an episode that ended at step t (where `dones`): a cost
        critic bootstraps a time-out from it, as `next_values` does for the reward critic."""
        self.last_critic_obs = torch.zeros(num_envs, critic_obs_dim, device=device)
        """The critic's input after the rollout's last step (what the next rollout starts from)."""
        self.starts = zeros(dtype=torch.bool)
        """True where step t is an episode's first step after the rollout's first step (the state was zeroed)."""
        self.hidden_start = torch.zeros(num_envs, max(state_size, 1), device=device)
        """The policy's state `(num_envs, state)` at the rollout's first step (after any reset there)."""
        self.step = 0

    def add(self, distribution: Mapping[str, torch.Tensor] | None = None, **fields: torch.Tensor) -> None:
        """Store one step; keyword names are the buffer attributes (obs, actions, rewards, ...), `distribution`
        the parameters of the distribution the actions were drawn from."""
        if self.step >= self.num_steps:
            raise RuntimeError("rollout storage is full; call clear() after the update")
        for name, value in fields.items():
            getattr(self, name)[self.step].copy_(value)
        for name, value in (distribution or {}).items():
            if name not in self.distribution:
                shape = (self.num_steps, *value.shape)
                self.distribution[name] = torch.zeros(shape, dtype=value.dtype, device=self.obs.device)
            self.distribution[name][self.step].copy_(value)
        self.step += 1

    def clear(self) -> None:
        self.step = 0

    def minibatches(
        self,
        num_minibatches: int,
        num_epochs: int,
        generator: torch.Generator | None = None,
        permutations: torch.Tensor | None = None,
    ) -> Iterator[Minibatch]:
        """Shuffled minibatches over all `num_steps * num_envs` transitions, `num_epochs` passes.

        `permutations` `(num_epochs, num_steps * num_envs)`: each epoch's order of the transitions, drawn by the
        caller (a captured update draws them before the graph, which may not call the random generator);
        without it, each epoch draws its own with `generator`."""
        total = self.num_steps * self.num_envs
        size = total // num_minibatches
        names = ("obs", "critic_obs", "actions", "log_probs", "values", "advantages", "returns")
        params = tuple(self.distribution)
        columns = [getattr(self, name).reshape(total, -1) for name in names]
        columns += [self.distribution[name].reshape(total, -1) for name in params]
        shapes = [self.distribution[name].shape[2:] for name in params]
        # One packed table, copied once per update: a minibatch is then one row gather instead of one per field.
        table = torch.cat(columns, dim=1)
        widths = [column.shape[1] for column in columns]
        scalar = {"log_probs", "values", "advantages", "returns"}
        if permutations is not None and permutations.shape != (num_epochs, total):
            raise ValueError(f"permutations must be {(num_epochs, total)}, got {tuple(permutations.shape)}")
        for epoch in range(num_epochs):
            if permutations is None:
                perm = torch.randperm(total, device=self.obs.device, generator=generator)
            else:
                perm = permutations[epoch]
            for i in range(num_minibatches):
                rows = table.index_select(0, perm[i * size : (i + 1) * size])
                parts = rows.split(widths, dim=1)
                fields = {
                    name: part.squeeze(1) if name in scalar else part
                    for name, part in zip(names, parts[: len(names)], strict=True)
                }
                old = {
                    name: part.reshape(len(part), *shape)
                    for name, part, shape in zip(params, parts[len(names) :], shapes, strict=True)
                }
                yield Minibatch(
                    obs=fields["obs"],
                    critic_obs=fields["critic_obs"],
                    actions=fields["actions"],
                    old_log_probs=fields["log_probs"],
                    old_values=fields["values"],
                    old_distribution=old,
                    advantages=fields["advantages"],
                    returns=fields["returns"],
                )

    def sequence_minibatches(
        self, num_minibatches: int, num_epochs: int, generator: torch.Generator | None = None
    ) -> Iterator[Minibatch]:
        """Minibatches of whole env sequences for a policy with memory: each epoch shuffles the envs and splits them
        into `num_minibatches` groups; a minibatch holds its envs' `num_steps` steps time-major, with their state at
        the rollout's start and where episodes start (`Minibatch.hidden`, `Minibatch.starts`)."""
        if num_minibatches > self.num_envs:
            raise ValueError(
                f"{num_minibatches} minibatches of whole sequences need at least as many envs, got {self.num_envs}"
            )
        size = self.num_envs // num_minibatches
        for _ in range(num_epochs):
            perm = torch.randperm(self.num_envs, device=self.obs.device, generator=generator)
            for i in range(num_minibatches):
                envs = perm[i * size : (i + 1) * size]

                def pick(field: torch.Tensor, envs: torch.Tensor = envs) -> torch.Tensor:
                    return field.index_select(1, envs).flatten(0, 1)

                yield Minibatch(
                    obs=pick(self.obs),
                    critic_obs=pick(self.critic_obs),
                    actions=pick(self.actions),
                    old_log_probs=pick(self.log_probs),
                    old_values=pick(self.values),
                    old_distribution={name: pick(value) for name, value in self.distribution.items()},
                    advantages=pick(self.advantages),
                    returns=pick(self.returns),
                    hidden=self.hidden_start.index_select(0, envs),
                    starts=self.starts.index_select(1, envs),
                )
