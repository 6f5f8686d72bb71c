"""`robo-rl train` across processes: `--nproc N` relaunches under torchrun; under torchrun, join the job.

torchrun (torch.distributed.run) starts one process per rank with RANK, WORLD_SIZE, LOCAL_RANK and the
rendezvous address in the environment. Each joins the default process group (NCCL for a CUDA device, gloo
otherwise). Rank 0 owns the run directory (config, metrics, TensorBoard, latest.pt, export); rank r > 0 writes
only its own part of the state to `checkpoints/rank<r>/` (its envs, replay buffer and random streams), so that
`--resume` with the same number of processes continues every rank where it stopped.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

from robo_rl.api.threads import rank_environment
from robo_rl.distributed import LOCAL, ProcessGroupReducer, Reducer, World


def launched_by_torchrun() -> bool:
    return int(os.environ.get("WORLD_SIZE", "1")) > 1


def relaunch(nproc: int, argv: list[str]) -> int:
    """Run this `robo-rl` command (argv without --nproc) in `nproc` processes on this machine; its exit code."""
    command = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--standalone",
        f"--nproc_per_node={nproc}",
        "-m",
        "robo_rl.cli.main",
        *argv,
    ]
    return subprocess.call(command, env=rank_environment(os.environ, nproc))


def join(device: str) -> Reducer:
    """Join the torchrun job (a no-op reducer when not under torchrun); returns this rank's reducer."""
    if not launched_by_torchrun():
        return LOCAL
    import torch

    world = World(int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"]), int(os.environ.get("LOCAL_RANK", "0")))
    backend = "nccl" if device.startswith("cuda") else "gloo"
    if backend == "nccl":
        torch.cuda.set_device(world.local_rank)
    torch.distributed.init_process_group(backend, timeout=timedelta(minutes=10))
    return ProcessGroupReducer(world)


def rank_device(device: str, world: World) -> str:
    """`cuda` becomes this rank's GPU, cuda:<local_rank>, when several processes share a machine."""
    return f"cuda:{world.local_rank}" if device == "cuda" and world.size > 1 else device


def leave(reducer: Reducer) -> None:
    if reducer.world.size > 1:
        import torch

        torch.distributed.barrier()  # leave together: a rank whose peer already tore gloo down may abort on exit
        torch.distributed.destroy_process_group()


def exit_now(code: int) -> None:
    """End this rank's process with `code` without interpreter finalization. Everything is saved by then, and
    gloo's worker threads can outlive the process group and abort finalization (SIGABRT, "terminate called
    without an active exception"; pytorch/pytorch#190489), which torchrun would report as a failed run."""
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


class RankRun:
    """What rank r > 0 has of rank 0's run directory: its own checkpoint file; no logs."""

    def __init__(self, path: Path, rank: int) -> None:
        self.path = path
        self.checkpoints = path / "checkpoints" / f"rank{rank}"
        self.checkpoints.mkdir(parents=True, exist_ok=True)
        self.latest_checkpoint = self.checkpoints / "latest.pt"

    def log(self, metrics: dict[str, Any]) -> None:
        pass

    def finish(self, save_checkpoint: Callable[[Path], None]) -> None:
        save_checkpoint(self.latest_checkpoint)

    def plot_learning_curve(self) -> None:
        pass

    def truncate_metrics(self, after_iteration: int) -> None:
        pass
