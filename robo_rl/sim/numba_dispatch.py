"""Which step a task with a numba kernel runs, and how it runs the kernel: the dispatch the simulators share.

A task config's `backend` ("torch", "numba" or "auto") chooses between the task's torch ops (CPU or CUDA) and one
compiled per-env CPU kernel (`robo_rl.sim.numba_support.Kernel`, in the task's `fused` module). `check_backend`
validates the field, `uses_numba` makes the choice, `KernelRun` runs a kernel on one batch of envs (the threads it
uses; tensors go in as the numpy arrays that share their memory) and `kernel_seed` draws the seed of the kernel's
counter-based random numbers from the task's generator. Nothing here imports numba, so a torch run never loads it.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable, Sequence
from typing import Any, Literal

import torch

Backend = Literal["torch", "numba", "auto"]
BACKENDS: tuple[Backend, ...] = ("torch", "numba", "auto")
FUSED_PARALLEL_ENVS = 256
"""Below this many envs a kernel runs on the calling thread: waking numba's pool costs more than it saves (the
ROS bridge steps one env in real time)."""


def check_backend(owner: str, backend: str, unsupported: Sequence[str]) -> None:
    """ValueError unless `backend` is one of `BACKENDS` and, for "numba", the config needs nothing the kernel
    lacks (`unsupported`: what it would need, in words). `owner` names the config class in the message."""
    if backend not in BACKENDS:
        raise ValueError(f"{owner}.backend must be one of {BACKENDS}, got {backend!r}")
    if backend == "numba" and unsupported:
        raise ValueError(f"{owner}.backend='numba' needs {', '.join(unsupported)}")


def uses_numba(backend: str, applies: bool) -> bool:
    """Whether a task steps with its kernel: always for "numba" (the task then refuses what the kernel cannot
    run), for "auto" where the kernel `applies` (config, device and task fit) and numba is installed."""
    if backend == "numba":
        return True
    return backend == "auto" and applies and importlib.util.find_spec("numba") is not None


def kernel_seed(generator: torch.Generator) -> int:
    """A seed for the kernel's counter-based draws, from the task's generator (one draw, at each full reset)."""
    return int(torch.randint(2**62, (1,), generator=generator))


class KernelRun:
    """A kernel bound to one batch of `num_envs` envs: all of torch's threads from `FUSED_PARALLEL_ENVS` envs up
    (the kernel's parallel copy), else one (its serial copy)."""

    def __init__(self, kernel: Callable[..., None], num_envs: int) -> None:
        self.kernel = kernel
        """`kernel(threads, *arrays)`, a `robo_rl.sim.numba_support.Kernel`."""
        self.threads = torch.get_num_threads() if num_envs >= FUSED_PARALLEL_ENVS else 1
        """numba threads the kernel runs on (1: the serial copy, on the calling thread)."""

    def __call__(self, *args: Any) -> None:
        """Run the kernel once: CPU tensors in `args` (and in tuples of them) go in as numpy views, so the kernel
        writes the tensors in place; other values as they are."""
        self.kernel(self.threads, *(_as_arrays(value) for value in args))


def _as_arrays(value: Any) -> Any:
    if isinstance(value, torch.Tensor):
        return value.numpy()
    if isinstance(value, tuple):
        return tuple(_as_arrays(item) for item in value)
    return value
