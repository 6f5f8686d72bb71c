"""Batched simulators implementing `robo_rl.envs.BatchedEnv`; build them by name with `make`."""

from robo_rl.sim.pendulum import Pendulum
from robo_rl.sim.registry import make, names, register

register("pendulum", Pendulum)

__all__ = ["make", "names", "register"]
