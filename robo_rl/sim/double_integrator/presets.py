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
from robo_rl.sim.double_integrator.pixels import PixelDoubleIntegratorConfig


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
    """Pixel SAC on `double_integrator/pixels`, the cart's position seen only by its 24x24 camera: 4 carts, 20,000
    env steps (16.7 robot minutes). An asymmetric actor-critic: the critic gets the simulator's position (a
    privileged observation), the actor's loss trains the camera encoder, which reads the cart's blob by a spatial
    softmax over two stride-1 convolutions, unshifted (a shift would move the cart by 13 cm a pixel; the target is 5
    cm). DrQ's critic-trained encoder stops the cart 5-12 cm off on most seeds (docs/BENCHMARKS.md, issue 51)."""
    return ExperimentConfig(
        name="double_integrator_pixels_sac",
        algo="sac",
        task=TaskConfig(
            name="double_integrator/pixels",
            num_envs=4,
            config=PixelDoubleIntegratorConfig(privileged_position=True),
        ),
        sac=SACConfig(
            encoder=EncoderConfig(channels=16, strides=(1, 1), keypoints=True, shift_pad=0, trained_by="actor"),
        ),
        off_policy=OffPolicyRunnerConfig(
            loop=replace(OFF_POLICY_LOOP, max_iterations=5_000, eval_interval=1_000, eval_episodes=20),
            learning_starts=1_000,
            batch_size=128,
            buffer_capacity=100_000,
        ),
    )


PRESETS = {"double_integrator_ppo": double_integrator_ppo, "double_integrator_pixels_sac": double_integrator_pixels_sac}
