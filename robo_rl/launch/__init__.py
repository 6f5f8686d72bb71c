"""Run ROS 2 YAML launch files without ROS: parse (schema), resolve to a Plan (resolver), run (runner)."""

from robo_rl.launch.errors import LaunchError, Location
from robo_rl.launch.resolver import Plan, Process, ResolveSettings, resolve_launch_file
from robo_rl.launch.runner import Command, describe, plan_commands, run_commands, stop_processes
from robo_rl.launch.schema import parse_launch_file, parse_launch_text

__all__ = [
    "Command",
    "LaunchError",
    "Location",
    "Plan",
    "Process",
    "ResolveSettings",
    "describe",
    "parse_launch_file",
    "parse_launch_text",
    "plan_commands",
    "resolve_launch_file",
    "run_commands",
    "stop_processes",
]
