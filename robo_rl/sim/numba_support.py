"""What the numba kernels of the simulators share (`robo_rl.sim.quadrotor.fused`, `robo_rl.sim.rc_car.fused`):
numba itself with its on-disk cache, compiled copies of an equations module, a counter-based generator and the
kernel compiled twice (`Kernel`). Which step a task runs is `robo_rl.sim.numba_dispatch`'s choice.

Cache: numba keeps compiled kernels in `cache_directory()`, `$ROBO_RL_CACHE` (default ~/.cache/robo_rl) / numba /
a digest of every kernel and equations source, so an edit to any of them never loads a stale kernel (numba's own
check looks at the kernel's file only, not at the functions it inlines). The first process compiles (10-20 s per
kernel), later ones load it (a fraction of a second); `make install` compiles them
(`robo_rl.sim.numba_warm.warm_caches`).

Random numbers: uniform number k of env i at step t under seed S is a hash of (S, t, i, k) (splitmix64 rounds), so
envs draw in parallel without shared generator state and a run is reproducible from its seed and step count.
"""

from __future__ import annotations

import hashlib
import os
import types
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import numpy as np

_SIM = Path(__file__).parent
SOURCES = (
    "numba_support.py", "quadrotor/equations.py", "quadrotor/airframes.py", "quadrotor/fused.py", "rc_car/equations.py",
    "rc_car/fused.py",
)  # fmt: skip
"""The files whose compiled code the cache holds, relative to the sim package."""
FASTMATH = {"contract", "afn", "arcp", "nsz", "reassoc"}
"""Fast-math without "nnan"/"ninf": a NaN state must still fail a bounds test (a crash), never be assumed away."""


def cache_directory() -> Path:
    """`$ROBO_RL_CACHE` (default ~/.cache/robo_rl) / numba / the first 16 hex digits of a digest of `SOURCES`."""
    root = Path(os.environ.get("ROBO_RL_CACHE", Path.home() / ".cache" / "robo_rl"))
    digest = hashlib.sha256()
    for name in SOURCES:
        path = _SIM / name
        digest.update(name.encode() + (path.read_bytes() if path.is_file() else b""))
    return root / "numba" / digest.hexdigest()[:16]


def _import_numba() -> Any:
    try:
        import numba
    except ImportError as err:  # pragma: no cover - numba is a dependency of robo-rl[sim]
        raise ImportError("the numba backend of the simulators needs numba: pip install numba") from err
    config: Any = numba.config
    config.CACHE_DIR = str(cache_directory())  # before any kernel is decorated
    return numba


numba = _import_numba()
uint64 = np.uint64


def jit_copies(module: types.ModuleType, names: Iterable[str], namespace: dict[str, Any]) -> dict[str, Any]:
    """numba versions of `module`'s functions `names`: copies whose globals are `namespace` (the math vocabulary
    the copies should use, e.g. `math.atan2` where the module binds `torch.atan2`) plus each other's compiled
    versions. The module itself stays free of numba."""
    jitted: dict[str, Callable[..., Any]] = {}
    for name in names:
        function = getattr(module, name)
        clone = types.FunctionType(function.__code__, namespace, name, function.__defaults__, function.__closure__)
        jitted[name] = numba.njit(fastmath=FASTMATH, inline="always")(clone)
    namespace.update(jitted)
    return jitted


@numba.njit(fastmath=FASTMATH)
def mix(z: Any) -> Any:
    """splitmix64's finalizer: a bijection of uint64 that spreads every input bit over every output bit."""
    z = (z ^ (z >> uint64(30))) * uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> uint64(27))) * uint64(0x94D049BB133111EB)
    return z ^ (z >> uint64(31))


@numba.njit(cache=True)
def uniform(seed: Any, counter: Any, env: Any, k: Any) -> float:
    """U[0, 1) number k of env `env` at step `counter` under `seed` (24 random bits: what float32 holds)."""
    golden = uint64(0x9E3779B97F4A7C15)
    z = mix(uint64(seed) + golden * uint64(counter + 1))
    z = mix(z + golden * uint64(env + 1))
    z = mix(z + golden * uint64(k + 1))
    return float(z >> uint64(40)) * (1.0 / 16777216.0)


def set_threads(threads: int) -> None:
    """Use `threads` of numba's threads (at most the number it started with)."""
    numba.set_num_threads(max(1, min(threads, numba.config.NUMBA_NUM_THREADS)))


class Kernel:
    """A per-env kernel compiled twice: over the envs in numba's threads (`parallel=True`, `prange`), and as plain
    loops on the calling thread. One thread runs the serial copy: numba's OpenMP layer wakes its whole thread team
    for every `prange` loop even where `numba.set_num_threads(1)` leaves the work to one of them (on a 2-core VM,
    hover PPO reached its gate in 21-24 s with the parallel copy on one thread, 12.4-13.1 s with the pool limited
    to one thread at start-up; the 500-step evaluations, six loops a step, paid most of it; docs/BENCHMARKS.md).
    Each copy has its own disk cache entry (the serial one's name ends in `_serial`)."""

    def __init__(self, function: Callable[..., Any]) -> None:
        self.parallel = numba.njit(parallel=True, cache=True, fastmath=FASTMATH)(function)
        serial = types.FunctionType(
            function.__code__, function.__globals__, f"{function.__name__}_serial", function.__defaults__
        )
        serial.__qualname__ = f"{function.__qualname__}_serial"
        serial.__doc__ = function.__doc__
        self.serial = numba.njit(cache=True, fastmath=FASTMATH)(serial)

    def __call__(self, threads: int, *args: Any) -> None:
        """Run with `threads` of numba's threads (the serial copy for one)."""
        if threads <= 1:
            self.serial(*args)
            return
        set_threads(threads)
        self.parallel(*args)
