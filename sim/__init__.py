"""Batched simulators implementing `robo_rl.envs.BatchedEnv`; build them by name with `make`."""

from functools import partial

from robo_rl.sim.from_gymnasium import FromGymnasium, GymnasiumTaskConfig
from robo_rl.sim.pendulum import Pendulum
from robo_rl.sim.quadrotor import QuadrotorHover, QuadrotorTrack
from robo_rl.sim.registry import default_config, make, names, register

register("pendulum", Pendulum)
register("quadrotor/hover", QuadrotorHover)
register("quadrotor/track", QuadrotorTrack)
for _gym_id in ("InvertedPendulum-v5", "HalfCheetah-v5"):
    # Gymnasium (MuJoCo) tasks stepped by Gymnasium itself, for training on them and for like-for-like benchmarks.
    register(f"gym/{_gym_id}", partial(FromGymnasium, config=GymnasiumTaskConfig(env_id=_gym_id)))

__all__ = ["default_config", "make", "names", "register"]
