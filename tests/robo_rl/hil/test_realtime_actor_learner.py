"""Real-time pacing, and off-policy training with the learner in its own process (off_policy.actor_learner).

Nothing here asserts a count or a duration that depends on how fast or loaded the machine is."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest
import torch

from robo_rl.algorithms.sac import SAC, SACConfig
from robo_rl.cli.main import main
from robo_rl.hil import realtime
from robo_rl.hil.actor_learner import ActorLearner
from robo_rl.hil.realtime import RealTimeEnv
from robo_rl.runners.off_policy import OffPolicyRunner
from robo_rl.runners.off_policy_config import OFF_POLICY_LOOP, OffPolicyRunnerConfig
from robo_rl.sim import make


class FakeClock:
    """Stands in for `time` in robo_rl.hil.realtime: sleeping advances it, nothing else does."""

    def __init__(self) -> None:
        self.now = 100.0

    def monotonic(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


def test_real_time_env_never_steps_faster_than_its_rate() -> None:
    env = RealTimeEnv(make("pendulum", num_envs=2, seed=0), rate_hz=100.0)
    env.reset(seed=0)
    start = time.monotonic()
    for _ in range(50):
        env.step(torch.zeros(2, 1))
    # 49 periods of 10 ms at least; a loaded machine only makes it later, so there is no upper bound here
    assert time.monotonic() - start >= 0.49 and env.num_envs == 2
    assert RealTimeEnv(make("pendulum", num_envs=1)).period == pytest.approx(0.05)  # default: the task's dt


def test_real_time_env_steps_on_a_fixed_grid_that_moves_on_after_a_late_step(monkeypatch: pytest.MonkeyPatch) -> None:
    clock = FakeClock()
    monkeypatch.setattr(realtime, "time", clock)
    env = RealTimeEnv(make("pendulum", num_envs=2, seed=0), rate_hz=100.0)
    env.reset(seed=0)
    step_times = []
    for work in (0.0, 0.002, 0.0, 0.035, 0.0):  # seconds the caller spends before each step
        clock.now += work
        env.step(torch.zeros(2, 1))
        step_times.append(clock.now)
    # on the 10 ms grid from 100.0; the step 35 ms after the last one is late and starts a new grid at 100.055
    assert step_times == pytest.approx([100.0, 100.01, 100.02, 100.055, 100.065])
    assert env.late_steps == 1


def keep_up_with(remote: ActorLearner, rows: list[dict], backlog: int) -> Callable[[dict], None]:
    """An `on_iteration` callback that records the row, then lets the learner work off its queue down to
    `backlog` step messages. A robot runs at a pace its learner keeps up with; on a loaded test machine the
    learner may not, and then dropped steps and late weights would make the learning depend on the load."""

    def on_iteration(row: dict) -> None:
        rows.append(row)
        while remote.inbox.qsize() > backlog:
            time.sleep(0.001)

    return on_iteration


@pytest.mark.slow
def test_sac_learns_the_pendulum_with_the_learner_in_its_own_process() -> None:
    """Trains until the target return, with the actor never more than 50 steps ahead of the learner: the outcome
    then depends on the work done (updates, weights taken up), not on how fast or loaded the machine is."""
    env = RealTimeEnv(make("pendulum", num_envs=4, seed=0), rate_hz=250.0)  # a robot's pace
    low, high = env.action_spec.low_tensor(), env.action_spec.high_tensor()
    torch.manual_seed(0)
    sac = SAC(3, 3, low, high, SACConfig(actor_hidden=(64, 64), critic_hidden=(64, 64)))
    cfg = OffPolicyRunnerConfig(
        loop=replace(OFF_POLICY_LOOP, max_iterations=6000, eval_interval=500, eval_episodes=20, target_return=-400.0),
        learning_starts=500,
        batch_size=64,
        actor_learner=True,
    )
    runner = OffPolicyRunner(env, sac, cfg, seed=0, eval_env=make("pendulum", num_envs=20, seed=7))
    remote = runner.remote
    assert remote is not None
    rows: list[dict] = []
    result = runner.learn(keep_up_with(remote, rows, backlog=50))
    stats = runner.learner_stats
    assert stats is not None
    # the queue (1,000 steps) never filled, so every transition the actor sent reached the learner
    sent = result.iterations * env.num_envs
    assert stats.received == sent and rows[-1]["learner_dropped"] == 0
    # every step message received once the buffer held learning_starts transitions made updates_per_step
    # gradient steps, and every 10th published the weights, which the actor can then take up
    messages_before_learning = cfg.learning_starts // env.num_envs - 1
    assert stats.updates == (stats.received // env.num_envs - messages_before_learning) * cfg.updates_per_step
    assert stats.published == stats.updates // 10
    remote.refresh()
    assert remote.loaded_version == stats.published
    versions = [row["policy_version"] for row in rows]
    assert versions == sorted(versions) and versions[-1] > 0  # the actor took up new weights as they came
    # and the policy learned to swing up
    returns = [r["eval_return"] for r in rows if r.get("eval_return") is not None]
    assert returns[0] < -1000 and result.reached_target, returns


def test_actor_learner_runs_refuse_to_resume(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["train", "pendulum_sac", "--set", "off_policy.actor_learner=true", "--max-iterations", "20"]
    assert main([*argv, "--runs-root", str(tmp_path), "--quiet"]) == 0
    (run,) = (tmp_path / "pendulum_sac").iterdir()
    assert main(["train", "--resume", str(run), "--max-iterations", "40"]) == 2
    assert "actor_learner runs cannot resume" in capsys.readouterr().err
