"""Real-time pacing, and off-policy training with the learner in its own process (off_policy.actor_learner)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
import torch

from robo_rl.algorithms.sac import SAC, SACConfig
from robo_rl.cli.main import main
from robo_rl.hil.realtime import RealTimeEnv
from robo_rl.runners.off_policy import OffPolicyRunner, OffPolicyRunnerConfig
from robo_rl.sim import make


def test_real_time_env_steps_on_a_fixed_grid() -> None:
    env = RealTimeEnv(make("pendulum", num_envs=2, seed=0), rate_hz=100.0)
    env.reset(seed=0)
    start = time.monotonic()
    for _ in range(50):
        env.step(torch.zeros(2, 1))
    elapsed = time.monotonic() - start
    assert 0.48 <= elapsed < 0.8 and env.num_envs == 2  # 49 periods of 10 ms, plus the last step
    assert RealTimeEnv(make("pendulum", num_envs=1)).period == pytest.approx(0.05)  # default: the task's dt


@pytest.mark.slow
def test_sac_learns_the_pendulum_with_the_learner_in_its_own_process() -> None:
    env = RealTimeEnv(make("pendulum", num_envs=4, seed=0), rate_hz=250.0)  # a robot's pace: the learner keeps up
    low, high = env.action_spec.low_tensor(), env.action_spec.high_tensor()
    torch.manual_seed(0)
    sac = SAC(3, 3, low, high, SACConfig(actor_hidden=(64, 64), critic_hidden=(64, 64)))
    cfg = OffPolicyRunnerConfig(
        max_iterations=3000, learning_starts=500, batch_size=64, eval_interval=500, eval_episodes=20, actor_learner=True
    )
    runner = OffPolicyRunner(env, sac, cfg, seed=0, eval_env=make("pendulum", num_envs=20, seed=7))
    rows: list[dict] = []
    runner.learn(rows.append)
    returns = [r["eval_return"] for r in rows if r.get("eval_return") is not None]
    stats = runner.learner_stats
    assert stats is not None and stats.received == 12_000 and rows[-1]["learner_dropped"] == 0
    assert stats.updates > 2000 and rows[-1]["policy_version"] > 100  # the actor kept taking up new weights
    # and the policy learned to swing up; the learner runs on its own, so how many updates land before each
    # evaluation depends on the machine's load: the best evaluation is checked, and the last must hold most of it
    assert returns[0] < -1000 and max(returns) > -500 and returns[-1] > -800, returns


def test_actor_learner_runs_refuse_to_resume(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["train", "pendulum_sac", "--set", "off_policy.actor_learner=true", "--max-iterations", "20"]
    assert main([*argv, "--runs-root", str(tmp_path), "--quiet"]) == 0
    (run,) = (tmp_path / "pendulum_sac").iterdir()
    assert main(["train", "--resume", str(run), "--max-iterations", "40"]) == 2
    assert "actor_learner runs cannot resume" in capsys.readouterr().err
