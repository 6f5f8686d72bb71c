"""Batched simulators implementing `robo_rl.envs.BatchedEnv`; build them by name with `make`."""

from functools import partial

from robo_rl.sim.experts import make_expert
from robo_rl.sim.from_gymnasium import FromGymnasium, GymnasiumTaskConfig
from robo_rl.sim.manager_based import IsaacLabConfig, from_isaaclab
from robo_rl.sim.mjlab_env import from_mjlab
from robo_rl.sim.registry import default_config, make, names, register, task_settings

# By import path: each backend (MuJoCo, PyBullet, matplotlib renderers) loads when its task is first built.
register("pendulum", "robo_rl.sim.pendulum.task:Pendulum")
register("point/obstacle", "robo_rl.sim.point_obstacle.task:PointObstacle")
register("quadrotor/hover", "robo_rl.sim.quadrotor:QuadrotorHover")
register("quadrotor/track", "robo_rl.sim.quadrotor:QuadrotorTrack")
register("rc_car/race", "robo_rl.sim.rc_car:RCCarRace")
register("pybullet/racecar_goal", "robo_rl.sim.pybullet:RacecarGoal")
register("mujoco/cartpole_swingup", "robo_rl.sim.mujoco:CartpoleSwingup")
register("mujoco/arm_reach", "robo_rl.sim.mujoco:ArmReach")
for _gym_id in ("InvertedPendulum-v5", "HalfCheetah-v5"):
    # Gymnasium (MuJoCo) tasks stepped by Gymnasium itself, for training on them and for like-for-like benchmarks.
    register(f"gym/{_gym_id}", partial(FromGymnasium, config=GymnasiumTaskConfig(env_id=_gym_id)))

__all__ = [
    "IsaacLabConfig",
    "default_config",
    "from_isaaclab",
    "from_mjlab",
    "make",
    "make_expert",
    "names",
    "register",
    "task_settings",
]
