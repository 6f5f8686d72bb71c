"""Presets of the PyBullet racecar."""

from __future__ import annotations

from robo_rl.algorithms.ppo import PPOConfig
from robo_rl.experiment import ExperimentConfig, TaskConfig
from robo_rl.runners.loop_config import LoopConfig
from robo_rl.runners.on_policy import RunnerConfig


def pybullet_racecar_goal_ppo() -> ExperimentConfig:
    """PPO on the PyBullet racecar driving to random goals (32 envs: each is a PyBullet client); stops when 90 %
    of the evaluation episodes reach their goal."""
    return ExperimentConfig(
        name="pybullet_racecar_goal_ppo",
        task=TaskConfig(name="pybullet/racecar_goal", num_envs=32),
        ppo=PPOConfig(num_steps=64, gamma=0.99, lam=0.95, num_epochs=5, num_minibatches=4, value_clip=False),
        runner=RunnerConfig(
            loop=LoopConfig(max_iterations=200, target_success_rate=0.9, eval_interval=10, eval_episodes=32)
        ),
    )


PRESETS = {
    "pybullet_racecar_goal_ppo": pybullet_racecar_goal_ppo,
}
