"""Live training progress in the terminal: iterations, env-steps/s, training and evaluation return."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn


def _fmt(value: float | None) -> str:
    return "—" if value is None else f"{value:.1f}"


class TrainingProgress:
    """A rich progress bar advanced by the runner's per-iteration callback."""

    def __init__(self, total_iterations: int, start_iteration: int, console: Console) -> None:
        self._progress = Progress(
            TextColumn("[bold]train"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[steps_per_s]} steps/s"),
            TextColumn("return {task.fields[ret]}"),
            TextColumn("eval {task.fields[eval]}"),
            TimeElapsedColumn(),
            console=console,
            transient=False,
        )
        self._task = self._progress.add_task(
            "train", total=total_iterations, completed=start_iteration, steps_per_s="—", ret="—", eval="—"
        )
        # Episodes finish only every max_episode_steps / num_steps iterations: show the latest known values.
        self._last_return: float | None = None
        self._last_eval: float | None = None

    def __enter__(self) -> TrainingProgress:  # noqa: PYI034
        self._progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._progress.stop()

    def __call__(self, metrics: dict[str, Any]) -> None:
        if metrics.get("mean_return") is not None:
            self._last_return = metrics["mean_return"]
        if metrics.get("eval_return") is not None:
            self._last_eval = metrics["eval_return"]
        self._progress.update(
            self._task,
            completed=metrics["iteration"],
            steps_per_s=f"{metrics.get('steps_per_s', 0.0):,.0f}",
            ret=_fmt(self._last_return),
            eval=_fmt(self._last_eval),
        )


def terminal() -> Console:
    """The CLI's console. Soft wrap: paths and commands stay on one line, so they can be copied from logs."""
    return Console(soft_wrap=True)
