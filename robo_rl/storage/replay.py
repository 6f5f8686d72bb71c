"""Preallocated off-policy replay storage on the env's device, and RLPD / HIL-SERL symmetric sampling.

A `ReplayBuffer` is a ring of `capacity` transitions. Each transition carries two flags from SERL-style
training: `intervened` (a human took over the action) and `is_demo` (from an offline demonstration). A
`SymmetricSampler` draws a fixed share of every batch from a prior buffer (demonstrations and interventions)
and the rest from the online buffer, as RLPD and HIL-SERL do.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

import torch

from robo_rl.storage import checkpoint


@dataclass
class Transitions:
    """A batch of B environment transitions; every field is a tensor with leading dimension B.

    Attributes:
        obs: `(B, obs_dim)` policy observation before the step.
        critic_obs: `(B, critic_obs_dim)` critic observation before the step: the obs followed by the privileged
            part when the env has one (see `robo_rl.runners.on_policy.critic_observation`), else equal to obs.
        actions: `(B, action_dim)` action in the policy's output space, before the actor's scaler maps it onto
            the env's bounds: the space the critic is trained in. Human actions must be mapped back into it.
        rewards: `(B,)` float reward of the step.
        next_obs: `(B, obs_dim)` observation after the step. For a finished episode pass the env's
            `info["final_obs"]`, not the returned obs (which already belongs to the next episode): bootstrapping
            a time-out needs the value of the state the episode was cut in. `info["final_obs"]` equals the
            returned obs where no episode ended, so it can be passed for every env.
        next_critic_obs: `(B, critic_obs_dim)` critic counterpart of next_obs (built from
            `info["final_privileged_obs"]` for finished episodes).
        terminated: `(B,)` bool, the episode ended in a terminal state (no bootstrapping).
        truncated: `(B,)` bool, the episode was cut by a time limit (bootstrap from next_obs).
        intervened: `(B,)` bool, the action came from a human intervention, not the policy.
        is_demo: `(B,)` bool, the transition comes from an offline demonstration.
    """

    obs: torch.Tensor
    critic_obs: torch.Tensor
    actions: torch.Tensor
    rewards: torch.Tensor
    next_obs: torch.Tensor
    next_critic_obs: torch.Tensor
    terminated: torch.Tensor
    truncated: torch.Tensor
    intervened: torch.Tensor
    is_demo: torch.Tensor

    def __len__(self) -> int:
        return self.obs.shape[0]


FIELD_NAMES: tuple[str, ...] = tuple(f.name for f in fields(Transitions))
_FLAG_NAMES = ("terminated", "truncated", "intervened", "is_demo")
_FLOAT_NAMES = tuple(name for name in FIELD_NAMES if name not in _FLAG_NAMES)


def _column_views(
    row_shapes: dict[str, tuple[int, ...]], widths: dict[str, int]
) -> dict[str, tuple[int, int, tuple[int, ...]]]:
    """Each field's `(first column, end column, row shape)` in its packed table (floats or flags)."""
    columns: dict[str, tuple[int, int, tuple[int, ...]]] = {}
    for group in (_FLOAT_NAMES, _FLAG_NAMES):
        start = 0
        for name in group:
            columns[name] = (start, start + widths[name], row_shapes[name])
            start += widths[name]
    return columns


_SIZE_KEYS = ("capacity", "obs_dim", "critic_obs_dim", "action_dim")


def select_transitions(batch: Transitions, mask: torch.Tensor) -> Transitions:
    """The transitions of `batch` where `mask` `(B,)` is true."""
    return Transitions(**{name: getattr(batch, name)[mask] for name in FIELD_NAMES})


def concat_transitions(a: Transitions, b: Transitions) -> Transitions:
    """`a` followed by `b` along the batch dimension; both must be on the same device."""
    return Transitions(**{name: torch.cat((getattr(a, name), getattr(b, name))) for name in FIELD_NAMES})


@dataclass(frozen=True)
class ReplayHistory:
    """The newest transitions a buffer received, oldest first: enough to rebuild its ring exactly
    (`ReplayBuffer.load_history`). `robo_rl.storage.replay_log` reads one from a checkpoint's chunk files."""

    sizes: dict[str, int]
    """capacity, obs_dim, critic_obs_dim and action_dim of the buffer."""
    added: int
    """Transitions the buffer had received in all."""
    transitions: Transitions
    """The last min(added, capacity) of them (or more), in insertion order."""


class ReplayBuffer:
    """Ring buffer of `capacity` transitions preallocated on `device`; the oldest are overwritten first.

    Slots fill from 0, so the stored transitions are always slots `[0, len)`; once full, `add` overwrites from
    the ring position onwards. `state_dict` holds only the filled slots (a checkpoint of a small fill is small)
    and restores them, the length and the ring position exactly. Transition number `i` (counting every one ever
    added from 0) sits in slot `i % capacity`; `since` copies the newest ones out in insertion order, which is
    what incremental checkpoints write (`robo_rl.storage.replay_log`).

    Args:
        capacity: number of transitions kept.
        obs_dim: policy observation size.
        critic_obs_dim: critic observation size (obs_dim plus the privileged size, if any).
        action_dim: action size.
        device: torch device of every stored tensor; the env's device.
    """

    def __init__(
        self, capacity: int, obs_dim: int, critic_obs_dim: int, action_dim: int, device: torch.device | str
    ) -> None:
        if capacity < 1:
            raise ValueError(f"capacity must be at least 1, got {capacity}")
        self.capacity = capacity
        self.obs_dim, self.critic_obs_dim, self.action_dim = obs_dim, critic_obs_dim, action_dim
        self._row_shapes: dict[str, tuple[int, ...]] = {
            "obs": (obs_dim,),
            "critic_obs": (critic_obs_dim,),
            "actions": (action_dim,),
            "rewards": (),
            "next_obs": (obs_dim,),
            "next_critic_obs": (critic_obs_dim,),
            **{name: () for name in _FLAG_NAMES},
        }
        # Two packed tables, float fields side by side and the four flags side by side, so that sampling a batch
        # is two row gathers; `_data` holds each field's columns as a view.
        widths = {name: math.prod(shape) for name, shape in self._row_shapes.items()}
        self._floats = torch.zeros(capacity, sum(widths[n] for n in _FLOAT_NAMES), device=device)
        self._flags = torch.zeros(capacity, len(_FLAG_NAMES), dtype=torch.bool, device=device)
        self._columns = _column_views(self._row_shapes, widths)
        self._data = self._unpack(self._floats, self._flags)
        # The tensors' own device: "cuda" becomes "cuda:0", which is what incoming tensors report.
        self.device = self._data.rewards.device
        self._position = 0
        self._size = 0
        self._added = 0

    def __len__(self) -> int:
        return self._size

    @property
    def added(self) -> int:
        """Transitions added since the buffer was created, overwritten ones included."""
        return self._added

    def add(self, batch: Transitions) -> None:
        """Append B transitions, overwriting the oldest; with B > capacity only the last `capacity` are kept.

        The slots written are the ones B single adds would have written, so the ring position stays consistent.
        """
        n = self._check_batch(batch)
        keep = min(n, self.capacity)
        if keep == 0:
            return
        start = self._position + n - keep
        slots = (start + torch.arange(keep, device=self.device)) % self.capacity
        for name in FIELD_NAMES:
            stored = getattr(self._data, name)
            stored[slots] = getattr(batch, name)[n - keep :].to(stored.dtype)
        self._position = (self._position + n) % self.capacity
        self._size = min(self._size + n, self.capacity)
        self._added += n

    def sample(self, batch_size: int, generator: torch.Generator | None = None) -> Transitions:
        """`batch_size` stored transitions drawn uniformly with replacement.

        A generator must live on the buffer's device (torch.randint's rule).
        """
        if self._size == 0:
            raise ValueError("cannot sample from an empty ReplayBuffer")
        idx = torch.randint(self._size, (batch_size,), device=self.device, generator=generator)
        return self._unpack(self._floats.index_select(0, idx), self._flags.index_select(0, idx))

    def sample_many(self, batch_size: int, count: int, generator: torch.Generator | None = None) -> list[Transitions]:
        """`count` batches of `batch_size`, drawn with one random call and two gathers for all of them (several
        gradient steps per call without per-batch sampling work); `count=1` draws what `sample` draws."""
        if self._size == 0:
            raise ValueError("cannot sample from an empty ReplayBuffer")
        idx = torch.randint(self._size, (count * batch_size,), device=self.device, generator=generator)
        floats, flags = self._floats.index_select(0, idx), self._flags.index_select(0, idx)
        return [
            self._unpack(floats[i * batch_size : (i + 1) * batch_size], flags[i * batch_size : (i + 1) * batch_size])
            for i in range(count)
        ]

    def _unpack(self, floats: torch.Tensor, flags: torch.Tensor) -> Transitions:
        """Transitions whose fields are views into rows of the packed `floats` and `flags` tables."""
        fields = {}
        for name, (start, stop, shape) in self._columns.items():
            table = flags if name in _FLAG_NAMES else floats
            fields[name] = table[:, start:stop].view(-1, *shape)
        return Transitions(**fields)

    def stored(self) -> Transitions:
        """Views of the `len(self)` stored transitions, in slot order (not insertion order once wrapped)."""
        return Transitions(**{name: getattr(self._data, name)[: self._size] for name in FIELD_NAMES})

    def since(self, start: int) -> Transitions:
        """CPU copies of transitions number `start` to `added - 1`, oldest first; the oldest still stored is
        number `added - len(self)` (ValueError for an older `start`)."""
        if not self._added - self._size <= start <= self._added:
            raise ValueError(f"transitions {start}.. are not stored (the buffer holds {self._added - self._size}..)")
        slots = torch.arange(start, self._added, device=self.device) % self.capacity
        return Transitions(**{name: getattr(self._data, name)[slots].to("cpu") for name in FIELD_NAMES})

    def load_history(self, history: ReplayHistory) -> None:
        """Rebuild the ring of the buffer `history` came from: the same slots, length, ring position and count.

        ValueError naming the field if capacity or a dimension differs, or if the history is too short.
        """
        self._check_sizes(history.sizes)
        keep = min(history.added, self.capacity)
        if len(history.transitions) < keep:
            raise ValueError(f"replay history holds {len(history.transitions)} transitions, the buffer kept {keep}")
        start = history.added - keep
        self._position, self._size, self._added = start % self.capacity, 0, start
        first = len(history.transitions) - keep
        self.add(
            Transitions(**{name: getattr(history.transitions, name)[first:].to(self.device) for name in FIELD_NAMES})
        )

    def state_dict(self) -> dict[str, Any]:
        """Sizes, ring position and CPU copies of the filled slots only.

        Copies, not views: torch.save writes a view's whole underlying storage, i.e. the full capacity.
        """
        return {
            **self._dims(),
            "position": self._position,
            "size": self._size,
            "added": self._added,
            "transitions": {name: getattr(self._data, name)[: self._size].to("cpu", copy=True) for name in FIELD_NAMES},
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore a `state_dict`; ValueError naming the field if capacity or a dimension differs."""
        self._check_sizes(state)
        self._check_fill(state)
        size = state["size"]
        for name in FIELD_NAMES:
            getattr(self._data, name)[:size].copy_(state["transitions"][name])
        self._position, self._size = state["position"], size
        # Files written before the count existed: the smallest count consistent with the ring.
        self._added = state.get("added", size if size < self.capacity else self.capacity + self._position)

    def _check_fill(self, state: dict[str, Any]) -> None:
        """`size`, `position` and the stored rows must describe one ring of this capacity."""
        size, position = state.get("size"), state.get("position")
        if not isinstance(size, int) or not 0 <= size <= self.capacity:
            held = f"the saved replay buffer holds {size!r} transitions"
            raise ValueError(f"size: {held}, its capacity is {self.capacity}")
        if not isinstance(position, int) or not 0 <= position < self.capacity:
            raise ValueError(f"position: {position!r} is outside a ring of capacity {self.capacity}")
        for name in FIELD_NAMES:
            rows = state["transitions"].get(name) if isinstance(state.get("transitions"), dict) else None
            if not isinstance(rows, torch.Tensor) or rows.shape[:1] != (size,):
                shape = None if rows is None else tuple(getattr(rows, "shape", ()))
                raise ValueError(f"transitions.{name}: expected {size} rows, the file has {shape}")

    def _check_sizes(self, sizes: dict[str, Any]) -> None:
        for name, ours in self._dims().items():
            if name not in sizes:
                raise ValueError(f"replay buffer state lacks {name!r}")
            if sizes[name] != ours:
                raise ValueError(f"{name}: the saved replay buffer has {sizes[name]}, this buffer has {ours}")

    def save(self, path: Path | str) -> None:
        """Write the buffer to `path` atomically (the old file or the new one, never half of either)."""
        checkpoint.save_atomic(self.state_dict(), Path(path))

    @classmethod
    def load(cls, path: Path | str, device: torch.device | str = "cpu") -> ReplayBuffer:
        """A buffer with the saved capacity and dimensions, holding the saved transitions, on `device`."""
        # Read onto the CPU: load_state_dict copies to `device`, so a GPU never holds the data twice.
        state = checkpoint.load(Path(path), "cpu")
        missing = [key for key in _SIZE_KEYS if key not in state]
        if missing:
            raise ValueError(f"{path}: not a replay buffer file (missing {missing})")
        capacity, obs_dim, critic_obs_dim, action_dim = (int(state[key]) for key in _SIZE_KEYS)
        buffer = cls(capacity, obs_dim, critic_obs_dim, action_dim, device=device)
        buffer.load_state_dict(state)
        return buffer

    def _dims(self) -> dict[str, int]:
        return {key: getattr(self, key) for key in _SIZE_KEYS}

    def _check_batch(self, batch: Transitions) -> int:
        """The batch size B; ValueError naming the first field whose shape, dtype or device is wrong."""
        n = len(batch)
        for name, row_shape in self._row_shapes.items():
            tensor = getattr(batch, name)
            if tuple(tensor.shape) != (n, *row_shape):
                raise ValueError(f"{name}: expected shape {(n, *row_shape)}, got {tuple(tensor.shape)}")
            # Flags must already be bool (a float here is likely a misplaced field); floats are cast to float32.
            is_flag = name in _FLAG_NAMES
            if not (tensor.dtype == torch.bool if is_flag else tensor.dtype.is_floating_point):
                raise ValueError(f"{name}: expected {'torch.bool' if is_flag else 'a float dtype'}, got {tensor.dtype}")
            if tensor.device != self.device:
                raise ValueError(f"{name}: on {tensor.device}, the replay buffer is on {self.device}")
        return n


class SymmetricSampler:
    """Batches mixing a prior buffer (demonstrations, interventions) with the online buffer (RLPD, HIL-SERL).

    Every batch holds exactly `round(batch_size * prior_fraction)` prior transitions (Python's round: halves go
    to the even number) followed by online ones. While the prior buffer is empty, all come from online.

    Args:
        online: transitions collected by the policy.
        prior: demonstration and intervention transitions.
        prior_fraction: share of each batch drawn from `prior`, in [0, 1].
    """

    def __init__(self, online: ReplayBuffer, prior: ReplayBuffer, prior_fraction: float = 0.5) -> None:
        if not 0.0 <= prior_fraction <= 1.0:
            raise ValueError(f"prior_fraction must be in [0, 1], got {prior_fraction}")
        for name in ("obs_dim", "critic_obs_dim", "action_dim", "device"):
            if getattr(online, name) != getattr(prior, name):
                raise ValueError(f"{name}: online has {getattr(online, name)}, prior has {getattr(prior, name)}")
        self.online, self.prior, self.prior_fraction = online, prior, prior_fraction

    def sample_many(self, batch_size: int, count: int, generator: torch.Generator | None = None) -> list[Transitions]:
        """`count` batches as `sample` makes them, the draws of each buffer made at once for all batches."""
        num_prior = round(batch_size * self.prior_fraction) if len(self.prior) > 0 else 0
        if num_prior == 0:
            return self.online.sample_many(batch_size, count, generator)
        if num_prior == batch_size:
            return self.prior.sample_many(batch_size, count, generator)
        prior = self.prior.sample_many(num_prior, count, generator)
        online = self.online.sample_many(batch_size - num_prior, count, generator)
        return [concat_transitions(a, b) for a, b in zip(prior, online, strict=True)]

    def sample(self, batch_size: int, generator: torch.Generator | None = None) -> Transitions:
        """`batch_size` transitions: the prior share first, then the online share."""
        num_prior = round(batch_size * self.prior_fraction) if len(self.prior) > 0 else 0
        if num_prior == 0:
            return self.online.sample(batch_size, generator)
        if num_prior == batch_size:
            return self.prior.sample(batch_size, generator)
        return concat_transitions(
            self.prior.sample(num_prior, generator), self.online.sample(batch_size - num_prior, generator)
        )
