"""`robo-rl compare`: overlay the learning curves of several runs in one PNG."""

from __future__ import annotations

import argparse
from pathlib import Path

from robo_rl.cli.progress import terminal
from robo_rl.config import load_yaml
from robo_rl.experiment import ExperimentConfig
from robo_rl.runners.learning_curve import plot_comparison
from robo_rl.runners.run_dir import RunDirectory


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "compare",
        help="overlay learning curves of several runs",
        description="Plot the evaluation return (or --metric) against environment steps for every RUN_DIR in one "
        "PNG; each curve is labelled with its run's algorithm, task, seed and directory name.",
    )
    p.add_argument("run_dirs", type=Path, nargs="+", metavar="RUN_DIR", help="run directories made by robo-rl train")
    p.add_argument("-o", "--output", type=Path, default=Path("compare.png"), help="PNG to write (default: compare.png)")
    p.add_argument("--metric", default="eval_return", help="metrics.jsonl key to plot (default: eval_return)")
    p.set_defaults(func=main)


def label(run: RunDirectory) -> str:
    cfg = load_yaml(ExperimentConfig, run.config_file)
    return f"{cfg.algo} {cfg.task.name} seed {cfg.seed} ({run.path.name})"


def main(args: argparse.Namespace) -> int:
    runs = [RunDirectory.open(path) for path in args.run_dirs]
    curves = {label(run): run.metrics() for run in runs}
    if not any(row.get(args.metric) is not None for rows in curves.values() for row in rows):
        raise ValueError(f"no run has any {args.metric!r} values in its metrics.jsonl")
    plot_comparison(curves, args.output, args.metric)
    terminal().print(f"wrote {args.output} ({len(runs)} runs, {args.metric})")
    return 0
