"""How many CPU threads torch uses, and how its idle OpenMP threads wait.

torch's CPU build runs its parallel kernels on GNU OpenMP (libgomp). A kernel ends when every thread of the team
has done its share, and an idle thread spins (libgomp's default: 300,000 spins, a few milliseconds) before it
sleeps. When another process takes a core, the team's thread on that core waits for the scheduler while the
others spin, taking CPU from everyone: on the 2-core VM, hover PPO with two spinning threads kept about 30 % of
its speed with one core busy, and fell 30x under the load of a few test processes (docs/BENCHMARKS.md, "Threads
under contention").

The defaults therefore are: idle threads sleep at once (OMP_WAIT_POLICY=PASSIVE), and torch gets the CPUs this
process may use less one (`RESERVED_CPUS`), split between the processes of a torchrun job. `--threads N` or
OMP_NUM_THREADS choose another count.

libgomp reads OMP_WAIT_POLICY once, when it is loaded (when torch is imported), so `prefer_passive_waiting`
must run before that; child processes inherit it through the environment. The thread count (`apply_threads`)
can change at any time. This module imports torch only inside `apply_threads`.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, MutableMapping

WAIT_POLICY = "OMP_WAIT_POLICY"
"""libgomp's setting for idle threads: ACTIVE (spin), PASSIVE (sleep), unset (spin a while, then sleep)."""
DEFAULT_WAIT_POLICY = "PASSIVE"
NUM_THREADS = "OMP_NUM_THREADS"
"""The OpenMP thread count a user, a job script or torchrun (1 per rank, unless set) may have chosen."""
RESERVED_CPUS = 1
"""CPUs the default leaves to everything else on the machine. A parallel kernel ends when its slowest thread does,
so a thread whose core another process takes holds up the whole team; on the 2-core VM one thread trained hover
PPO faster than two passive threads, alone and with a busy core (docs/BENCHMARKS.md)."""
LOCAL_WORLD_SIZE = "LOCAL_WORLD_SIZE"
"""Set by torchrun: how many processes of the job run on this machine."""


def usable_cpus() -> int:
    """CPUs this process may run on: its affinity mask (taskset, cpusets), else every CPU of the machine."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def choose_threads(requested: int | None, cpus: int, processes: int = 1) -> int:
    """Torch threads for one process: `requested` when given, else its share of the `cpus` it may use, less
    `RESERVED_CPUS`, when `processes` processes of one job share them (at least 1)."""
    if requested is not None:
        if requested < 1:
            raise ValueError(f"--threads must be at least 1, got {requested}")
        return requested
    return max(1, (cpus - RESERVED_CPUS) // max(1, processes))


def local_processes(environ: Mapping[str, str]) -> int:
    """Processes of this job on this machine: torchrun's LOCAL_WORLD_SIZE, 1 outside torchrun."""
    return int(environ.get(LOCAL_WORLD_SIZE, "1"))


def omp_num_threads(environ: Mapping[str, str]) -> int | None:
    """OMP_NUM_THREADS as a thread count (its first entry for a nested list like "4,2"); None if unset or not a
    positive number."""
    first = environ.get(NUM_THREADS, "").split(",")[0].strip()
    return int(first) if first.isdigit() and int(first) > 0 else None


def rank_environment(environ: Mapping[str, str], nproc: int) -> dict[str, str]:
    """The environment for `nproc` processes of one job on this machine: each gets its share of the usable
    CPUs as OMP_NUM_THREADS unless the user set it (a per-process count, as OpenMP defines it)."""
    share = choose_threads(None, usable_cpus(), nproc)
    return {**environ, NUM_THREADS: environ.get(NUM_THREADS, str(share))}


def prefer_passive_waiting(environ: MutableMapping[str, str]) -> None:
    """Set OMP_WAIT_POLICY=PASSIVE unless the user chose a policy. Must run before torch is imported."""
    environ.setdefault(WAIT_POLICY, DEFAULT_WAIT_POLICY)


def apply_threads(requested: int | None, environ: Mapping[str, str]) -> int | None:
    """Set torch's intra-op thread count (`choose_threads` on this process's CPUs); the count, or None when the
    command never loaded torch (a deploy-only install, `robo-rl launch`)."""
    if "torch" not in sys.modules:
        return None
    import torch

    threads = choose_threads(requested, usable_cpus(), local_processes(environ))
    torch.set_num_threads(threads)
    return threads
