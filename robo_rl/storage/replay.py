"""One job, off-policy replay storage: a preallocated ring of transitions on the env's device, and how batches are
drawn from it (uniform, or RLPD / HIL-SERL's symmetric mix with a prior buffer).

A `ReplayBuffer` is a ring of `capacity` transitions. Each transition carries two flags from SERL-style
training: `intervened` (a human took over the action) and `is_demo` (from an offline demonstration). A
`SymmetricSampler` draws a fixed share of every batch from a prior buffer (demonstrations and interventions)
and the rest from the online buffer, as RLPD and HIL-SERL do.

With cameras (`image_specs`), each transition also holds the uint8 frames of every camera before and after the
step (`Transitions.images`, `Transitions.next_images`), in tables beside the vector ones, written to the same slots
and gathered with the same indices, so a frame never parts from its state, action and reward.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

import torch

from robo_rl.image_spec import ImageSpec, check_camera_names
from robo_rl.storage import checkpoint

Frames = dict[str, torch.Tensor]
"""Camera name -> uint8 frames `(B, H, W, C)` of a batch of transitions."""


@dataclass
class Transitions:
    """A batch of B environment transitions; every field is a tensor with leading dimension B.

    Attributes:
        obs: `(B, obs_dim)` policy observation before the step.
        critic_obs: `(B, critic_obs_dim)` critic observation before the step: the obs followed by the privileged
            part when the env has one (see `robo_rl.runners.observations.critic_observation`), else equal to obs.
        actions: `(B, action_dim)` action in the policy's output space, before the actor's scaler maps it onto
            the env's bounds: the space the critic is trained in. Human actions must be mapped back into it.
        rewards: `(B,)` float reward of the step.
        costs: `(B,)` float cost of the step (`info["cost"]` of a task with a constraint, `robo_rl.cost_spec`);
            zeros for a task without one.
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
        images: with cameras, camera name -> uint8 `(B, H, W, C)` frames seen with obs; None without cameras.
        next_images: with cameras, the frames seen with next_obs (from `info["final_obs"]` like next_obs).
    """

    obs: torch.Tensor
    critic_obs: torch.Tensor
    actions: torch.Tensor
    rewards: torch.Tensor
    costs: torch.Tensor
    next_obs: torch.Tensor
    next_critic_obs: torch.Tensor
    terminated: torch.Tensor
    truncated: torch.Tensor
    intervened: torch.Tensor
    is_demo: torch.Tensor
    images: Frames | None = None
    next_images: Frames | None = None

    def __len__(self) -> int:
        return self.obs.shape[0]


IMAGE_FIELD_NAMES = ("images", "next_images")
"""The optional camera fields of `Transitions`; every other field is a tensor (`FIELD_NAMES`)."""
FIELD_NAMES: tuple[str, ...] = tuple(f.name for f in fields(Transitions) if f.name not in IMAGE_FIELD_NAMES)
"""The vector fields of `Transitions`, present in every batch."""
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


def vector_transitions(
    vectors: Mapping[str, torch.Tensor], images: Frames | None = None, next_images: Frames | None = None
) -> Transitions:
    """Transitions from every vector field by name (`FIELD_NAMES`) and, with cameras, the frames."""
    fields: dict[str, Any] = dict(vectors)
    return Transitions(**fields, images=images, next_images=next_images)


def with_costs(vectors: dict[str, Any]) -> dict[str, Any]:
    """Saved vector fields with `costs`: zeros (no constraint) for files written before transitions held costs."""
    rewards = vectors.get("rewards")
    if "costs" in vectors or not isinstance(rewards, torch.Tensor):
        return vectors
    return {**vectors, "costs": torch.zeros_like(rewards)}


def _map_frames(frames: Frames | None, fn: Callable[[str, torch.Tensor], torch.Tensor]) -> Frames | None:
    return None if frames is None else {name: fn(name, tensor) for name, tensor in frames.items()}


def select_transitions(batch: Transitions, mask: torch.Tensor) -> Transitions:
    """The transitions of `batch` where `mask` `(B,)` is true (their frames too)."""
    vectors = {name: getattr(batch, name)[mask] for name in FIELD_NAMES}
    images = [_map_frames(getattr(batch, key), lambda _, t: t[mask]) for key in IMAGE_FIELD_NAMES]
    return vector_transitions(vectors, *images)


def concat_transitions(a: Transitions, b: Transitions) -> Transitions:
    """`a` followed by `b` along the batch dimension; both must be on the same device and have the same cameras."""
    vectors = {name: torch.cat((getattr(a, name), getattr(b, name))) for name in FIELD_NAMES}
    images: list[Frames | None] = []
    for key in IMAGE_FIELD_NAMES:
        first: Frames | None = getattr(a, key)
        second: Frames | None = getattr(b, key)
        if first is None or second is None:
            if (first is None) != (second is None):
                raise ValueError(f"{key}: cannot join transitions with frames and transitions without")
            images.append(None)
        else:
            images.append({name: torch.cat((frames, second[name])) for name, frames in first.items()})
    return vector_transitions(vectors, *images)


def transitions_to(batch: Transitions, device: torch.device | str) -> Transitions:
    """`batch` with every tensor (frames included) on `device`."""
    vectors = {name: getattr(batch, name).to(device) for name in FIELD_NAMES}
    images = [_map_frames(getattr(batch, key), lambda _, t: t.to(device)) for key in IMAGE_FIELD_NAMES]
    return vector_transitions(vectors, *images)


def frame_bytes(specs: tuple[ImageSpec, ...]) -> int:
    """Bytes one transition's frames take in a `ReplayBuffer`: every camera's frame before and after the step."""
    return 2 * sum(math.prod(spec.shape) for spec in specs)


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
        image_specs: the cameras whose frames each transition holds (`robo_rl.envs.CameraEnv.image_specs`); ()
            stores vectors only.

    Memory with cameras: frames are kept as uint8, the frame before and the frame after each step (`frame_bytes`);
    next frames are stored, not looked up in the next slot, because an episode's last frame comes from
    `info["final_obs"]` and never appears as a slot's obs. One 64x64 RGB camera costs 2 x 12,288 B = 24 KiB per
    transition: 100,000 transitions take 2.46 GB (2.3 GiB), 1,000,000 take 24.6 GB, on the buffer's device; a
    capacity of 100k to 200k is what a CPU or a GPU can hold (DrQ used 100k). 128x128 costs four times as much.
    """

    def __init__(
        self,
        capacity: int,
        obs_dim: int,
        critic_obs_dim: int,
        action_dim: int,
        device: torch.device | str,
        image_specs: tuple[ImageSpec, ...] = (),
    ) -> None:
        if capacity < 1:
            raise ValueError(f"capacity must be at least 1, got {capacity}")
        check_camera_names(image_specs)
        self.capacity = capacity
        self.image_specs = tuple(image_specs)
        self.obs_dim, self.critic_obs_dim, self.action_dim = obs_dim, critic_obs_dim, action_dim
        self._row_shapes: dict[str, tuple[int, ...]] = {
            "obs": (obs_dim,),
            "critic_obs": (critic_obs_dim,),
            "actions": (action_dim,),
            "rewards": (),
            "costs": (),
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
        # Frames before and after the step, one uint8 table per camera and side (empty without cameras).
        self._images = {spec.name: _frame_table(capacity, spec, device) for spec in self.image_specs}
        self._next_images = {spec.name: _frame_table(capacity, spec, device) for spec in self.image_specs}
        self._data = self._unpack(self._floats, self._flags)
        self._data.images, self._data.next_images = self._frames_at(None)
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
        for tables, frames in ((self._images, batch.images), (self._next_images, batch.next_images)):
            for camera, table in tables.items():
                table[slots] = frames[camera][n - keep :]  # type: ignore[index]  # _check_batch: present
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
        return self._gather(idx)

    def sample_many(self, batch_size: int, count: int, generator: torch.Generator | None = None) -> list[Transitions]:
        """`count` batches of `batch_size`, drawn with one random call and two gathers for all of them (several
        gradient steps per call without per-batch sampling work); `count=1` draws what `sample` draws."""
        return self.gather_many(self.draw_indices(batch_size, count, generator), count)

    def draw_indices(
        self, batch_size: int, count: int, generator: torch.Generator | None = None, out: torch.Tensor | None = None
    ) -> torch.Tensor:
        """The `count * batch_size` slots `sample_many` gathers, drawn uniformly from the stored ones; into `out`
        (int64, on the buffer's device) when given, so that a captured graph reading `out` sees fresh draws
        (`robo_rl.runners.captured_updates`): the draw depends on the growing length, the gather does not."""
        if self._size == 0:
            raise ValueError("cannot sample from an empty ReplayBuffer")
        shape = (count * batch_size,)
        if out is None:
            return torch.randint(self._size, shape, device=self.device, generator=generator)
        return torch.randint(self._size, shape, device=self.device, generator=generator, out=out)

    def gather_many(self, idx: torch.Tensor, count: int) -> list[Transitions]:
        """The transitions in slots `idx` `(count * batch_size,)` as `count` batches: two row gathers for all of
        them, no host sync (capturable)."""
        gathered = self._gather(idx)
        batch_size = idx.shape[0] // count
        return [_rows(gathered, i * batch_size, (i + 1) * batch_size) for i in range(count)]

    def _gather(self, idx: torch.Tensor) -> Transitions:
        """The transitions in slots `idx`: two row gathers of the vector tables, and the frames at the same slots."""
        batch = self._unpack(self._floats.index_select(0, idx), self._flags.index_select(0, idx))
        batch.images, batch.next_images = self._frames_at(idx)
        return batch

    def _frames_at(self, idx: torch.Tensor | None) -> tuple[Frames | None, Frames | None]:
        """(images, next_images) in slots `idx` (None: the whole tables); (None, None) without cameras."""
        if not self.image_specs:
            return None, None
        pick = (lambda t: t) if idx is None else (lambda t: t.index_select(0, idx))
        return (
            {name: pick(table) for name, table in self._images.items()},
            {name: pick(table) for name, table in self._next_images.items()},
        )

    def _unpack(self, floats: torch.Tensor, flags: torch.Tensor) -> Transitions:
        """Transitions whose fields are views into rows of the packed `floats` and `flags` tables."""
        fields = {}
        for name, (start, stop, shape) in self._columns.items():
            table = flags if name in _FLAG_NAMES else floats
            fields[name] = table[:, start:stop].view(-1, *shape)
        return vector_transitions(fields)

    def stored(self) -> Transitions:
        """Views of the `len(self)` stored transitions, in slot order (not insertion order once wrapped)."""
        return _rows(self._data, 0, self._size)

    def since(self, start: int) -> Transitions:
        """CPU copies of transitions number `start` to `added - 1`, oldest first; the oldest still stored is
        number `added - len(self)` (ValueError for an older `start`)."""
        if not self._added - self._size <= start <= self._added:
            raise ValueError(f"transitions {start}.. are not stored (the buffer holds {self._added - self._size}..)")
        slots = torch.arange(start, self._added, device=self.device) % self.capacity
        # Field by field: a view into a packed table would make torch.save write the whole table per field.
        vectors = {name: getattr(self._data, name)[slots].to("cpu") for name in FIELD_NAMES}
        images, next_images = self._frames_at(slots)
        return transitions_to(vector_transitions(vectors, images, next_images), "cpu")

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
        self.add(transitions_to(_rows(history.transitions, first, len(history.transitions)), self.device))

    def state_dict(self) -> dict[str, Any]:
        """Sizes, ring position and CPU copies of the filled slots only.

        Copies, not views: torch.save writes a view's whole underlying storage, i.e. the full capacity.
        """
        state = {
            **self._dims(),
            "position": self._position,
            "size": self._size,
            "added": self._added,
            "transitions": {name: getattr(self._data, name)[: self._size].to("cpu", copy=True) for name in FIELD_NAMES},
        }
        if self.image_specs:  # only with cameras, so a vector buffer's file is what it always was
            state[IMAGE_SPECS_KEY] = [spec.to_dict() for spec in self.image_specs]
            for key, tables in (("images", self._images), ("next_images", self._next_images)):
                state[key] = {name: table[: self._size].to("cpu", copy=True) for name, table in tables.items()}
        return state

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore a `state_dict`; ValueError naming the field if capacity or a dimension differs."""
        if isinstance(state.get("transitions"), dict):
            state = {**state, "transitions": with_costs(state["transitions"])}
        self._check_sizes(state)
        self._check_fill(state)
        size = state["size"]
        for name in FIELD_NAMES:
            getattr(self._data, name)[:size].copy_(state["transitions"][name])
        for key, tables in (("images", self._images), ("next_images", self._next_images)):
            for name, table in tables.items():
                table[:size].copy_(state[key][name])
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
        for key in IMAGE_FIELD_NAMES if self.image_specs else ():
            for spec in self.image_specs:
                rows = state.get(key, {}).get(spec.name)
                if not isinstance(rows, torch.Tensor) or tuple(rows.shape) != (size, *spec.shape):
                    shape = None if rows is None else tuple(getattr(rows, "shape", ()))
                    raise ValueError(f"{key}.{spec.name}: expected {(size, *spec.shape)}, the file has {shape}")

    def _check_sizes(self, sizes: dict[str, Any]) -> None:
        for name, ours in self._dims().items():
            if name not in sizes:
                raise ValueError(f"replay buffer state lacks {name!r}")
            if sizes[name] != ours:
                raise ValueError(f"{name}: the saved replay buffer has {sizes[name]}, this buffer has {ours}")
        theirs = specs_of_state(sizes)
        if theirs != self.image_specs:
            names = [spec.name for spec in theirs]
            raise ValueError(
                f"{IMAGE_SPECS_KEY}: the saved replay buffer has cameras {names}, this buffer {self._names}"
            )

    @property
    def _names(self) -> list[str]:
        return [spec.name for spec in self.image_specs]

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
        buffer = cls(capacity, obs_dim, critic_obs_dim, action_dim, device=device, image_specs=specs_of_state(state))
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
        for key in IMAGE_FIELD_NAMES:
            self._check_frames(key, getattr(batch, key), n)
        return n

    def _check_frames(self, key: str, frames: Frames | None, n: int) -> None:
        """ValueError unless `frames` holds exactly this buffer's cameras, uint8 `(n, H, W, C)` on its device."""
        if frames is None or not self.image_specs:
            if (frames is None) != (not self.image_specs):
                has = "no frames" if frames is None else f"frames of {sorted(frames)}"
                raise ValueError(f"{key}: the batch has {has}, the buffer stores cameras {self._names}")
            return
        if sorted(frames) != sorted(self._names):
            raise ValueError(f"{key}: the batch has cameras {sorted(frames)}, the buffer stores {self._names}")
        for spec in self.image_specs:
            tensor = frames[spec.name]
            if tuple(tensor.shape) != (n, *spec.shape) or tensor.dtype != torch.uint8:
                got = f"{tuple(tensor.shape)} {tensor.dtype}"
                raise ValueError(f"{key}.{spec.name}: expected uint8 {(n, *spec.shape)}, got {got}")
            if tensor.device != self.device:
                raise ValueError(f"{key}.{spec.name}: on {tensor.device}, the replay buffer is on {self.device}")


IMAGE_SPECS_KEY = "image_specs"
"""Key of a camera buffer's `ImageSpec`s (as dicts) in its state_dict; absent from a vector buffer's."""


def specs_of_state(state: dict[str, Any]) -> tuple[ImageSpec, ...]:
    """The cameras a buffer's saved state holds frames of; () for a vector buffer's (and any older file)."""
    return tuple(ImageSpec.from_dict(spec) for spec in state.get(IMAGE_SPECS_KEY) or ())


def _frame_table(capacity: int, spec: ImageSpec, device: torch.device | str) -> torch.Tensor:
    return torch.zeros(capacity, *spec.shape, dtype=torch.uint8, device=device)


def _rows(batch: Transitions, start: int, stop: int) -> Transitions:
    """Rows `[start, stop)` of every field of `batch` (views), frames included."""
    vectors = {name: getattr(batch, name)[start:stop] for name in FIELD_NAMES}
    images = [_map_frames(getattr(batch, key), lambda _, t: t[start:stop]) for key in IMAGE_FIELD_NAMES]
    return vector_transitions(vectors, *images)


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
        for name in ("obs_dim", "critic_obs_dim", "action_dim", "device", "image_specs"):
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
