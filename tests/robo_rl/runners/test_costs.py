"""Costs next to rewards (issue 54, item 1): an episode's cost is the sum of its steps' `info["cost"]`, reported per
finished episode in training and evaluation, and a cost limit gates the targets."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from robo_rl.cost_spec import CostSpec, cost_spec_of
from robo_rl.runners.episode_stats import EpisodeTracker
from robo_rl.runners.evaluate import EvalResult, eval_metrics, targets_reached
from robo_rl.task_record import TaskSpecs


def test_episode_cost_is_the_sum_of_its_steps_for_the_episodes_that_ended() -> None:
    tracker = EpisodeTracker(2, "cpu")
    no, yes = torch.tensor([False, False]), torch.tensor([True, False])
    tracker.record(torch.ones(2), no, cost=torch.tensor([0.5, 1.0]))
    tracker.record(torch.ones(2), yes, cost=torch.tensor([0.25, 1.0]))  # env 0 ends: cost 0.75
    stats = tracker.flush()
    assert stats.episodes == 1 and stats.mean_cost == pytest.approx(0.75)
    tracker.record(torch.ones(2), torch.tensor([False, True]), cost=torch.tensor([2.0, 1.0]))  # env 1 ends: 3.0
    assert tracker.flush().mean_cost == pytest.approx(3.0)
    assert EpisodeTracker(1, "cpu").flush().mean_cost is None


def test_a_task_without_costs_reports_none() -> None:
    tracker = EpisodeTracker(1, "cpu")
    tracker.record(torch.ones(1), torch.tensor([True]))
    assert tracker.flush().mean_cost is None


def test_the_cost_limit_gates_the_targets_and_is_no_target_of_its_own() -> None:
    cheap = EvalResult((10.0, 12.0), (5, 5), costs=(1.0, 2.0))  # mean cost 1.5
    assert targets_reached(cheap, 10.0, None, max_cost=2.0)
    assert not targets_reached(cheap, 10.0, None, max_cost=1.0)
    assert not targets_reached(cheap, None, None, max_cost=2.0), "a cost limit alone trains all iterations"
    no_costs = EvalResult((10.0,), (5,))
    assert not targets_reached(no_costs, 5.0, None, max_cost=100.0), "a task without costs never meets a cost limit"
    assert eval_metrics(cheap)["eval_cost"] == pytest.approx(1.5) and eval_metrics(no_costs)["eval_cost"] is None


def test_the_cost_spec_travels_with_the_task_record() -> None:
    class Env:
        cost_spec = CostSpec("speed_near_edge", "m/s", "speed above the limit within 0.3 m of the edge")

    spec = cost_spec_of(Env())
    assert spec is not None and cost_spec_of(object()) is None
    from robo_rl.spaces import SpaceSpec

    obs, action = SpaceSpec(("x",), (-1.0,), (1.0,), ("m",)), SpaceSpec(("u",), (-1.0,), (1.0,), ("1",))
    specs = TaskSpecs(obs, action, 0.1, 1, cost=spec)
    assert TaskSpecs.from_dict(specs.to_dict()) == specs
    with pytest.raises(ValueError, match="a name and a unit"):
        CostSpec("", "1", "nothing")


def test_a_run_on_a_task_with_a_cost_reports_it_in_its_rows_and_records_it(tmp_path: Path) -> None:
    """`robo-rl train` on the car with its speed limit near the edge: the rows carry the cost per episode of
    training and evaluation, and task.yaml the task's CostSpec."""
    import json

    import yaml

    from robo_rl.cli.main import main

    flags = ["--set", "task.config.cost_speed_limit=1.0", "--set", "task.num_envs=16", "--max-iterations", "3"]
    flags += ["--set", "runner.loop.eval_interval=3", "--set", "runner.loop.eval_episodes=4", "--quiet"]
    assert main(["train", "rc_car_race_ppo", *flags, "--runs-root", str(tmp_path)]) == 0
    run = next((tmp_path / "rc_car_race_ppo").iterdir())
    rows = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    assert all("train_cost" in row and "eval_cost" in row for row in rows)
    assert rows[-1]["eval_cost"] is not None and rows[-1]["eval_cost"] >= 0.0
    assert all((row["train_cost"] is not None) == (row["episodes"] > 0) for row in rows)
    assert yaml.safe_load((run / "task.yaml").read_text())["specs"]["cost"]["name"] == "speed_near_edge"


def test_an_evaluation_over_the_cost_limit_is_never_the_best_policy() -> None:
    from robo_rl.runners.best_policy import BestPolicy

    best = BestPolicy(max_cost=10.0)
    assert best.offer(EvalResult((5.0,), (5,), (True,), costs=(8.0,)), 1, dict, None)
    assert not best.offer(EvalResult((50.0,), (5,), (True,), costs=(12.0,)), 2, dict, None), "more return, over"
    assert best.offer(EvalResult((6.0,), (5,), (True,), costs=(10.0,)), 3, dict, None) and best.iteration == 3
    assert BestPolicy().offer(EvalResult((1.0,), (5,), (True,), costs=(99.0,)), 1, dict, None), "no limit: any cost"
