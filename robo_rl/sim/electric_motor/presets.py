"""Presets of the electric-motor tasks: PPO and SAC for PMSM current control at 10 kHz."""

from __future__ import annotations

from dataclasses import replace

from robo_rl.algorithms.ppo import PPOConfig
from robo_rl.experiment import ExperimentConfig, PolicyConfig, TaskConfig, with_networks
from robo_rl.runners.loop_config import LoopConfig
from robo_rl.runners.off_policy_config import OFF_POLICY_LOOP, OffPolicyRunnerConfig
from robo_rl.runners.on_policy import RunnerConfig

CURRENT_TARGET_RETURN = -19.9
"""The current presets stop at this mean evaluation return: within 10 % of the PI/FOC baseline's tracking error. The
return of an episode is -(2 * 256 / i_nominal) * its mean per-axis error without a trip; the PI's mean error on 256
drawn episodes is 8.50 A (return -18.1), and 1.1x that is -19.9 (tests/sim/electric_motor checks it)."""


def electric_motor_current_ppo() -> ExperimentConfig:
    """PPO on PMSM current control (`electric_motor/current`), 1024 motors, stopping within 10 % of the PI/FOC
    baseline's tracking error (`CURRENT_TARGET_RETURN`). A 32-32 ReLU actor: 4.1k Cortex-M4 instructions per step
    (about 31 us at 168 MHz, inside a 100 us period at 10 kHz), where 64-64 ELU took 14.4k (107 us); it reached the
    target in 18-22 s on this 2-core VM (seeds 0, 1) and beat the PI by 10 % after 160 iterations (about 60 s)."""
    return ExperimentConfig(
        name="electric_motor_current_ppo",
        task=TaskConfig(name="electric_motor/current", num_envs=1024),
        policy=PolicyConfig(init_log_std=-1.0, actor_hidden=(32, 32), activation="relu"),
        ppo=PPOConfig(num_steps=32, gamma=0.97, lam=0.9, num_epochs=5, num_minibatches=8, desired_kl=0.01),
        runner=RunnerConfig(
            loop=LoopConfig(max_iterations=300, target_return=CURRENT_TARGET_RETURN, eval_interval=5, eval_episodes=200)
        ),
    )


def _sac(
    name: str, task: str, num_envs: int, target: float, eval_interval: int, eval_episodes: int
) -> ExperimentConfig:
    """SAC on `task` with `num_envs` motors, one update per vector step, 64-64 networks, stopping at `target`."""
    cfg = ExperimentConfig(
        name=name,
        algo="sac",
        task=TaskConfig(name=task, num_envs=num_envs),
        off_policy=OffPolicyRunnerConfig(
            loop=replace(
                OFF_POLICY_LOOP,
                max_iterations=20_000,
                target_return=target,
                eval_interval=eval_interval,
                eval_episodes=eval_episodes,
            ),
            learning_starts=1_000,
            batch_size=256,
        ),
    )
    return with_networks(cfg, actor_hidden=(64, 64), critic_hidden=(64, 64))


def electric_motor_current_sac() -> ExperimentConfig:
    """SAC on PMSM current control, 64 motors, gamma 0.97, stopping at the PPO preset's target. Measured (seed 0, this
    2-core VM): it does not reach the target in its 20,000 iterations (evaluation return -31 after 108 s, the target
    being -19.9; docs/BENCHMARKS.md has the variants tried). PPO is the preset to use."""
    cfg = _sac("electric_motor_current_sac", "electric_motor/current", 64, CURRENT_TARGET_RETURN, 500, 200)
    return replace(cfg, sac=replace(cfg.sac, gamma=0.97))


SPEED_TARGET_RETURN = -115.0
"""The speed presets stop at this mean evaluation return (per episode: -sum |speed error| / omega_scale): within 10 %
of the PI speed controller's -103 on 256 episodes (`foc.SpeedPi` above the same current loop,
tests/sim/electric_motor)."""


def electric_motor_speed_ppo() -> ExperimentConfig:
    """PPO on PMSM speed control (`electric_motor/speed`): 256 motors, 1 kHz, stopping within 10 % of the PI."""
    return ExperimentConfig(
        name="electric_motor_speed_ppo",
        task=TaskConfig(name="electric_motor/speed", num_envs=256),
        policy=PolicyConfig(init_log_std=-1.0, actor_hidden=(32, 32), activation="relu"),
        ppo=PPOConfig(num_steps=32, gamma=0.99, lam=0.95, num_epochs=5, num_minibatches=4, desired_kl=0.01),
        runner=RunnerConfig(
            loop=LoopConfig(max_iterations=300, target_return=SPEED_TARGET_RETURN, eval_interval=10, eval_episodes=128)
        ),
    )


def electric_motor_speed_sac() -> ExperimentConfig:
    """SAC on PMSM speed control: 16 motors, stopping at the PPO preset's target. Measured (seed 0): 84 s and 80,000
    env steps to it, 4.4 % behind the PI speed controller on 256 episodes (PPO's 409,600 steps, 12.6 % behind)."""
    return _sac("electric_motor_speed_sac", "electric_motor/speed", 16, SPEED_TARGET_RETURN, 1_000, 128)


PRESETS = {
    "electric_motor_current_ppo": electric_motor_current_ppo,
    "electric_motor_current_sac": electric_motor_current_sac,
    "electric_motor_speed_ppo": electric_motor_speed_ppo,
    "electric_motor_speed_sac": electric_motor_speed_sac,
}
