"""The learning curve's series come from metrics rows of any age and shape, and its PNG has one panel per series."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import matplotlib.image

from robo_rl.runners.learning_curve import (
    DPI,
    FIGURE_WIDTH,
    HEADER_HEIGHT,
    PANEL_HEIGHT,
    Series,
    learning_curve_series,
    plot_comparison,
    plot_learning_curve,
)

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"

OLD_ROW = {"iteration": 1, "env_steps": 100, "mean_return": -20.0, "episodes": 10, "eval_return": None}
"""A metrics.jsonl row from before `train_reward_per_step` (and without the evaluation's success keys)."""
EVALUATED_ROW = {
    "iteration": 2,
    "env_steps": 200,
    "mean_return": None,
    "episodes": 0,
    "train_reward_per_step": 0.5,
    "eval_return": 800.0,
    "eval_success_rate": 0.9,
}
TRAINING_ROW = {
    "iteration": 3,
    "env_steps": 300,
    "mean_return": -100.0,
    "episodes": 2,
    "train_reward_per_step": 0.7,
    "eval_return": None,
    "eval_success_rate": None,
}


def _panels_in(png: Path) -> float:
    """How many panels a learning-curve PNG holds, from its height."""
    height, width = matplotlib.image.imread(png).shape[:2]
    assert width == FIGURE_WIDTH * DPI
    return round((height / DPI - HEADER_HEIGHT) / PANEL_HEIGHT, 6)


def test_series_skip_rows_without_the_key_or_with_null() -> None:
    found = learning_curve_series([OLD_ROW, EVALUATED_ROW, TRAINING_ROW])
    assert list(found) == ["eval_return", "eval_success_rate", "train_reward_per_step", "mean_return", "episodes"]
    assert found["eval_return"] == Series((200,), (800.0,))
    assert found["eval_success_rate"] == Series((200,), (0.9,))
    assert found["train_reward_per_step"] == Series((200, 300), (0.5, 0.7))
    assert found["mean_return"] == Series((100, 300), (-20.0, -100.0))
    # the episode counts come with every row, zero included: they show where the return has no episodes behind it
    assert found["episodes"] == Series((100, 200, 300), (10.0, 0.0, 2.0))


def test_series_of_a_run_without_evaluation_or_success_or_finished_episodes() -> None:
    no_evaluation = [OLD_ROW, TRAINING_ROW]
    assert list(learning_curve_series(no_evaluation)) == ["train_reward_per_step", "mean_return", "episodes"]
    no_success = [{**EVALUATED_ROW, "eval_success_rate": None}, TRAINING_ROW]
    assert "eval_success_rate" not in learning_curve_series(no_success)
    never_finished = [{**TRAINING_ROW, "mean_return": None, "episodes": 0}]
    assert list(learning_curve_series(never_finished)) == ["train_reward_per_step"]
    assert learning_curve_series([]) == {}


def test_learning_curve_png_has_one_panel_per_series(tmp_path: Path) -> None:
    cases: dict[str, list[dict[str, Any]]] = {
        "all": [OLD_ROW, EVALUATED_ROW, TRAINING_ROW],  # eval return, success, reward per step, episode return
        "no_evaluation": [OLD_ROW, TRAINING_ROW],  # reward per step, episode return
        "old_file_without_evaluation": [OLD_ROW],  # episode return
        "empty": [],  # one panel that says so
    }
    for name, rows in cases.items():
        plot_learning_curve(rows, tmp_path / f"{name}.png", title=name)
    assert [_panels_in(tmp_path / f"{name}.png") for name in cases] == [4, 2, 1, 1]
    assert (tmp_path / "all.png").read_bytes()[:8] == PNG_MAGIC
    assert not list(tmp_path.glob("*.tmp*"))


def test_comparison_has_one_panel_per_key_that_any_run_has(tmp_path: Path) -> None:
    runs = {"old run": [OLD_ROW], "new run": [EVALUATED_ROW, TRAINING_ROW]}
    keys = ["eval_return", "eval_success_rate", "train_reward_per_step", "no_such_key"]
    plot_comparison(runs, tmp_path / "cmp.png", keys)
    height = matplotlib.image.imread(tmp_path / "cmp.png").shape[0]
    legend_rows = len(runs)
    assert height == round((HEADER_HEIGHT + 3 * PANEL_HEIGHT + 0.2 * legend_rows) * DPI)
