"""Batched simulators implementing `robo_rl.envs.BatchedEnv`; build them by name with `make`."""

from functools import partial
from importlib.util import find_spec
from typing import cast

from robo_rl.sim.experts import make_expert
from robo_rl.sim.from_gymnasium import FromGymnasium, GymnasiumTaskConfig
from robo_rl.sim.manager_based import IsaacLabConfig, from_isaaclab
from robo_rl.sim.mjlab_env import from_mjlab
from robo_rl.sim.registry import EnvFactory, about, default_config, make, names, register, task_settings, vehicle_card
from robo_rl.sim.safety_gym import from_safety_gymnasium

# By import path: each backend (MuJoCo, PyBullet, matplotlib renderers) loads when its task is first built. The backend
# and the description are README's task table (docs/readme_lists.py writes it; tasks with the same pair share a row).
_MUJOCO = "MuJoCo (`mujoco.rollout` on CPU threads; MJX with `backend=mjx` where JAX is installed)"
_QUADROTOR = "Crazyflie-class quadrotor: hover from random states, figure-eight tracking"
_MUJOCO_TASKS = "cart-pole swing-up; 4-DoF arm reaching targets with joint torques or joint positions"
register("pendulum", "robo_rl.sim.pendulum.task:Pendulum", about="Gymnasium's Pendulum-v1 swing-up, batched")
_QUADROTOR_CARD = "robo_rl.sim.quadrotor.vehicle_card:quadrotor_card"
register("quadrotor/hover", "robo_rl.sim.quadrotor:QuadrotorHover", about=_QUADROTOR, vehicle=_QUADROTOR_CARD)
register("quadrotor/track", "robo_rl.sim.quadrotor:QuadrotorTrack", about=_QUADROTOR, vehicle=_QUADROTOR_CARD)
register(
    "quadrotor/hover_teacher",
    "robo_rl.sim.quadrotor.teacher:QuadrotorHoverTeacher",
    about="the hover task whose actor also sees the drawn airframe: the teacher a memory student is distilled from",
)
register(
    "rc_car/race",
    "robo_rl.sim.rc_car:RCCarRace",
    about="F1TENTH-class car (dynamic bicycle, magic-formula tires, latency) racing laps on a track (built-in "
    "`oval`, `kidney`, `technical`, or a CSV of `x_m,y_m,width_m`); `robo_rl.sim.rc_car.PurePursuit` is the "
    "baseline and scripted expert",
)
register("mujoco/cartpole_swingup", "robo_rl.sim.mujoco:CartpoleSwingup", _MUJOCO, _MUJOCO_TASKS)
register("mujoco/arm_reach", "robo_rl.sim.mujoco:ArmReach", _MUJOCO, _MUJOCO_TASKS)
register(
    "mujoco/peg_insert",
    "robo_rl.sim.mujoco:PegInsert",
    "MuJoCo (`mujoco.rollout` on CPU threads; no MJX)",
    "the 4-DoF arm inserting a round peg into a hole with 1 mm clearance, placed at random and seen through a noisy "
    "estimate; sparse reward: a contact-rich task for learning with human corrections",
)
_PIXELS = "MuJoCo offscreen frames (EGL/OSMesa, `robo_rl.sim.mujoco.cameras`) of a task's state"
register(
    "mujoco/peg_insert_pixels",
    "robo_rl.sim.mujoco.peg_pixels:PegInsertPixels",
    _PIXELS,
    "camera envs (dict observations, `robo_rl.envs.CameraEnv`): the peg insertion seen by a wrist and a side camera; "
    "the RC car race seen by a forward camera on a textured track",
)
register(
    "rc_car/race_pixels",
    "robo_rl.sim.rc_car.race_pixels:RCCarRacePixels",
    _PIXELS,
    "camera envs (dict observations, `robo_rl.envs.CameraEnv`): the peg insertion seen by a wrist and a side camera; "
    "the RC car race seen by a forward camera on a textured track",
)
register(
    "pybullet/racecar_goal",
    "robo_rl.sim.pybullet:RacecarGoal",
    "PyBullet (one DIRECT client per env)",
    "pybullet_data's racecar driving to random goals",
)
register(
    "point/obstacle",
    "robo_rl.sim.point_obstacle.task:PointObstacle",
    about="a point robot reaching a goal past an obstacle, left or right: its scripted expert's demonstrations are "
    "bimodal, and their average drives into the obstacle",
)
register(
    "double_integrator",
    "robo_rl.sim.double_integrator:DoubleIntegrator",
    about="a cart on a rail brought to rest at the origin (Newton's law, exactly): the smallest task, written as the "
    "example of a new one",
)
register(
    "double_integrator/pixels",
    "robo_rl.sim.double_integrator.pixels:PixelDoubleIntegrator",
    about="the cart seen by a tiny camera drawn in torch (velocity in the state, position only in the pixels): the "
    "smallest camera task, for learning from pixels without GL",
)
register(
    "electric_motor/current",
    "robo_rl.sim.electric_motor.current_control:PmsmCurrentControl",
    about="a permanent-magnet synchronous motor on a two-level inverter (GEM's motor, dead time, sensor noise, one "
    "period of delay) following random dq current references at 10 kHz; GEM judges it, PI/FOC is the baseline",
)
register(
    "electric_motor/speed",
    "robo_rl.sim.electric_motor.speed_control:PmsmSpeedControl",
    about="the PMSM on a shaft with inertia and friction, brought to random speeds at 1 kHz by a torque command above "
    "the 10 kHz PI/FOC current loop",
)
for _gym_id in ("InvertedPendulum-v5", "HalfCheetah-v5"):
    # Gymnasium (MuJoCo) tasks stepped by Gymnasium itself, for training on them and for like-for-like benchmarks.
    # Their Box observations make FromGymnasium a BatchedEnv (a Dict space of frames would make it a CameraEnv).
    register(
        f"gym/{_gym_id}",
        cast(EnvFactory, partial(FromGymnasium, config=GymnasiumTaskConfig(env_id=_gym_id))),
        "Gymnasium",
        "Gymnasium tasks stepped by Gymnasium, as batched envs",
    )
if find_spec("safety_gymnasium") is not None:
    # Only where Safety-Gymnasium is installed (.venv-safety, `make safety-venv`): it cannot share a venv with the
    # main one's gymnasium and mujoco, and a task that fails to build would break `robo-rl tasks` there. Other ids:
    # its env_id field, or `from_safety_gymnasium`.
    register(
        "safety_gym/SafetyPointGoal1-v0",
        "robo_rl.sim.safety_gym:SafetyGymnasiumEnv",
        "Safety-Gymnasium (its own venv: `make safety-venv`)",
        "Safety-Gymnasium's navigation tasks with their cost (a point robot reaching goals past hazards), for "
        "comparing --algo ppo_lag with OmniSafe",
    )

__all__ = [
    "IsaacLabConfig",
    "about",
    "default_config",
    "from_isaaclab",
    "from_mjlab",
    "from_safety_gymnasium",
    "make",
    "make_expert",
    "names",
    "register",
    "task_settings",
    "vehicle_card",
]
