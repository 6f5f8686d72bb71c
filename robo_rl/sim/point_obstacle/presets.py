"""Presets of the point/obstacle task: the flow-policy algorithms (FQL, DSRL, ReinFlow) and SAC on bimodal
demonstrations."""

from __future__ import annotations

from dataclasses import replace

from robo_rl.algorithms.ppo import PPOConfig
from robo_rl.algorithms.reinflow import ReinFlowTrainConfig
from robo_rl.experiment import Algorithm, ExperimentConfig, TaskConfig, with_networks
from robo_rl.runners.loop_config import LoopConfig
from robo_rl.runners.off_policy_config import OFF_POLICY_LOOP, OffPolicyRunnerConfig
from robo_rl.runners.on_policy import RunnerConfig


def _point_obstacle_off_policy(algo: Algorithm) -> ExperimentConfig:
    """The multimodal point/obstacle task (pass the obstacle left or right): 16 envs, 128-128 networks, 2
    updates of 256 per step, evaluations of 200 episodes every 250 iterations, stop at 95 % success.
    Demonstrations come from `robo-rl record-demos point/obstacle` and `--set off_policy.prior_buffer=FILE`."""
    cfg = ExperimentConfig(
        name=f"point_obstacle_{algo}",
        algo=algo,
        task=TaskConfig(name="point/obstacle", num_envs=16),
        off_policy=OffPolicyRunnerConfig(
            loop=replace(
                OFF_POLICY_LOOP, max_iterations=20_000, target_success_rate=0.95, eval_interval=250, eval_episodes=200
            ),
            learning_starts=1_000,
            updates_per_step=2,
            batch_size=256,
        ),
    )
    if algo == "pa_rl":  # its one policy is the flow; its critic learns 2,000 updates first (PA-RL's offline phase)
        pa_rl = replace(cfg.pa_rl, flow_hidden=(128, 128), critic_hidden=(128, 128))
        return replace(cfg, pa_rl=pa_rl, off_policy=replace(cfg.off_policy, critic_warmup_steps=2000))
    return with_networks(cfg, actor_hidden=(128, 128), critic_hidden=(128, 128))


def point_obstacle_sac() -> ExperimentConfig:
    return _point_obstacle_off_policy("sac")


def point_obstacle_fql() -> ExperimentConfig:
    return _point_obstacle_off_policy("fql")


def point_obstacle_dsrl() -> ExperimentConfig:
    return _point_obstacle_off_policy("dsrl")


def point_obstacle_pa_rl() -> ExperimentConfig:
    """PA-RL on point/obstacle: the flow (128-128) and critics (128-128) of the other flow presets, the critic trained
    2,000 updates before the flow learns (PA-RL's offline phase); demonstrations as for FQL (`--set
    off_policy.prior_buffer=FILE`, with `off_policy.bc_pretrain_steps` to clone first)."""
    return _point_obstacle_off_policy("pa_rl")


def point_obstacle_reinflow() -> ExperimentConfig:
    """ReinFlow on point/obstacle: the flow (128-128) cloned for 4,000 steps on `reinflow.demos`, then PPO with K = 4
    noisy steps on 64 envs x 32 steps, the learning rate at most 3e-4 (the adaptive schedule only lowers it: while
    the actor is frozen the KL is zero and the schedule would otherwise climb to its 1e-2 maximum), 3 warm-up
    iterations, evaluations of 200 episodes every 5 iterations, stop at 95 % success.
    `robo-rl record-demos point/obstacle -o demos.npz`, then `--set reinflow.demos=demos.npz`."""
    return ExperimentConfig(
        name="point_obstacle_reinflow",
        algo="reinflow",
        task=TaskConfig(name="point/obstacle", num_envs=64),
        reinflow=ReinFlowTrainConfig(),
        ppo=PPOConfig(num_steps=32, learning_rate=3e-4, max_learning_rate=3e-4),
        runner=RunnerConfig(
            loop=LoopConfig(max_iterations=200, eval_interval=5, eval_episodes=200, target_success_rate=0.95)
        ),
    )


PRESETS = {
    "point_obstacle_sac": point_obstacle_sac,
    "point_obstacle_fql": point_obstacle_fql,
    "point_obstacle_dsrl": point_obstacle_dsrl,
    "point_obstacle_reinflow": point_obstacle_reinflow,
    "point_obstacle_pa_rl": point_obstacle_pa_rl,
}
