"""Asymmetric actor-critic: with privileged observations the critic sees obs + privileged part, the actor
(and so the exported policy) sees the observation alone — for PPO, SAC and TD3."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import pytest
import torch

from robo_rl.api.configs import preset
from robo_rl.build import build_deployable_actor, build_runner
from robo_rl.sim.pendulum import Pendulum


@pytest.mark.parametrize("algo", ["ppo", "sac", "td3"])
def test_critic_sees_privileged_observations(algo: str, pendulum_with_angle: type[Pendulum]) -> None:
    def make_env(
        name: str,
        num_envs: int,
        device: str = "cpu",
        seed: int | None = None,
        params: Sequence[str] = (),
        config: object = None,
    ) -> Pendulum:
        assert not params and config is None
        return pendulum_with_angle(num_envs, device=device, seed=seed)

    base = preset(f"pendulum_{algo}")
    cfg = replace(base, task=replace(base.task, num_envs=8))
    cfg = replace(cfg, runner=replace(cfg.runner, loop=replace(cfg.runner.loop, max_iterations=2, eval_interval=0)))
    cfg = replace(
        cfg,
        off_policy=replace(
            cfg.off_policy,
            loop=replace(cfg.off_policy.loop, max_iterations=40, eval_interval=0),
            learning_starts=16,
            batch_size=8,
        ),
    )
    runner = build_runner(cfg, make_env, evaluate=False)
    runner.learn()
    if algo == "ppo":
        critic_in = runner.policy.critic[0].in_features
        stored = runner.storage.critic_obs.flatten(0, 1)
        obs = runner.storage.obs.flatten(0, 1)
    else:
        critic_in = runner.algorithm.critic.in_features - 1  # minus the action
        batch = runner.buffer.stored()
        stored, obs = batch.critic_obs, batch.obs
    assert critic_in == 3 + 2
    # The stored critic input is the observation followed by the true [theta, theta_dot].
    torch.testing.assert_close(stored[:, :3], obs)
    torch.testing.assert_close(stored[:, 3:], pendulum_with_angle.angle_obs(obs))
    # The deployable actor takes the 3-dim observation only.
    actor = build_deployable_actor(cfg, make_env("pendulum", 1), runner.state_dict())
    assert actor(torch.zeros(5, 3)).shape == (5, 1)
