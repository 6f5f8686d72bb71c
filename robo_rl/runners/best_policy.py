"""The best policy of a run by its evaluations (held-out ones where the task has `eval_params`), kept as
`checkpoints/best.pt` beside latest.pt: a run whose later iterations get worse still deploys its best policy.

best.pt holds only what rebuilds the deterministic actor (`policy` for PPO, `algorithm` for the off-policy
algorithms), the iteration and the evaluation that made it best; `robo-rl eval`, `export`, `play` and `collect`
load it by default (`robo_rl.api.runs`), `robo-rl train --resume` never does.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from robo_rl.runners.evaluate import EvalResult
from robo_rl.storage.checkpoint import CheckpointError, load, save_atomic

BEST_CHECKPOINT = "best.pt"
BEST_KEY = "best_evaluation"
"""Key of best.pt (and of the runners' checkpoints) with the evaluation that made the policy best."""


def evaluation_score(evaluation: EvalResult) -> tuple[float, float]:
    """What "better" means: the success rate first (tasks that define success), then the mean return."""
    return _score(evaluation.success_rate, evaluation.mean_return)


def _score(success_rate: float | None, mean_return: float) -> tuple[float, float]:
    return (-1.0 if success_rate is None else success_rate, mean_return)


class BestPolicy:
    """Remembers the best evaluation so far and writes best.pt when an evaluation beats it (ties keep the
    earlier policy: it was reached with less training). With `max_cost` (a constrained run's
    `LoopConfig.max_eval_cost`), an evaluation whose mean cost per episode is above it is never the best."""

    def __init__(self, max_cost: float | None = None) -> None:
        self.max_cost = max_cost
        self.iteration: int | None = None
        self.success_rate: float | None = None
        self.mean_return: float | None = None

    @property
    def score(self) -> tuple[float, float] | None:
        if self.iteration is None or self.mean_return is None:
            return None
        return _score(self.success_rate, self.mean_return)

    def offer(
        self,
        evaluation: EvalResult,
        iteration: int,
        policy_state: Callable[[], dict[str, Any]],
        checkpoints: Path | None,
    ) -> bool:
        """Record `evaluation` of the policy at `iteration`; when it is the best so far, write
        `checkpoints/best.pt` from `policy_state()` (not called otherwise) and return True."""
        cost = evaluation.mean_cost
        if self.max_cost is not None and (cost is None or cost > self.max_cost):
            return False  # over the cost limit: never the best
        score = evaluation_score(evaluation)
        best = self.score
        if best is not None and score <= best:
            return False
        self.iteration, self.success_rate, self.mean_return = iteration, evaluation.success_rate, evaluation.mean_return
        if checkpoints is not None:
            state = {**policy_state(), "iteration": iteration, BEST_KEY: self.state_dict()}
            save_atomic(state, checkpoints / BEST_CHECKPOINT)
        return True

    def state_dict(self) -> dict[str, Any]:
        return {"iteration": self.iteration, "success_rate": self.success_rate, "mean_return": self.mean_return}

    def load_state_dict(self, state: dict[str, Any] | None, checkpoints: Path | None = None) -> None:
        """Restore from a runner checkpoint (None: one written before best.pt existed, start afresh). With the
        run's `checkpoints` folder, a best.pt newer than that checkpoint (a crash between the two saves) stays
        the best, so a resumed run never overwrites it with a worse policy."""
        state = state or {}
        self.iteration = state.get("iteration")
        self.success_rate = state.get("success_rate")
        self.mean_return = state.get("mean_return")
        saved = _saved_best(checkpoints)
        if saved is not None and (
            self.score is None or _score(saved["success_rate"], saved["mean_return"]) > self.score
        ):
            self.iteration, self.success_rate, self.mean_return = (
                saved["iteration"],
                saved["success_rate"],
                saved["mean_return"],
            )


def _saved_best(checkpoints: Path | None) -> dict[str, Any] | None:
    """The evaluation recorded in `checkpoints/best.pt`; None when there is none or it cannot be read (the next
    better evaluation replaces it)."""
    path = None if checkpoints is None else checkpoints / BEST_CHECKPOINT
    if path is None or not path.is_file():
        return None
    try:
        saved = load(path).get(BEST_KEY)
    except (CheckpointError, OSError):  # damaged: not a best to keep
        return None
    return saved if isinstance(saved, dict) and saved.get("mean_return") is not None else None
