"""Proximal Policy Optimization for batched environments.

The losses and GAE are pure functions (tested against hand-computed values). `PPO` owns the optimizer and
runs the minibatch epochs; collecting rollouts is the runner's job.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any, Literal, overload

import torch
from torch import nn

from robo_rl.algorithms.ppo_capture import CapturedPPOUpdate
from robo_rl.capture import CaptureBackend
from robo_rl.distributed import LOCAL, Reducer
from robo_rl.modules.actor_critic import ActorCritic, PolicyConfig
from robo_rl.modules.distributions import DiagonalGaussian, StochasticPolicy
from robo_rl.modules.recurrent import RecurrentActorCritic
from robo_rl.storage.rollout import Minibatch, RolloutStorage

UPDATE_METRICS: tuple[str, ...] = ("policy_loss", "value_loss", "entropy", "kl", "learning_rate")
"""The keys of an update's metrics, in order: the means over its minibatches of the losses, the entropy and the KL,
then the learning rate after it."""


@dataclass(frozen=True)
class PPOConfig:
    num_steps: int = 32
    """Control steps collected per env between updates (rollout length)."""
    num_epochs: int = 5
    """Passes over each rollout."""
    num_minibatches: int = 4
    """Minibatches per epoch; minibatch size is num_steps * num_envs / num_minibatches."""
    gamma: float = 0.99
    """Discount per control step."""
    lam: float = 0.95
    """GAE lambda."""
    clip_param: float = 0.2
    """Policy ratio clip range (and value clip range when value_clip is on)."""
    value_clip: bool = False
    """Clip each value update to ±clip_param around the rollout's values (as rsl_rl and baselines do). Off by
    default: with unscaled returns in the hundreds (pendulum) it freezes the critic and training stalls."""
    value_loss_coef: float = 1.0
    """Weight of the value loss."""
    entropy_coef: float = 0.0
    """Weight of the entropy bonus."""
    learning_rate: float = 1e-3
    """Adam step size (initial value when the schedule is adaptive)."""
    schedule: Literal["fixed", "adaptive"] = "adaptive"
    """`adaptive`: scale the LR to keep the KL between successive policies near desired_kl."""
    desired_kl: float = 0.01
    """KL target of the adaptive schedule."""
    min_learning_rate: float = 1e-5
    """Lower bound of the adaptive LR."""
    max_learning_rate: float = 1e-2
    """Upper bound of the adaptive LR."""
    max_grad_norm: float = 1.0
    """Gradient-norm clip, applied to the actor and the critic separately (a large value-loss gradient
    must not shrink the policy's step)."""
    normalize_advantages: bool = True
    """Standardize advantages per minibatch."""

    def __post_init__(self) -> None:
        at_least_one = {
            "num_steps": self.num_steps,
            "num_epochs": self.num_epochs,
            "num_minibatches": self.num_minibatches,
        }
        for name, count in at_least_one.items():
            if count < 1:
                raise ValueError(f"{name} must be at least 1, got {count}")
        for name, fraction in {"gamma": self.gamma, "lam": self.lam}.items():
            if not 0.0 <= fraction <= 1.0:
                raise ValueError(f"{name} must lie in [0, 1], got {fraction}")
        positive: dict[str, float] = {
            "clip_param": self.clip_param,
            "learning_rate": self.learning_rate,
            "desired_kl": self.desired_kl,
            "max_grad_norm": self.max_grad_norm,
        }
        for name, value in positive.items():
            if not value > 0:
                raise ValueError(f"{name} must be positive, got {value}")
        if not 0 < self.min_learning_rate <= self.max_learning_rate:
            raise ValueError("need 0 < min_learning_rate <= max_learning_rate")


def gae(
    rewards: torch.Tensor,
    values: torch.Tensor,
    next_values: torch.Tensor,
    terminated: torch.Tensor,
    dones: torch.Tensor,
    gamma: float,
    lam: float,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Generalized advantage estimation over a `(T, N)` rollout; returns `(advantages, returns)`.

    `next_values[t]` is V of the state after step t (the final observation where an episode ended at t).
    `terminated[t]`: the episode ended in a true terminal state, so nothing is bootstrapped.
    `dones[t]`: the episode ended for any reason (terminated or truncated), so the advantage recursion
    stops there; a truncated step still bootstraps from `next_values[t]`.
    """
    advantages = torch.zeros_like(rewards)
    running = torch.zeros_like(rewards[0])
    not_terminal = (~terminated).to(rewards.dtype)
    not_done = (~dones).to(rewards.dtype)
    for t in reversed(range(rewards.shape[0])):
        delta = rewards[t] + gamma * not_terminal[t] * next_values[t] - values[t]
        running = delta + gamma * lam * not_done[t] * running
        advantages[t] = running
    return advantages, advantages + values


def clipped_surrogate_loss(
    log_probs: torch.Tensor, old_log_probs: torch.Tensor, advantages: torch.Tensor, clip: float
) -> torch.Tensor:
    """PPO's clipped policy objective, negated to a loss (mean over the batch)."""
    ratio = torch.exp(log_probs - old_log_probs)
    unclipped = ratio * advantages
    clipped = ratio.clamp(1.0 - clip, 1.0 + clip) * advantages
    return -torch.min(unclipped, clipped).mean()


def value_loss(
    values: torch.Tensor, old_values: torch.Tensor, returns: torch.Tensor, clip: float | None
) -> torch.Tensor:
    """Squared error to the returns; with `clip`, the pessimistic max over clipped and unclipped values."""
    unclipped = (values - returns).square()
    if clip is None:
        return unclipped.mean()
    clipped_values = old_values + (values - old_values).clamp(-clip, clip)
    return torch.max(unclipped, (clipped_values - returns).square()).mean()


@overload
def adapt_learning_rate(lr: float, kl: float, cfg: PPOConfig) -> float: ...
@overload
def adapt_learning_rate(lr: torch.Tensor, kl: torch.Tensor, cfg: PPOConfig) -> torch.Tensor: ...
def adapt_learning_rate(lr: Any, kl: Any, cfg: PPOConfig) -> Any:
    """Shrink the LR by 1.5 when the KL overshoots 2× its target; grow it by 1.5 under half the target; keep it
    within [min_learning_rate, max_learning_rate].

    On floats (the eager update reads the KL on the host), or on device tensors (a captured update adapts the rate
    per minibatch inside the graph, without reading the KL): one rule, on a float rate or on a device tensor.
    """
    scaled = _where(kl > 2.0 * cfg.desired_kl, lr / 1.5, _where(kl < 0.5 * cfg.desired_kl, lr * 1.5, lr))
    low, high = cfg.min_learning_rate, cfg.max_learning_rate
    return _where(scaled < low, low, _where(scaled > high, high, scaled))


def _where(condition: bool | torch.Tensor, a: Any, b: Any) -> Any:
    """`a` where `condition` holds, else `b`: element by element on tensors (no host sync), a plain choice on a
    bool."""
    if isinstance(condition, torch.Tensor):
        return torch.where(condition, a, b)
    return a if condition else b


class PPO:
    """Runs PPO updates on a policy from a filled `RolloutStorage`. The policy's distribution
    (`robo_rl.modules.distributions.ActionDistribution`) gives the log-probabilities, the entropy and the KL from
    the distribution that collected the rollout, so PPO assumes no family (Gaussian, a ReinFlow chain, ...)."""

    def __init__(
        self,
        policy: StochasticPolicy,
        cfg: PPOConfig,
        *,
        capturable: bool = False,
        reducer: Reducer = LOCAL,
        shape_advantages: Callable[[RolloutStorage], None] | None = None,
    ) -> None:
        """`capturable`: the learning rate lives in a device tensor that the optimizer (Adam, fused and
        capturable) reads at each step, so a captured update (`robo_rl.algorithms.ppo_capture`) can adapt it on the
        device; off, the classic float rate. `reducer`: several processes average gradients and update statistics
        over ranks. `shape_advantages(storage)`: runs after GAE and may change `storage.advantages` (PPO-Lagrangian
        prices the cost advantages in, `robo_rl.algorithms.ppo_lag`)."""
        self.policy = policy
        self.shape_advantages = shape_advantages
        self.cfg = cfg
        self.reducer = reducer
        self._learning_rate = cfg.learning_rate
        self._lr_tensor: torch.Tensor | None = None
        # fused: one kernel for all parameters instead of a Python loop over them (small nets are overhead-bound)
        self.optimizer = torch.optim.Adam(policy.parameters(), lr=cfg.learning_rate, fused=True)
        if capturable:
            self.make_capturable()

    def make_capturable(self) -> None:
        """Rebuild the optimizer capturable, its rate a device tensor, keeping its state and the current rate (a
        runner that turns capture on after the algorithm was built or loaded). Nothing to do when it is already."""
        if self._lr_tensor is not None:
            return
        state, rate = self.optimizer.state_dict(), self._learning_rate
        device = next(iter(self.policy.parameters())).device
        self._lr_tensor = torch.tensor(rate, device=device)
        self.optimizer = torch.optim.Adam(self.policy.parameters(), lr=self._lr_tensor, fused=True, capturable=True)
        self.optimizer.load_state_dict(state)  # its step counters move onto the device (capturable)
        self.learning_rate = rate  # the tensor back into the groups the load replaced

    @property
    def capturable(self) -> bool:
        return self._lr_tensor is not None

    @property
    def learning_rate_tensor(self) -> torch.Tensor:
        """The device tensor the optimizer reads its rate from (capturable only); changed in place."""
        if self._lr_tensor is None:
            raise RuntimeError("the learning rate is a tensor only in a PPO built with capturable=True")
        return self._lr_tensor

    @property
    def learning_rate(self) -> float:
        """The current rate as a float (for checkpoints and metrics: a host sync where it is a device tensor)."""
        return self._learning_rate if self._lr_tensor is None else float(self._lr_tensor)

    @learning_rate.setter
    def learning_rate(self, value: float) -> None:
        if self._lr_tensor is None:
            self._learning_rate = float(value)
        else:
            self._lr_tensor.fill_(value)
        lr: float | torch.Tensor = self._learning_rate if self._lr_tensor is None else self._lr_tensor
        for group in self.optimizer.param_groups:
            group["lr"] = lr  # the tensor itself: a loaded optimizer state brings its own
            if self._lr_tensor is not None:  # and its own capturable flag (False from a classic optimizer)
                group["capturable"] = True

    def compute_returns(self, storage: RolloutStorage) -> None:
        storage.advantages, storage.returns = gae(
            storage.rewards,
            storage.values,
            storage.next_values,
            storage.terminated,
            storage.dones,
            self.cfg.gamma,
            self.cfg.lam,
        )
        if self.shape_advantages is not None:
            self.shape_advantages(storage)

    @property
    def num_steps(self) -> int:
        """Steps of every env in the rollout one update learns from."""
        return self.cfg.num_steps

    def update(self, storage: RolloutStorage) -> dict[str, float]:
        """Minibatch epochs over the rollout; returns mean losses, KL and the learning rate used (`UPDATE_METRICS`).
        Reads each minibatch's KL and statistics on the host."""
        self.compute_returns(storage)
        totals = dict.fromkeys(UPDATE_METRICS[:-1], 0.0)
        count = 0
        for stats in self._steps(self._minibatches(storage), on_device=False):
            for key in totals:
                totals[key] += stats[key].item()
            count += 1
        metrics = {key: value / count for key, value in totals.items()}
        metrics["learning_rate"] = self.learning_rate
        return metrics

    def captured_update(
        self, storage: RolloutStorage, backend: CaptureBackend = "eager", generator: torch.Generator | None = None
    ) -> CapturedPPOUpdate:
        """`update(storage)` as one captured graph (`robo_rl.algorithms.ppo_capture`), called once per rollout
        refilled in place; build it once `storage` holds a rollout (its distribution parameters). Makes the
        optimizer capturable first (`make_capturable`). One process only: a reducer's collectives are not
        captured. `generator` draws the epochs' permutations (the device's default generator when None)."""
        if self.reducer.world.size != 1:
            raise ValueError(
                f"a captured PPO update runs on one process only (this PPO reduces over {self.reducer.world.size})"
            )
        if not storage.distribution:
            raise ValueError("the rollout storage holds no distribution parameters yet: build after the first rollout")
        if isinstance(self.policy, RecurrentActorCritic):
            raise ValueError("a captured PPO update needs a policy without memory (its minibatches are transitions)")
        total = storage.num_steps * storage.num_envs
        if total < self.cfg.num_minibatches:
            raise ValueError(f"{total} transitions cannot fill {self.cfg.num_minibatches} minibatches")
        self.make_capturable()
        return CapturedPPOUpdate(
            functools.partial(self._device_update, storage),
            storage,
            self.cfg.num_epochs,
            UPDATE_METRICS,
            self._graph_signature,
            backend,
            generator,
        )

    def _device_update(self, storage: RolloutStorage, permutations: torch.Tensor, metrics: torch.Tensor) -> None:
        """`update` free of host syncs and random calls, what a captured update records: each epoch's order read
        from `permutations` `(num_epochs, num_steps * num_envs)`, the rate adapted on the device, the metrics
        summed on the device into `metrics` (`UPDATE_METRICS` order)."""
        self.compute_returns(storage)
        sums = torch.zeros(len(UPDATE_METRICS) - 1, device=metrics.device)
        count = 0
        for stats in self._steps(self._minibatches(storage, permutations), on_device=True):
            sums += torch.stack([stats[key] for key in UPDATE_METRICS[:-1]])
            count += 1
        rate = self.learning_rate_tensor.detach().reshape(1).to(sums.dtype)
        metrics.copy_(torch.cat([sums / count, rate]))

    def _minibatches(self, storage: RolloutStorage, permutations: torch.Tensor | None = None) -> Iterator[Minibatch]:
        """The update's minibatches: shuffled transitions (each epoch's order from `permutations` where given), or
        whole env sequences for a policy with memory."""
        cfg = self.cfg
        if isinstance(self.policy, RecurrentActorCritic):
            return storage.sequence_minibatches(cfg.num_minibatches, cfg.num_epochs)
        return storage.minibatches(cfg.num_minibatches, cfg.num_epochs, permutations=permutations)

    def _steps(self, batches: Iterable[Minibatch], on_device: bool) -> Iterator[dict[str, torch.Tensor]]:
        """The minibatch loop of both updates: per minibatch its loss, the adaptive rate's step on its KL, one
        optimizer step; yields each minibatch's statistics (device tensors) after its step. `on_device`: adapt
        the rate tensor in place (a captured update) instead of reading the KL on the host."""
        for batch in batches:
            loss, stats = self.minibatch_loss(batch)
            if self.cfg.schedule == "adaptive":
                if on_device:
                    rate = self.learning_rate_tensor
                    rate.copy_(adapt_learning_rate(rate, stats["kl"], self.cfg))
                else:
                    self.learning_rate = adapt_learning_rate(self.learning_rate, stats["kl"].item(), self.cfg)
            self.apply_gradients(loss)
            yield stats

    def _graph_signature(self) -> tuple[object, ...]:
        """What a recorded update depends on beyond tensor values: which parameters train, which tensors the
        optimizer's state and learning rate are."""
        params = list(self.policy.parameters())
        state = self.optimizer.state
        return (
            tuple(p.requires_grad for p in params),
            tuple(id(v) for p in params for v in state.get(p, {}).values()),
            tuple(id(group["lr"]) for group in self.optimizer.param_groups),
        )

    def minibatch_loss(self, batch: Minibatch) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        """The loss of one minibatch and its statistics (detached device tensors: policy_loss, value_loss,
        entropy, and kl, the KL from the distribution that collected the rollout to the current one)."""
        cfg = self.cfg
        if batch.hidden is not None:  # a policy with memory replays its minibatch's sequences from their start
            assert isinstance(self.policy, RecurrentActorCritic)
            sequence = self.policy.sequence(batch.sequences(batch.obs), batch.hidden, batch.starts)
            distribution: Any = DiagonalGaussian(sequence.mean.flatten(0, 1), sequence.std.flatten(0, 1))
        else:
            distribution = self.policy.distribution(batch.obs, batch.actions)
        log_probs, entropy = distribution.log_prob(batch.actions), distribution.entropy()
        with torch.no_grad():
            old = type(distribution).from_params(batch.old_distribution)
            kl = self.reducer.mean(old.kl(distribution).mean())
        advantages = batch.advantages
        if cfg.normalize_advantages:
            advantages = self._normalized(advantages)
        policy_loss = clipped_surrogate_loss(log_probs, batch.old_log_probs, advantages, cfg.clip_param)
        values = self.policy.value(batch.critic_obs)
        v_loss = value_loss(values, batch.old_values, batch.returns, cfg.clip_param if cfg.value_clip else None)
        loss = policy_loss + cfg.value_loss_coef * v_loss - cfg.entropy_coef * entropy.mean()
        stats = {
            "policy_loss": policy_loss.detach(),
            "value_loss": v_loss.detach(),
            "entropy": entropy.mean().detach(),
            "kl": kl,
        }
        return loss, stats

    def apply_gradients(self, loss: torch.Tensor) -> None:
        """One optimizer step on `loss`: gradients averaged over ranks, clipped per network (without a host
        sync: clip_grad_norm_ scales by a device tensor), then Adam at the current rate."""
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        self.reducer.gradients(self.policy.parameters())
        nn.utils.clip_grad_norm_(self.policy.actor_parameters(), self.cfg.max_grad_norm)
        nn.utils.clip_grad_norm_(self.policy.critic_parameters(), self.cfg.max_grad_norm)
        self.optimizer.step()

    def _normalized(self, advantages: torch.Tensor) -> torch.Tensor:
        """Zero mean, unit spread over the minibatch (of every rank)."""
        if self.reducer.world.size == 1:
            return (advantages - advantages.mean()) / (advantages.std() + 1e-8)
        mean = self.reducer.mean(advantages.mean())
        var = self.reducer.mean(advantages.square().mean()) - mean.square()
        count = advantages.numel() * self.reducer.world.size
        std = (var.clamp(min=0.0) * count / max(count - 1, 1)).sqrt()  # unbiased, as torch.std
        return (advantages - mean) / (std + 1e-8)

    def state_dict(self) -> dict:
        return {"optimizer": self.optimizer.state_dict(), "learning_rate": self.learning_rate}

    def load_state_dict(self, state: dict) -> None:
        self.optimizer.load_state_dict(state["optimizer"])
        self.learning_rate = float(state["learning_rate"])  # also into the optimizer's groups


def build_policy(
    obs_dim: int,
    critic_obs_dim: int,
    action_low: torch.Tensor,
    action_high: torch.Tensor,
    cfg: PolicyConfig,
    *,
    seed: int = 0,
    nominal_action: torch.Tensor | None = None,
    device: str | torch.device = "cpu",
) -> ActorCritic | RecurrentActorCritic:
    """PPO's policy (the registry's `build_policy`): the Gaussian actor-critic of the `policy` section, with memory
    where `cfg.memory` asks for it (`robo_rl.modules.recurrent`), its mean starting at `nominal_action` where
    `cfg.init_mean` asks for it (`seed` is not used: torch's global seed initializes the networks)."""
    kind = RecurrentActorCritic if cfg.memory != "none" else ActorCritic
    policy = kind(obs_dim, action_low, action_high, cfg, critic_obs_dim, nominal_action)
    return policy.to(device)
