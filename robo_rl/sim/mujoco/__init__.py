"""MuJoCo backend: batched MuJoCo tasks behind the `BatchedEnv` contract.

One `MjModel`, one full-physics state row per env, stepped together by `mujoco.rollout` on CPU threads
(`engine.RolloutEngine`) or, optionally, by MJX in JAX (`mjx_engine.MjxEngine`, `backend="mjx"`). Tasks:
`CartpoleSwingup` (`mujoco/cartpole_swingup`), `ArmReach` (`mujoco/arm_reach`) and `PegInsert`
(`mujoco/peg_insert`); MJCF files in `assets/`.

Inside this package `import mujoco` is always the real MuJoCo: imports are absolute, and this package is only
ever importable as `robo_rl.sim.mujoco`.
"""

from robo_rl.sim.mujoco.arm_reach import ARM_ACTION_MODES, ArmReach, ArmReachConfig, use_position_servos
from robo_rl.sim.mujoco.cartpole import CartpoleSwingup, CartpoleSwingupConfig
from robo_rl.sim.mujoco.engine import BACKENDS, PhysicsEngine, RolloutEngine, make_engine
from robo_rl.sim.mujoco.kinematics import SiteKinematics
from robo_rl.sim.mujoco.model import StateLayout, asset_path, load_model
from robo_rl.sim.mujoco.peg_insert import PegInsert, PegInsertConfig, peg_down_ik
from robo_rl.sim.mujoco.rendering import FrameRenderer

__all__ = [
    "ARM_ACTION_MODES",
    "BACKENDS",
    "ArmReach",
    "ArmReachConfig",
    "CartpoleSwingup",
    "CartpoleSwingupConfig",
    "FrameRenderer",
    "PegInsert",
    "PegInsertConfig",
    "PhysicsEngine",
    "RolloutEngine",
    "SiteKinematics",
    "StateLayout",
    "asset_path",
    "load_model",
    "make_engine",
    "peg_down_ik",
    "use_position_servos",
]
