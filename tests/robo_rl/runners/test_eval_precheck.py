"""The evaluation's pre-check (`LoopConfig.eval_precheck_episodes`): a few deterministic episodes of their own decide
whether the costly gate evaluation runs. Double integrator, whose deterministic actor is replaced by a script: a PD
law that stops every cart at the origin (100 % success) or one that does nothing (0 %)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch import nn

from robo_rl.api.configs import preset
from robo_rl.build import build_runner
from robo_rl.config import apply_overrides
from robo_rl.runners.on_policy import OnPolicyRunner
from robo_rl.sim import make


class Script(nn.Module):
    def __init__(self, law: Callable[[torch.Tensor], torch.Tensor]) -> None:
        super().__init__()
        self.law = law

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        return self.law(obs)


def stop_at_origin(obs: torch.Tensor) -> torch.Tensor:
    return (-2.0 * obs[:, :1] - 2.0 * obs[:, 1:2]).clamp(-2.0, 2.0)


def idle(obs: torch.Tensor) -> torch.Tensor:
    return torch.zeros(obs.shape[0], 1)


def _runner(law: Callable[[torch.Tensor], torch.Tensor], *overrides: str) -> OnPolicyRunner:
    settings = ["runner.loop.eval_interval=1", "runner.loop.max_iterations=3", "runner.loop.eval_episodes=50"]
    settings += ["runner.loop.eval_precheck_episodes=20", "task.num_envs=8", *overrides]
    runner = build_runner(apply_overrides(preset("double_integrator_ppo"), settings), make)
    assert isinstance(runner, OnPolicyRunner) and runner.precheck_env is not None
    assert runner.precheck_env.num_envs == 20
    runner._deterministic_actor = lambda: Script(law)  # type: ignore[method-assign]
    return runner


def _rows(runner: OnPolicyRunner) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    runner.learn(rows.append)
    return rows


def test_a_passing_precheck_lets_the_gate_evaluation_run_and_decide() -> None:
    rows = _rows(_runner(stop_at_origin))
    assert len(rows) == 1  # the gate passed at the first iteration
    assert rows[0]["eval_precheck_success_rate"] == 1.0 and rows[0]["eval_success_rate"] == 1.0


def test_a_failing_precheck_skips_the_evaluation_until_the_last_iteration() -> None:
    rows = _rows(_runner(idle))
    assert [row["eval_precheck_success_rate"] for row in rows[:2]] == [0.0, 0.0]
    assert [row["eval_success_rate"] for row in rows[:2]] == [None, None]  # 0 % < 95 % - 5 %: skipped
    assert "eval_precheck_success_rate" not in rows[2] and rows[2]["eval_success_rate"] < 0.1  # the final one runs


def test_the_margin_sets_the_precheck_threshold() -> None:
    """20 pre-check episodes, a law that stops about 60 % of the carts: the evaluation runs under a margin of 0.5
    (threshold 45 %) and not under the default 0.05 (threshold 90 %)."""

    def stops_some(obs: torch.Tensor) -> torch.Tensor:
        return torch.where(obs[:, :1] > -0.2, stop_at_origin(obs), torch.zeros_like(obs[:, :1]))

    plain = _rows(_runner(stops_some))[0]
    assert 0.45 <= plain["eval_precheck_success_rate"] < 0.9 and plain["eval_success_rate"] is None
    wide = _rows(_runner(stops_some, "runner.loop.eval_precheck_margin=0.5"))[0]
    assert wide["eval_precheck_success_rate"] == plain["eval_precheck_success_rate"]
    assert wide["eval_success_rate"] is not None


def test_a_failing_precheck_stops_at_its_first_crashes() -> None:
    """On the hover task a policy with its motors off crashes every flight within the first second: the pre-check
    (20 episodes, threshold 92 %) is certain to fail after 2 crashes and stops there instead of flying 5 s, and the
    gate evaluation is skipped; the row has no pre-check rate, since the rate of the unfinished episodes is unknown."""
    settings = ["runner.loop.eval_interval=1", "runner.loop.max_iterations=2", "runner.loop.eval_episodes=50"]
    settings += ["runner.loop.eval_precheck_episodes=20", "task.num_envs=8", "runner.loop.eval_precheck_margin=0.05"]
    runner = build_runner(apply_overrides(preset("quadrotor_hover_ppo"), settings), make)
    assert isinstance(runner, OnPolicyRunner) and runner.precheck_env is not None
    precheck_env = runner.precheck_env
    runner._deterministic_actor = lambda: Script(lambda obs: -torch.ones(obs.shape[0], 4))  # type: ignore[method-assign]
    steps = [0]
    step = precheck_env.step

    def counted(action: torch.Tensor) -> Any:
        steps[0] += 1
        return step(action)

    precheck_env.step = counted  # type: ignore[method-assign]
    rows = _rows(runner)
    assert "eval_precheck_success_rate" not in rows[0] and rows[0]["eval_success_rate"] is None
    assert 0 < steps[0] < precheck_env.max_episode_steps // 5
