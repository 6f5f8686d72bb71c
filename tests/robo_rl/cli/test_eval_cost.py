"""`robo-rl eval` reports a constrained task's cost per episode beside its return."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

from robo_rl.api.evaluation import evaluate_run
from robo_rl.cli.main import main


def test_eval_prints_the_mean_cost_per_episode_of_a_task_with_a_cost(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    flags = ["--set", "off_policy.learning_starts=16", "--set", "off_policy.loop.eval_interval=0"]
    assert (
        main(["train", "point_obstacle_sac", "--runs-root", str(runs), "--max-iterations", "2", "--quiet", *flags]) == 0
    )
    (run,) = (runs / "point_obstacle_sac").iterdir()
    # a hazard margin wider than the arena: every step costs 1, so an episode's cost is its length
    params = ["--task-param", "hazard_margin=10"]
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["eval", str(run), "--episodes", "8", "--seed", "3", *params]) == 0
    printed = re.search(r"cost ([0-9.]+) per episode \(max ([0-9.]+)\)", out.getvalue())
    assert printed is not None, out.getvalue()
    lengths = evaluate_run(run, 8, 3, task_params=("hazard_margin=10",)).lengths
    assert float(printed.group(1)) == sum(lengths) / len(lengths) and float(printed.group(2)) == max(lengths)
    plain = io.StringIO()
    with contextlib.redirect_stdout(plain):
        assert main(["eval", str(run), "--episodes", "8", "--seed", "3"]) == 0
    assert " per episode (max " not in plain.getvalue()  # the task without a constraint reports no cost
