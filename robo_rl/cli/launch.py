"""`robo-rl launch`: run a ROS 2 YAML launch file without ROS (or print its resolved plan)."""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

import robo_rl
from robo_rl.launch import LaunchError, ResolveSettings, describe, plan_commands, resolve_launch_file, run_commands

PACKAGE = "robo_rl"
DESCRIPTION = """\
Resolve a ROS 2 YAML launch file (args, let, include, group, node, executable, if/unless, $(var), $(env),
$(find-pkg-share robo_rl), $(dirname)) and run its processes without ROS; Ctrl-C stops them all.
$(find-pkg-share robo_rl) is the folder holding robo_rl's package.xml (the repository root), as share/robo_rl
is in a colcon install. robo_rl nodes run as console scripts of the same name with --ros-args as launch_ros
passes them (inline parameters in parameter files); `train` runs `robo-rl train`. Unlike ros2 launch, an
undeclared NAME:=VALUE is an error, and the exit status is the first failing node's.
"""


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "launch",
        help="run a ROS 2 YAML launch file without ROS",
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("file", type=Path, metavar="FILE", help="a *.launch.yaml file")
    # REMAINDER so that --dry-run may also follow the NAME:=VALUE arguments (argparse cannot intermix them).
    p.add_argument("arguments", nargs=argparse.REMAINDER, metavar="NAME:=VALUE", help="launch argument values")
    p.add_argument("--dry-run", action="store_true", help="print the resolved processes and their commands only")
    p.set_defaults(func=main)


def parse_arguments(items: list[str]) -> dict[str, str]:
    """`name:=value` strings -> {name: value}; the last one of a name wins."""
    arguments = {}
    for item in items:
        name, sep, value = item.partition(":=")
        if not sep or not name:
            raise LaunchError(f"'{item}': launch arguments are NAME:=VALUE")
        arguments[name] = value
    return arguments


def package_share(launch_file: Path) -> Path | None:
    """robo_rl's share folder: the nearest folder above `launch_file` with robo_rl's package.xml, else the
    checkout robo_rl is imported from, if it has one."""
    candidates = [*launch_file.resolve().parents, Path(robo_rl.__file__).resolve().parents[1]]
    for folder in candidates:
        manifest = folder / "package.xml"
        if manifest.is_file() and f"<name>{PACKAGE}</name>" in manifest.read_text(encoding="utf-8"):
            return folder
    return None


def main(args: argparse.Namespace) -> int:
    share = package_share(args.file)
    settings = ResolveSettings(environ=dict(os.environ), package_shares={PACKAGE: share} if share else {})
    dry_run = args.dry_run or "--dry-run" in args.arguments
    items = [item for item in args.arguments if item != "--dry-run"]
    plan = resolve_launch_file(args.file, parse_arguments(items), settings)
    with tempfile.TemporaryDirectory(prefix="robo_rl_launch_") as params_dir:
        commands = plan_commands(plan, Path(sys.executable).parent, Path(params_dir))
        print(describe(commands) or "(no processes)", flush=True)
        if dry_run:
            return 0
        missing = [command.missing for command in commands if command.missing]
        if missing:
            raise LaunchError(f"cannot run: {'; '.join(missing)} (--dry-run prints the plan only)")
        return run_commands(commands, terminal_sigint=_in_terminal_foreground())


def _in_terminal_foreground() -> bool:
    """Whether this process runs in the foreground of a terminal, whose Ctrl-C then reaches the children too."""
    try:
        return os.tcgetpgrp(sys.stdin.fileno()) == os.getpgrp()
    except (OSError, ValueError):  # no terminal, or stdin closed
        return False
