"""Scripted experts of the tasks (robo_rl.hil.Expert), by task name, for the simulated human of HIL training."""

from __future__ import annotations

import importlib
from typing import Any

from robo_rl.envs import BatchedEnv

# Task → expert class by import path (loaded on first use, like the tasks themselves).
EXPERTS = {
    "pendulum": "robo_rl.sim.pendulum.expert:SwingUpPilot",
    "point/obstacle": "robo_rl.sim.point_obstacle.expert:ObstacleExpert",
    "quadrotor/hover": "robo_rl.sim.quadrotor.expert:HoverPilot",
    "quadrotor/track": "robo_rl.sim.quadrotor.expert:track_pilot",
    "rc_car/race": "robo_rl.sim.rc_car.expert:RaceDriver",
    "mujoco/peg_insert": "robo_rl.sim.mujoco.peg_expert:PegSearchExpert",
    # The camera envs: the same experts, driving the state task inside (they read the true state, not the frames).
    "mujoco/peg_insert_pixels": "robo_rl.sim.mujoco.peg_pixels:peg_search_expert",
    "rc_car/race_pixels": "robo_rl.sim.rc_car.race_pixels:race_driver",
}


def make_expert(task: str, env: BatchedEnv) -> Any:
    """The scripted expert of `task` driving `env` (the unwrapped simulator); ValueError when it has none."""
    if task not in EXPERTS:
        known = ", ".join(sorted(EXPERTS))
        raise ValueError(f"task {task!r} has no scripted expert for a simulated human (tasks with one: {known})")
    module, name = EXPERTS[task].split(":")
    return getattr(importlib.import_module(module), name)(env)
