"""`robo-rl collect`: record a trained policy's transitions as a demonstration buffer for RLPD training."""

from __future__ import annotations

import argparse
import math
from pathlib import Path

from robo_rl.api.bad_file import check_output
from robo_rl.api.runs import load_trained, make_env
from robo_rl.cli.arguments import add_threads_argument
from robo_rl.cli.progress import terminal
from robo_rl.runners.collect import collect_demonstrations

DESCRIPTION = """\
Run the deterministic policy of RUN_DIR (optionally with action noise) on its task and save the transitions,
flagged as demonstrations, to a replay buffer file. Train an off-policy agent that samples half of every batch
from it (RLPD):
  robo-rl train pendulum_sac --set off_policy.prior_buffer=FILE
"""


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "collect",
        help="record demonstrations from a trained policy",
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("run_dir", type=Path, help="run directory of the expert policy (made by robo-rl train)")
    p.add_argument("--transitions", type=int, default=5_000, help="transitions to record (default: 5000)")
    p.add_argument("--envs", type=int, default=10, help="parallel envs (default: 10)")
    p.add_argument("--noise", type=float, default=0.0, help="std of Gaussian noise on normalized actions (default 0)")
    p.add_argument("--seed", type=int, default=0, help="seed of initial states and noise (default: 0)")
    p.add_argument(
        "--checkpoint",
        type=Path,
        help="checkpoint (default: RUN_DIR/checkpoints/best.pt, the best evaluation, else latest.pt)",
    )
    p.add_argument("-o", "--output", type=Path, help="buffer file to write (default: RUN_DIR/demonstrations.pt)")
    add_threads_argument(p)
    p.set_defaults(func=main)


def main(args: argparse.Namespace) -> int:
    if args.envs < 1:
        raise ValueError(f"--envs must be at least 1, got {args.envs}")
    if not math.isfinite(args.noise) or args.noise < 0:
        raise ValueError(f"--noise must be a finite std >= 0, got {args.noise}")
    if args.output is not None:
        check_output(args.output, "--output")
    trained = load_trained(args.run_dir, args.checkpoint)
    env = make_env(trained.cfg, num_envs=args.envs, device="cpu")
    demos = collect_demonstrations(env, trained.actor, args.transitions, seed=args.seed, noise_std=args.noise)
    output = args.output or args.run_dir / "demonstrations.pt"
    demos.buffer.save(output)
    ret = "none finished" if demos.mean_return is None else f"mean return {demos.mean_return:.1f}"
    console = terminal()
    console.print(f"wrote {len(demos.buffer):,} transitions to {output} ({demos.episodes} episodes, {ret})")
    console.print(f"train with them: robo-rl train CONFIG --set off_policy.prior_buffer={output}")
    return 0
