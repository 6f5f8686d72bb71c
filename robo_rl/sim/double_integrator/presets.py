"""Presets of the double integrator: PPO on the cart's state, and pixel SAC (DrQ) on `double_integrator/pixels`."""

from __future__ import annotations

from dataclasses import replace

from robo_rl.algorithms.encoder_config import EncoderConfig
from robo_rl.algorithms.ppo import PPOConfig
from robo_rl.algorithms.sac import SACConfig
from robo_rl.experiment import ExperimentConfig, TaskConfig
from robo_rl.runners.loop_config import LoopConfig
from robo_rl.runners.off_policy_config import OFF_POLICY_LOOP, OffPolicyRunnerConfig
from robo_rl.runners.on_policy import RunnerConfig


def double_integrator_ppo() -> ExperimentConfig:
    """PPO bringing the cart to rest: 256 carts x 16 steps per update; stops when 95 % of 200 evaluation episodes
    end within 5 cm of the origin, slower than 0.1 m/s."""
    return ExperimentConfig(
        name="double_integrator_ppo",
        task=TaskConfig(name="double_integrator", num_envs=256),
        ppo=PPOConfig(num_steps=16, gamma=0.98, lam=0.95, num_epochs=5, num_minibatches=4, value_clip=False),
        runner=RunnerConfig(
            loop=LoopConfig(max_iterations=200, target_success_rate=0.95, eval_interval=5, eval_episodes=200)
        ),
    )


def double_integrator_pixels_sac() -> ExperimentConfig:
    """Pixel SAC (DrQ) on `double_integrator/pixels`, the cart's position seen only by its 24x24 camera: 4 carts, a
    small encoder (16 filters, 16 features) and networks; in about 6,400 env steps (a few minutes of robot time, about
    20 s of CPU) the return rises from about -150 (random) past -82 (no force) to about -30."""
    return ExperimentConfig(
        name="double_integrator_pixels_sac",
        algo="sac",
        task=TaskConfig(name="double_integrator/pixels", num_envs=4),
        sac=SACConfig(
            gamma=0.98,
            actor_hidden=(64, 64),
            critic_hidden=(64, 64),
            encoder=EncoderConfig(features=16, channels=16),
        ),
        off_policy=OffPolicyRunnerConfig(
            loop=replace(OFF_POLICY_LOOP, max_iterations=2_000, eval_interval=500, eval_episodes=32),
            learning_starts=200,
            batch_size=64,
            buffer_capacity=20_000,
        ),
    )


PRESETS = {"double_integrator_ppo": double_integrator_ppo, "double_integrator_pixels_sac": double_integrator_pixels_sac}
