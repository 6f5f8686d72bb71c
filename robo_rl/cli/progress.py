"""Live training progress in the terminal: iterations, env-steps/s, training reward per step, evaluation return."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from robo_rl.runners.evaluate import EvalResult
from robo_rl.runners.loop_config import LoopConfig


def _fmt(value: float | None, digits: int = 1) -> str:
    return "—" if value is None else f"{value:.{digits}f}"


class TrainingProgress:
    """A rich progress bar advanced by the runner's per-iteration callback."""

    def __init__(self, total_iterations: int, start_iteration: int, console: Console) -> None:
        self._progress = Progress(
            TextColumn("[bold]train"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[steps_per_s]} steps/s"),
            TextColumn("reward/step {task.fields[ret]}"),
            TextColumn("eval {task.fields[eval]}"),
            TextColumn("{task.fields[success]}"),
            TimeElapsedColumn(),
            console=console,
            transient=False,
        )
        self._task = self._progress.add_task(
            "train", total=total_iterations, completed=start_iteration, steps_per_s="—", ret="—", eval="—", success=""
        )
        # The training column is the mean reward per env step: the return of the episodes that happened to end
        # in an iteration is dominated by early crashes and reads as "getting worse" while the policy improves.
        # Evaluations come only every eval_interval iterations: show the latest known values.
        self._last_return: float | None = None
        self._last_eval: float | None = None
        self._success: dict[str, float | None] = {"train": None, "eval": None}
        self._intervention: float | None = None

    def __enter__(self) -> TrainingProgress:  # noqa: PYI034
        self._progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._progress.stop()

    def __call__(self, metrics: dict[str, Any]) -> None:
        if metrics.get("train_reward_per_step") is not None:
            self._last_return = metrics["train_reward_per_step"]
        if metrics.get("eval_return") is not None:
            self._last_eval = metrics["eval_return"]
        for kind in self._success:
            if metrics.get(f"{kind}_success_rate") is not None:
                self._success[kind] = metrics[f"{kind}_success_rate"]
        if metrics.get("episode_intervention_rate") is not None:
            self._intervention = metrics["episode_intervention_rate"]
        self._progress.update(
            self._task,
            completed=metrics["iteration"],
            steps_per_s=f"{metrics.get('steps_per_s', 0.0):,.0f}",
            ret=_fmt(self._last_return, digits=3),
            eval=_fmt(self._last_eval),
            success=self._success_text(),
        )

    def _success_text(self) -> str:
        """'success train 40% eval 91%' for tasks that report success, then 'human 12%' (the share of the finished
        episodes' steps an operator controlled) under human-in-the-loop training; empty when neither applies."""
        known = {kind: rate for kind, rate in self._success.items() if rate is not None}
        parts = ["success " + " ".join(f"{kind} {rate:.0%}" for kind, rate in known.items())] if known else []
        if self._intervention is not None:
            parts.append(f"human {self._intervention:.0%}")
        return " ".join(parts)


def terminal() -> Console:
    """The CLI's console. Soft wrap: paths and commands stay on one line, so they can be copied from logs."""
    return Console(soft_wrap=True)


def describe_targets(loop: LoopConfig) -> str:
    """'target: mean return >= X, success rate >= Y' from a runner's loop settings."""
    parts = []
    if loop.target_return is not None:
        parts.append(f"mean return ≥ {loop.target_return:g}")
    if loop.target_success_rate is not None:
        parts.append(f"success rate ≥ {loop.target_success_rate:.0%} over {loop.eval_episodes} episodes")
    return "target: " + (", ".join(parts) if parts else "none, all iterations")


def describe_evaluation(result: EvalResult) -> str:
    """'return M ± S over N episodes (min, max), success rate R% (k/N), RMS tracking error E, cost C per episode
    (max X)'; the success, tracking and cost parts only for tasks that report them."""
    text = (
        f"return {result.mean_return:.1f} ± {result.std_return:.1f} over {len(result.returns)} episodes "
        f"(min {min(result.returns):.1f}, max {max(result.returns):.1f})"
    )
    if result.success_rate is not None:
        successes = sum(result.successes or ())
        text += f", success rate {result.success_rate:.1%} ({successes}/{len(result.returns)})"
    if result.tracking_rms is not None:
        text += f", RMS tracking error {result.tracking_rms:.3f}"
    if result.costs:
        text += f", cost {result.mean_cost:.4g} per episode (max {max(result.costs):.4g})"
    return text
