"""`robo-rl`: the command-line entry point."""

from __future__ import annotations

import argparse
import sys

import robo_rl
from robo_rl.cli import collect, compare, demo, evaluate, export, launch, play, task_list, train
from robo_rl.config import ConfigError

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
    for command in (train, evaluate, export, play, collect, compare, task_list, demo, launch):
        command.add_parser(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args = build_parser().parse_args(argv)
    args.argv = argv  # recorded in each run's meta.json
    try:
        return args.func(args)
    except (ConfigError, FileNotFoundError, ValueError) as err:
        # Bad input is the user's to fix: one line, no traceback.
        print(f"robo-rl {args.command}: error: {err}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
