"""Presets of the MuJoCo arm: PPO reaching in simulation, SAC on the arm itself (joint-position commands, and
joint-angle steps for the peg insertion)."""

from __future__ import annotations

from robo_rl.algorithms.ppo import PPOConfig
from robo_rl.experiment import ExperimentConfig, TaskConfig, robot_off_policy
from robo_rl.runners.loop_config import LoopConfig
from robo_rl.runners.on_policy import RunnerConfig
from robo_rl.sim.mujoco.arm_reach import ArmReachConfig


def mujoco_arm_reach_ppo() -> ExperimentConfig:
    """PPO on the MuJoCo 4-DoF arm reaching random targets with joint-position commands; stops at a mean return
    of -10 (sum over 150 steps of -distance in m, +1 per step within 2 cm: about 7 cm mean distance over the
    episode, the approach from the home pose included)."""
    return ExperimentConfig(
        name="mujoco_arm_reach_ppo",
        task=TaskConfig(name="mujoco/arm_reach", num_envs=64, config=ArmReachConfig(action_mode="position")),
        ppo=PPOConfig(num_steps=50, gamma=0.98, lam=0.95, num_epochs=5, num_minibatches=4, value_clip=False),
        runner=RunnerConfig(
            loop=LoopConfig(max_iterations=300, target_return=-10.0, eval_interval=10, eval_episodes=64)
        ),
    )


def robot_arm_sac() -> ExperimentConfig:
    """SAC learning mujoco/arm_reach (joint-position commands) on the arm itself (profile arm, 50 Hz): 30,000
    steps = 10 minutes of robot time."""
    task = TaskConfig(name="mujoco/arm_reach", num_envs=1, config=ArmReachConfig(action_mode="position"))
    return robot_off_policy("robot_arm_sac", task, max_iterations=30_000)


def robot_arm_peg_sac() -> ExperimentConfig:
    """SAC learning mujoco/peg_insert (joint-angle steps from the measured angles, sparse reward) on the arm itself
    (profile arm_peg, 10 Hz): 20,000 steps = 33 minutes of robot time."""
    task = TaskConfig(name="mujoco/peg_insert", num_envs=1)
    return robot_off_policy("robot_arm_peg_sac", task, max_iterations=20_000)


PRESETS = {
    "mujoco_arm_reach_ppo": mujoco_arm_reach_ppo,
    "robot_arm_sac": robot_arm_sac,
    "robot_arm_peg_sac": robot_arm_peg_sac,
}
