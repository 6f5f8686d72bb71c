"""`robo-rl tasks`: the registered simulated tasks with their observation and action specs."""

from __future__ import annotations

import argparse
import json
import textwrap
from typing import Any

from robo_rl.cli.progress import terminal
from robo_rl.config import to_dict
from robo_rl.envs import RenderableEnv

_WIDTH = 110


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "tasks",
        help="list the registered tasks and their observation/action specs",
        description="Without NAME: every task registered in robo_rl.sim with its observation, action and "
        "privileged (critic-only) vector sizes, control period, episode length and whether `robo-rl play` can "
        "render it, then its element names and units. With NAME: that task in full, each element with its "
        "bounds and unit, and its config fields with their defaults (override them with --set task.KEY=VALUE, "
        "e.g. task.randomization.mass=0.2, or under task.config in a YAML config). Builds one env of each task "
        "to read its specs.",
    )
    p.add_argument("name", nargs="?", help="a task name, e.g. quadrotor/hover")
    p.add_argument("--json", action="store_true", help="print JSON (a list of task descriptions) instead of text")
    p.set_defaults(func=main)


def describe_task(name: str) -> dict[str, Any]:
    """Name, config defaults, timing, specs and render support of registered task `name` (builds one env)."""
    from robo_rl.sim import default_config, make

    env = make(name, num_envs=1, device="cpu", seed=0)
    try:
        privileged = getattr(env, "privileged_obs_spec", None)
        return {
            "name": name,
            "config_type": type(default_config(name)).__name__,
            "config": to_dict(default_config(name)),
            "dt": env.dt,
            "max_episode_steps": env.max_episode_steps,
            "renders": isinstance(env, RenderableEnv),
            "obs": env.obs_spec.to_dict(),
            "action": env.action_spec.to_dict(),
            "privileged_obs": None if privileged is None else privileged.to_dict(),
        }
    finally:
        close = getattr(env, "close", None)
        if callable(close):
            close()


def summary_text(task: dict[str, Any]) -> str:
    """A few lines per task: sizes, timing, then the element names with units."""
    privileged = task["privileged_obs"]
    sizes = f"obs {len(task['obs']['names'])}, action {len(task['action']['names'])}"
    sizes += f", privileged {len(privileged['names'])}" if privileged else ""
    seconds = task["dt"] * task["max_episode_steps"]
    head = (
        f"{task['name']}  ({task['config_type']}; {sizes}; dt {task['dt']:g} s; episode {task['max_episode_steps']} "
        f"steps = {seconds:g} s; render {'yes' if task['renders'] else 'no'})"
    )
    lines = [head]
    for label in ("obs", "action", "privileged_obs"):
        if task[label]:
            lines.append(_wrap(f"{label}: " + ", ".join(_element(task[label], i) for i in _indices(task[label]))))
    return "\n".join(lines)


def detail_text(task: dict[str, Any]) -> str:
    """Every element with bounds and unit, and the config fields with their defaults."""
    lines = [summary_text(task).splitlines()[0]]
    for label in ("obs", "action", "privileged_obs"):
        spec = task[label]
        if not spec:
            continue
        lines.append(f"\n{label} ({len(spec['names'])}):")
        width = max(len(name) for name in spec["names"])
        for i in _indices(spec):
            low, high = spec["low"][i], spec["high"][i]
            lines.append(f"  {i:>3}  {spec['names'][i]:<{width}}  [{low:g}, {high:g}]  {spec['units'][i]}")
    lines.append("\nconfig defaults (task.config keys):")
    lines.extend(f"  {key} = {value}" for key, value in _flatten(task["config"]))
    return "\n".join(lines)


def _indices(spec: dict[str, list[Any]]) -> range:
    return range(len(spec["names"]))


def _element(spec: dict[str, list[Any]], i: int) -> str:
    unit = spec["units"][i]
    return f"{spec['names'][i]}[{unit}]" if unit else spec["names"][i]


def _wrap(text: str) -> str:
    return textwrap.fill(
        text,
        width=_WIDTH,
        initial_indent="  ",
        subsequent_indent="      ",
        break_long_words=False,
        break_on_hyphens=False,
    )


def _flatten(config: dict[str, Any], prefix: str = "") -> list[tuple[str, Any]]:
    items: list[tuple[str, Any]] = []
    for key, value in config.items():
        if isinstance(value, dict):
            items.extend(_flatten(value, f"{prefix}{key}."))
        else:
            items.append((f"{prefix}{key}", value))
    return items


def main(args: argparse.Namespace) -> int:
    from robo_rl.sim import names

    tasks = [args.name] if args.name else names()
    described = [describe_task(name) for name in tasks]
    if args.json:
        print(json.dumps(described, indent=2))
        return 0
    console = terminal()
    if args.name:
        console.print(detail_text(described[0]), markup=False, highlight=False)
        return 0
    console.print("\n\n".join(summary_text(task) for task in described), markup=False, highlight=False)
    return 0
