"""Costs next to rewards (issue 54, item 1): an episode's cost is the sum of its steps' `info["cost"]`, reported per
finished episode in training and evaluation, and a cost limit gates the targets."""

from __future__ import annotations

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
