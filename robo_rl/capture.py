"""Run a block of tensor code as one captured graph, replayed without Python: CUDA graphs on a GPU.

A training iteration on a GPU is bound by kernel launches, not arithmetic (docs/BENCHMARKS.md, "On a GPU"): the
quadrotor step alone is hundreds of small kernels. `Captured` records a block once (`torch.cuda.CUDAGraph`) and
replays it as one launch. What a block must be to replay correctly:

- **No host sync** (`.item()`, `bool(t)`, `.tolist()`, `nonzero`): capture refuses them.
- **No random call**: draw the block's random numbers before it into tensors it reads (`StaticDraws`), so a
  replay uses fresh numbers and the eager run the same ones.
- **Python state is frozen at capture.** Counters, branches and Python scalars take the values they had then.
  A value that changes between calls (a curriculum's fraction, a learning rate) must be a tensor.
- **Tensor state**: a block may rebind an object's tensor attributes (`env._state = new`); name the objects as
  `owners` and `Captured` copies the new values back into the tensors the graph reads (`StaticSlots`), so each
  replay starts where the last ended. Code that runs between replays and rebinds them (a reset, a checkpoint
  load) is copied in before the next replay.

Every call of a `Captured` runs the block once: the first eagerly (warm-up: lazy allocations, optimizer state,
cuBLAS workspaces), the second captures and replays it, later ones replay it. Backends: "cuda" (a CUDA graph),
"eager" (the same code without a graph: the CPU path, and the reference the graph is tested against) and "fx"
(`make_fx` records the block as a graph of tensor operations on the CPU and replays it the same way, Python
frozen: how the CPU tests hold the capture's semantics to the eager run, tests/robo_rl/test_capture.py).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable
from typing import Any, Literal

import torch

CaptureBackend = Literal["cuda", "eager", "fx"]
CAPTURE_BACKENDS: tuple[str, ...] = ("cuda", "eager", "fx")
CaptureMode = Literal["never", "auto", "always"]
CAPTURE_MODES: tuple[str, ...] = ("never", "auto", "always")
"""A runner's `capture` setting: "never" the classic loop; "always" the capture-ready code path (a CUDA graph on a
GPU, eager on the CPU); "auto" that path where the device is CUDA, the classic loop elsewhere. (Not on/off: YAML
reads those as booleans.)"""


class CaptureError(RuntimeError):
    """The block cannot be captured (a host sync, a random call, state that changes kind)."""


def capture_backend(device: torch.device | str) -> CaptureBackend:
    """ "cuda" on a CUDA device, "eager" elsewhere."""
    return "cuda" if torch.device(device).type == "cuda" else "eager"


def capture_enabled(mode: str, device: torch.device | str) -> bool:
    """Whether a runner's `capture` setting (`CAPTURE_MODES`) turns the capture-ready path on for `device`."""
    if mode not in CAPTURE_MODES:
        raise ValueError(f"capture must be one of {CAPTURE_MODES}, got {mode!r}")
    return mode == "always" or (mode == "auto" and torch.device(device).type == "cuda")


def static_copy(value: Any) -> Any:
    """A copy of `value` (tensors, dataclasses and tuples of them, other values as they are) to pin for a graph."""
    if isinstance(value, torch.Tensor):
        return value.detach().clone()
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        fields = {f.name: static_copy(getattr(value, f.name)) for f in dataclasses.fields(value)}
        return dataclasses.replace(value, **fields)
    if isinstance(value, tuple) and hasattr(value, "_fields"):  # a NamedTuple
        return type(value)(*(static_copy(item) for item in value))
    if isinstance(value, tuple | list):
        return type(value)(static_copy(item) for item in value)
    return value


def _dense(value: Any) -> Any:
    """`value` itself, or a copy whose tensors with overlapping elements (stride 0: `expand`) are made contiguous."""
    if isinstance(value, torch.Tensor):
        overlapping = any(stride == 0 and size > 1 for stride, size in zip(value.stride(), value.shape, strict=True))
        return value.contiguous().clone() if overlapping else value
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        fields = {f.name: _dense(getattr(value, f.name)) for f in dataclasses.fields(value)}
        changed = any(fields[name] is not getattr(value, name) for name in fields)
        return dataclasses.replace(value, **fields) if changed else value
    if isinstance(value, tuple | list):
        items = [_dense(item) for item in value]
        if all(a is b for a, b in zip(items, value, strict=True)):
            return value
        return type(value)(*items) if hasattr(value, "_fields") else type(value)(items)
    return value


def _holds_tensor(value: Any) -> bool:
    if isinstance(value, torch.Tensor):
        return True
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return any(_holds_tensor(getattr(value, f.name)) for f in dataclasses.fields(value))
    if isinstance(value, tuple | list):
        return any(_holds_tensor(item) for item in value)
    return False


def copy_into(static: Any, new: Any, where: str) -> None:
    """Copy the tensors of `new` into those of `static`, which has the same structure (tensors, dataclasses, tuples;
    other values must be equal: a graph froze them). `where` names the value in the error."""
    if static is new:
        return
    if isinstance(static, torch.Tensor):
        if not isinstance(new, torch.Tensor) or new.shape != static.shape or new.dtype != static.dtype:
            raise CaptureError(f"{where} changed shape or kind inside a captured block ({static.shape} -> {new!r:.60})")
        static.copy_(new)
    elif dataclasses.is_dataclass(static) and not isinstance(static, type):
        if type(new) is not type(static):
            raise CaptureError(f"{where} changed type inside a captured block")
        for f in dataclasses.fields(static):
            copy_into(getattr(static, f.name), getattr(new, f.name), f"{where}.{f.name}")
    elif isinstance(static, tuple | list):
        if type(new) is not type(static) or len(new) != len(static):  # NamedTuples too
            raise CaptureError(f"{where} changed structure inside a captured block")
        for i, (a, b) in enumerate(zip(static, new, strict=True)):
            copy_into(a, b, f"{where}[{i}]")
    elif static != new:
        raise CaptureError(f"{where} changed from {static!r} to {new!r} inside a captured block")


class StaticDraws:
    """Per-step random numbers, drawn eagerly before a captured block into tensors it reads at fixed addresses."""

    def __init__(self, steps: int) -> None:
        self.steps = steps
        self.values: list[Any] = [None] * steps
        """Step `t`'s draws (tensors, or a dataclass or tuple of them), pinned at the first `fill`."""

    def fill(self, t: int, value: Any) -> None:
        """Store step `t`'s draws (copied into the step's pinned tensors after the first time)."""
        if self.values[t] is None:
            self.values[t] = static_copy(value)
        else:
            with torch.no_grad():
                copy_into(self.values[t], value, f"draws of step {t}")


class StaticSlots:
    """The tensor attributes of some objects, pinned to the tensors a graph reads and writes.

    `pin()` records each owner's attributes that hold tensors (directly, or in a dataclass or tuple).
    `write_back()` (at the end of the captured block) copies the values the block rebound into the pinned
    tensors and rebinds the attributes to them; `copy_in()` (before a replay) does the same for values that eager
    code rebound since.
    """

    def __init__(self, owners: Iterable[object]) -> None:
        self.owners = tuple(owners)
        self._pinned: list[dict[str, Any]] = []

    def pin(self) -> None:
        """Record the tensors the graph will read; an expanded view (several elements on one memory location,
        which cannot be written into) is replaced by a dense copy first."""
        self._pinned = []
        for owner in self.owners:
            pinned = {}
            for name, value in vars(owner).items():
                if _holds_tensor(value):
                    pinned[name] = _dense(value)
                    if pinned[name] is not value:
                        setattr(owner, name, pinned[name])
            self._pinned.append(pinned)

    def write_back(self) -> None:
        """Inside the block, at its end: copy into the pinned tensors; refuse attributes the block added."""
        for owner, pinned in zip(self.owners, self._pinned, strict=True):
            added = [k for k, v in vars(owner).items() if k not in pinned and _holds_tensor(v)]
            if added:
                raise CaptureError(f"{type(owner).__name__} gained tensor attributes inside a captured block: {added}")
            self._restore(owner, pinned)

    def copy_in(self) -> None:
        """Before a replay: attributes that eager code rebound since are copied into the pinned tensors."""
        for owner, pinned in zip(self.owners, self._pinned, strict=True):
            self._restore(owner, pinned)

    @staticmethod
    def _restore(owner: object, pinned: dict[str, Any]) -> None:
        for name, static in pinned.items():
            current = getattr(owner, name)
            if current is not static:
                copy_into(static, current, f"{type(owner).__name__}.{name}")
                setattr(owner, name, static)


class Captured:
    """`block()` run as a replayed graph from its second call on (see the module docstring).

    Args:
        block: the code to capture; it returns nothing (results go into tensors it writes in place, or into
            attributes of `owners`).
        owners: objects whose tensor attributes the block rebinds (the env, the runner, ...).
        backend: "cuda", "eager" or "fx" (`CAPTURE_BACKENDS`).
    """

    def __init__(self, block: Callable[[], None], owners: Iterable[object] = (), backend: CaptureBackend = "eager"):
        if backend not in CAPTURE_BACKENDS:
            raise ValueError(f"capture backend must be one of {CAPTURE_BACKENDS}, got {backend!r}")
        self.block, self.backend = block, backend
        self.slots = StaticSlots(owners)
        self.calls = 0
        self._graph: Any = None

    @property
    def captured(self) -> bool:
        return self._graph is not None

    def __call__(self) -> None:
        """Run the block once: eagerly the first time (and always with "eager"), then captured and replayed."""
        self.calls += 1
        if self.backend == "eager" or self.calls == 1:
            self._warm_up()
        elif self._graph is None:
            self._capture()
            if self.backend == "cuda":  # a CUDA capture records without running; fx's recording is the run
                self._replay()
        else:
            self.slots.copy_in()
            self._replay()

    def _warm_up(self) -> None:
        if self.backend != "cuda":
            self.block()
            return
        stream = torch.cuda.Stream()
        stream.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(stream):
            self.block()
        torch.cuda.current_stream().wait_stream(stream)

    def _body(self) -> None:
        self.block()
        self.slots.write_back()

    def _capture(self) -> None:
        self.slots.pin()
        if self.backend == "fx":
            from torch.fx.experimental.proxy_tensor import make_fx

            # make_fx records while it runs (this call's run); it traces a function of at least one tensor
            self._graph = make_fx(lambda _: self._body())(torch.zeros(()))
            return
        graph = torch.cuda.CUDAGraph()
        try:
            with torch.cuda.graph(graph):
                self._body()
        except RuntimeError as error:
            raise CaptureError(
                f"CUDA graph capture failed (a host sync or a random call in the block?): {error}"
            ) from error
        self._graph = graph

    def _replay(self) -> None:
        if self.backend == "fx":
            self._graph(torch.zeros(()))
        else:
            self._graph.replay()
