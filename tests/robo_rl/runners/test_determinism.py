"""Same seed on the CPU → identical training returns; a different seed → different ones (PPO, SAC, TD3)."""

from __future__ import annotations

from dataclasses import replace

import pytest
import torch

from robo_rl.algorithms.sac import SAC, SACConfig
from robo_rl.algorithms.td3 import TD3, TD3Config
from robo_rl.api.configs import preset
from robo_rl.build import build_runner
from robo_rl.runners.off_policy import OffPolicyRunner
from robo_rl.runners.off_policy_config import OFF_POLICY_LOOP, OffPolicyRunnerConfig
from robo_rl.sim import make


def _ppo_returns(seed: int) -> list[float]:
    base = preset("pendulum_ppo")
    cfg = replace(
        base,
        seed=seed,
        task=replace(base.task, num_envs=64),
        runner=replace(
            base.runner, loop=replace(base.runner.loop, max_iterations=15, eval_interval=5, eval_episodes=8)
        ),
    )
    rows: list[float] = []
    build_runner(cfg, make).learn(lambda m: rows.append(m["eval_return"]) if m["eval_return"] is not None else None)
    return rows


def _off_policy_returns(name: str, seed: int) -> list[float]:
    env = make("pendulum", num_envs=4, seed=seed)
    low, high = env.action_spec.low_tensor(), env.action_spec.high_tensor()
    torch.manual_seed(seed)
    small = {"actor_hidden": (32, 32), "critic_hidden": (32, 32)}
    algorithm = SAC(3, 3, low, high, SACConfig(**small)) if name == "sac" else TD3(3, 3, low, high, TD3Config(**small))
    cfg = OffPolicyRunnerConfig(
        loop=replace(OFF_POLICY_LOOP, max_iterations=150, eval_interval=50, eval_episodes=8),
        learning_starts=200,
        batch_size=32,
    )
    rows: list[float] = []
    runner = OffPolicyRunner(env, algorithm, cfg, seed, eval_env=make("pendulum", num_envs=8, seed=seed + 1))
    runner.learn(lambda m: rows.append(m["eval_return"]) if m["eval_return"] is not None else None)
    return rows


@pytest.mark.parametrize("algo", ["ppo", "sac", "td3"])
def test_same_seed_same_returns_other_seed_other_returns(algo: str) -> None:
    def returns(seed: int) -> list[float]:
        return _ppo_returns(seed) if algo == "ppo" else _off_policy_returns(algo, seed)

    first, again, other = returns(3), returns(3), returns(4)
    assert len(first) == 3
    assert first == again  # bit-identical, not merely close
    assert first != other
