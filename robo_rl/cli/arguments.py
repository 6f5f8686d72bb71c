"""Options several subcommands share: `--threads` (the thread policy is robo_rl.api.threads) and `--task-param`."""

from __future__ import annotations

import argparse


def positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def add_threads_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--threads",
        type=positive_int,
        metavar="N",
        help="torch CPU threads (default: OMP_NUM_THREADS if set, else the CPUs this process may use less one, "
        "split between the processes of --nproc, at least 1); idle threads sleep (OMP_WAIT_POLICY=PASSIVE unless "
        "set), so a core taken by another process costs its share of the speed, not most of it",
    )


def add_task_param_argument(parser: argparse.ArgumentParser, purpose: str) -> None:
    """`--task-param KEY=VALUE` (repeatable, into `args.task_params`): task changes for `purpose`, applied after
    the run's task.config and task.eval_config (see `make_env`)."""
    parser.add_argument(
        "--task-param",
        dest="task_params",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help=f"change the task {purpose} (repeatable; applied after the run's task.config and task.eval_config)",
    )
