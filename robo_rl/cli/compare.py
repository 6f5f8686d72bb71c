"""`robo-rl compare`: overlay the learning curves of several runs in one PNG."""

from __future__ import annotations

import argparse
from pathlib import Path

from robo_rl.api.bad_file import check_output
from robo_rl.api.runs import read_run_config
from robo_rl.cli.progress import terminal
from robo_rl.runners.learning_curve import COMPARISON_PANELS, plot_comparison
from robo_rl.runners.run_dir import RunDirectory


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "compare",
        help="overlay learning curves of several runs",
        description="Plot, for every RUN_DIR in one PNG, the panels of the learning curve against environment "
        "steps: evaluation return, evaluation success rate and training reward per step (those that any run logged), "
        "or the --metric panels instead; each curve is labelled with its run's algorithm, task, seed and directory "
        "name.",
    )
    p.add_argument("run_dirs", type=Path, nargs="+", metavar="RUN_DIR", help="run directories made by robo-rl train")
    p.add_argument("-o", "--output", type=Path, default=Path("compare.png"), help="PNG to write (default: compare.png)")
    p.add_argument(
        "--metric",
        action="append",
        metavar="KEY",
        help="metrics.jsonl key to plot, one panel each; repeatable (default: "
        + ", ".join(panel.key for panel in COMPARISON_PANELS)
        + ")",
    )
    p.set_defaults(func=main)


def label(run: RunDirectory) -> str:
    cfg = read_run_config(run)
    return f"{cfg.algo} {cfg.task.name} seed {cfg.seed} ({run.path.name})"


def main(args: argparse.Namespace) -> int:
    check_output(args.output, "--output")
    runs = [RunDirectory.open(path) for path in args.run_dirs]
    curves = {label(run): run.metrics() for run in runs}
    keys = args.metric or [panel.key for panel in COMPARISON_PANELS]
    if not any(row.get(key) is not None for key in keys for rows in curves.values() for row in rows):
        raise ValueError(f"no run has any {' or '.join(repr(key) for key in keys)} values in its metrics.jsonl")
    plot_comparison(curves, args.output, keys)
    terminal().print(f"wrote {args.output} ({len(runs)} runs, {', '.join(keys)})")
    return 0
