"""The peg benchmark's operator acting through the arm's fields (robo_rl.hil.peg_operator) on the arm_peg
profile rehearsed in simulated time (RobotEnv on SimLink): it inserts as the simulated operator does in the
simulator when its answer is executed on time, and mostly fails when the trainer executes its answer to the
previous observation (the ROS path's lateness before the trainer waited for the answer)."""

from __future__ import annotations

from dataclasses import replace

import pytest
import torch

from robo_rl.api.envs import robot_env_factory
from robo_rl.hil.peg_operator import PegFieldOperator
from robo_rl.robot.env import RobotEnv
from robo_rl.sim.mujoco.presets import PEG_BENCHMARK_TASK, PEG_OPERATOR

EPISODES = 6


def _rehearsal(delay: int, budget: float = 1.0) -> RobotEnv:
    human = replace(PEG_OPERATOR, budget=budget, reaction_steps=0, delay_steps=delay)
    make = robot_env_factory("arm_peg", link="sim", operator="simulated", human=human)
    env = make("mujoco/peg_insert", 1, seed=3, config=PEG_BENCHMARK_TASK)
    assert isinstance(env, RobotEnv)
    return env


def _driven_by_the_operator(env: RobotEnv, monkeypatch: pytest.MonkeyPatch) -> int:
    """Episodes of EPISODES inserted with the operator driving from the first step (a policy that holds still)."""
    operator = env.link.operator
    assert isinstance(operator, PegFieldOperator)
    monkeypatch.setattr(operator.expert, "unsafe", lambda: torch.ones(1, dtype=torch.bool))
    env.reset()
    inserted = episodes = 0
    while episodes < EPISODES:
        _, _, terminated, truncated, info = env.step(torch.zeros(1, 4))
        if bool(terminated[0] | truncated[0]):
            episodes += 1
            inserted += int(bool(info["success"][0]))
    return inserted


def test_the_rehearsal_s_world_is_the_config_s_task() -> None:
    """`--robot-link sim` simulates the task the config trains (the peg presets' 0.5 mm hole estimate), not the
    task's defaults (2 mm)."""
    env = _rehearsal(0)
    assert env.link.env.config.hole_estimate_noise == PEG_BENCHMARK_TASK.hole_estimate_noise != 0.002


def test_the_operator_inserts_through_the_fields_on_time_and_fails_one_period_late(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    on_time = _driven_by_the_operator(_rehearsal(0), monkeypatch)
    late = _driven_by_the_operator(_rehearsal(1), monkeypatch)
    assert on_time >= EPISODES - 1  # in the simulator it inserts 63 of 64 holes (docs/BENCHMARKS.md)
    assert late <= on_time - 2


def test_the_operator_keeps_to_its_budget_and_answers_reset_prompts() -> None:
    env = _rehearsal(0, budget=0.2)
    env.reset()
    for _ in range(400):  # a policy that holds still: the operator takes over once it has waited its patience
        env.step(torch.zeros(1, 4))
    operator = env.link.operator
    assert isinstance(operator, PegFieldOperator)
    assert operator.takeovers >= 2 and operator.prompts >= 2 and env.episodes >= 2
    assert 0.05 < env.interventions / env.total_steps < 0.2 + 0.1  # takeovers under way are finished
