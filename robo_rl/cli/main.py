"""`robo-rl`: the command-line entry point."""

from __future__ import annotations

import argparse
import importlib
import os
import sys

import robo_rl
from robo_rl.api.bad_file import os_error_line
from robo_rl.api.threads import apply_threads, omp_num_threads, prefer_passive_waiting
from robo_rl.config import ConfigError

# (command, module in robo_rl.cli). Modules import lazily so that a deploy-only install (`robo-rl[real]`, no torch)
# still runs `robo-rl launch`; a command whose extra is missing says which package it lacks.
COMMANDS = (
    ("train", "train"),
    ("eval", "evaluate"),
    ("export", "export"),
    ("import", "import_policy"),
    ("play", "play"),
    ("collect", "collect"),
    ("record-demos", "record_demos"),
    ("demos-from-bag", "bag_demos"),
    ("sysid", "sysid"),
    ("learn", "learn"),
    ("train-classifier", "classifier"),
    ("compare", "compare"),
    ("tasks", "task_list"),
    ("demo", "demo"),
    ("launch", "launch"),
    ("security", "security"),
)

DESCRIPTION = """\
robo_rl: train policies in batched simulators, evaluate them, watch them (play), and export them to ONNX for
deployment. `robo-rl tasks` lists the simulated tasks.
Run `robo-rl COMMAND --help` for each command's options.
"""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="robo-rl", description=DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--version", action="version", version=f"robo-rl {robo_rl.__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for command, module_name in COMMANDS:
        try:
            module = importlib.import_module(f"robo_rl.cli.{module_name}")
        except ModuleNotFoundError as err:
            _add_unavailable(sub, command, str(err.name))
            continue
        module.add_parser(sub)
    return parser


def _add_unavailable(sub: argparse._SubParsersAction, command: str, missing: str) -> None:
    reason = (
        f"not available in this install: it needs the Python package {missing!r} (pip install 'robo-rl[sim,export]')"
    )
    parser = sub.add_parser(command, help=reason, description=reason)
    parser.add_argument("rest", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)

    def fail(_args: argparse.Namespace) -> int:
        print(f"robo-rl {command}: {reason}", file=sys.stderr)
        return 2

    parser.set_defaults(func=fail)


def main(argv: list[str] | None = None, stopped_code: int | None = None) -> int:
    """The `robo-rl` command; its exit status. `stopped_code`: the status of a command that a stop signal ended
    cleanly (everything saved), instead of its own (130 for `robo-rl train`): the ROS node entry's 0."""
    prefer_passive_waiting(os.environ)  # before build_parser imports torch: libgomp reads it when it loads
    from_command_line = argv is None
    argv = sys.argv[1:] if argv is None else argv
    args = build_parser().parse_args(argv)
    args.argv = argv  # recorded in each run's meta.json
    try:
        apply_threads(_requested_threads(args), os.environ)
        code = args.func(args)
    except (ConfigError, ValueError) as err:
        # Bad input is the user's to fix: one line, no traceback.
        print(f"robo-rl {args.command}: error: {err}", file=sys.stderr)
        return 2
    except OSError as err:  # a missing input, or a path the command cannot write (under a file, in /proc, ...)
        print(f"robo-rl {args.command}: error: {os_error_line(err)}", file=sys.stderr)
        return 2
    stopped = getattr(args, "stopped_by_signal", False)
    if stopped and stopped_code is not None and code == 130:
        code = stopped_code
    if from_command_line and stopped:
        # Asked to stop by a launcher, which kills what is still running a few seconds later; everything is saved and
        # closed by now, and the interpreter's finalization (torch, the ONNX exporter) takes another 1-2 s.
        from robo_rl.cli.distributed import exit_now

        exit_now(code)
    return code


def _requested_threads(args: argparse.Namespace) -> int | None:
    """The command's --threads, else OMP_NUM_THREADS (torchrun sets it for its ranks), else None."""
    threads = getattr(args, "threads", None)
    return threads if threads is not None else omp_num_threads(os.environ)


if __name__ == "__main__":
    sys.exit(main())
