"""Checkpoint time of a 1M-transition replay buffer with quadrotor-sized observations: full vs incremental.

Full: the whole filled buffer in one file (what every off-policy latest.pt held before incremental saves;
`robo_rl.storage.checkpoint.save_atomic` of `ReplayBuffer.state_dict()`). Incremental: one chunk file of the
transitions added since the last save (`robo_rl.storage.replay_log.ReplayLog.append` + `commit`), which is what
an off-policy latest.pt now writes. The new transitions per save default to what `quadrotor_hover_sac` collects
in one 60 s `save_every_s` at the rate a user saw (1,200 iterations of 64 envs in 40 s: 115,200). Both are timed
side by side in one process, alternating, with an fsync each (as a checkpoint does); the medians and their
ratio are reported, and so is reading the buffer back (full file vs chunk files).

    python bench/replay_save.py [--transitions 1000000] [--new 115200] [--repeats 5] [--dir DIR]

Writes bench/results/replay_save.json.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

import torch
from machine import machine_info, warn_if_busy

from robo_rl.storage import checkpoint
from robo_rl.storage.replay import ReplayBuffer, Transitions
from robo_rl.storage.replay_log import ReplayLog

RESULTS = Path(__file__).parent / "results" / "replay_save.json"
OBS_DIM, CRITIC_OBS_DIM, ACTION_DIM = 22, 40, 4
"""quadrotor/hover: 22 observations, 40 with the privileged part the critic sees, 4 motor commands."""


def random_transitions(n: int, generator: torch.Generator) -> Transitions:
    def floats(*shape: int) -> torch.Tensor:
        return torch.randn(n, *shape, generator=generator)

    def flags() -> torch.Tensor:
        return torch.rand(n, generator=generator) < 0.01

    return Transitions(
        obs=floats(OBS_DIM),
        critic_obs=floats(CRITIC_OBS_DIM),
        actions=floats(ACTION_DIM),
        rewards=floats(),
        costs=floats(),
        next_obs=floats(OBS_DIM),
        next_critic_obs=floats(CRITIC_OBS_DIM),
        terminated=flags(),
        truncated=flags(),
        intervened=flags(),
        is_demo=flags(),
    )


def fill(buffer: ReplayBuffer, n: int, generator: torch.Generator, batch: int = 100_000) -> None:
    for start in range(0, n, batch):
        buffer.add(random_transitions(min(batch, n - start), generator))


def timed(action: object) -> float:
    started = time.perf_counter()
    action()  # type: ignore[operator]
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--transitions", type=int, default=1_000_000, help="buffer capacity, filled completely")
    parser.add_argument("--new", type=int, default=115_200, help="transitions added between two saves")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--dir", type=Path, help="where the files go (default: a temporary directory)")
    parser.add_argument("--output", type=Path, default=RESULTS)
    args = parser.parse_args()
    load = warn_if_busy()
    directory = Path(tempfile.mkdtemp(prefix="replay_save-", dir=args.dir))
    generator = torch.Generator().manual_seed(0)
    buffer = ReplayBuffer(args.transitions, OBS_DIM, CRITIC_OBS_DIM, ACTION_DIM, "cpu")
    fill(buffer, args.transitions, generator)
    log = ReplayLog(directory / "replay")
    log.commit(log.append(buffer))  # the run's first save: the whole buffer
    full_file = directory / "full.pt"
    full_s, incremental_s = [], []
    for _ in range(args.repeats):
        buffer.add(random_transitions(args.new, generator))
        full_s.append(timed(lambda: checkpoint.save_atomic(buffer.state_dict(), full_file)))
        incremental_s.append(timed(lambda: log.commit(log.append(buffer))))
    manifest = log.append(buffer)  # nothing new: the manifest of the last save
    read_full_s = timed(lambda: checkpoint.load(full_file))
    read_chunks_s = timed(lambda: ReplayLog(directory / "replay").restore(manifest))
    result = {
        "machine": machine_info(),
        "load_average_at_start": load,
        "transitions": args.transitions,
        "bytes_per_transition": full_file.stat().st_size / args.transitions,
        "new_transitions_per_save": args.new,
        "repeats": args.repeats,
        "full_save_s": statistics.median(full_s),
        "incremental_save_s": statistics.median(incremental_s),
        "ratio": statistics.median(full_s) / statistics.median(incremental_s),
        "full_save_runs_s": full_s,
        "incremental_save_runs_s": incremental_s,
        "chunk_files": len(manifest["replay_chunks"]),
        "read_full_s": read_full_s,
        "read_chunks_s": read_chunks_s,
    }
    print(
        f"{args.transitions:,} transitions ({result['bytes_per_transition']:.0f} B each), {args.new:,} new per save: "
        f"full save {result['full_save_s']:.2f} s, incremental {result['incremental_save_s']:.3f} s "
        f"(median of {args.repeats}), ratio {result['ratio']:.1f}x; "
        f"read back: full {read_full_s:.2f} s, {result['chunk_files']} chunks {read_chunks_s:.2f} s"
    )
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {args.output}")
    for path in sorted(directory.rglob("*"), reverse=True):
        path.rmdir() if path.is_dir() else path.unlink()
    directory.rmdir()


if __name__ == "__main__":
    main()
