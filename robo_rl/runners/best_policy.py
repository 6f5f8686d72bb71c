"""The best policy of a run by its evaluations (held-out ones where the task has `eval_params`), kept as
`checkpoints/best.pt` beside latest.pt: a run whose later iterations get worse still deploys its best policy.

best.pt holds only what rebuilds the deterministic actor (`policy` for PPO, `algorithm` for the off-policy
algorithms), the iteration and the evaluation that made it best; `robo-rl eval`, `export`, `play` and `collect`
load it by default (`robo_rl.cli.run_loading`), `robo-rl train --resume` never does.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from robo_rl.runners.checkpoint import save_atomic
from robo_rl.runners.evaluate import EvalResult

BEST_CHECKPOINT = "best.pt"
BEST_KEY = "best_evaluation"
"""Key of best.pt (and of the runners' checkpoints) with the evaluation that made the policy best."""


def evaluation_score(evaluation: EvalResult) -> tuple[float, float]:
    """What "better" means: the success rate first (tasks that define success), then the mean return."""
    rate = evaluation.success_rate
    return (-1.0 if rate is None else rate, evaluation.mean_return)


class BestPolicy:
    """Remembers the best evaluation so far and writes best.pt when an evaluation beats it (ties keep the
    earlier policy: it was reached with less training)."""

    def __init__(self) -> None:
        self.iteration: int | None = None
        self.success_rate: float | None = None
        self.mean_return: float | None = None

    @property
    def score(self) -> tuple[float, float] | None:
        if self.iteration is None or self.mean_return is None:
            return None
        return (-1.0 if self.success_rate is None else self.success_rate, self.mean_return)

    def offer(
        self,
        evaluation: EvalResult,
        iteration: int,
        policy_state: Callable[[], dict[str, Any]],
        checkpoints: Path | None,
    ) -> bool:
        """Record `evaluation` of the policy at `iteration`; when it is the best so far, write
        `checkpoints/best.pt` from `policy_state()` (not called otherwise) and return True."""
        score = evaluation_score(evaluation)
        best = self.score
        if best is not None and score <= best:
            return False
        self.iteration, self.success_rate, self.mean_return = iteration, evaluation.success_rate, evaluation.mean_return
        if checkpoints is not None:
            state = {**policy_state(), "iteration": iteration, BEST_KEY: self.state_dict()}
            save_atomic(state, checkpoints / BEST_CHECKPOINT)
        return True

    def describe(self) -> str:
        if self.iteration is None:
            return "no evaluation yet"
        rate = "" if self.success_rate is None else f"success {self.success_rate:.1%}, "
        return f"iteration {self.iteration} ({rate}return {self.mean_return:.2f})"

    def state_dict(self) -> dict[str, Any]:
        return {"iteration": self.iteration, "success_rate": self.success_rate, "mean_return": self.mean_return}

    def load_state_dict(self, state: dict[str, Any] | None) -> None:
        """Restore from a runner checkpoint; None (a checkpoint written before best.pt existed) starts afresh."""
        state = state or {}
        self.iteration = state.get("iteration")
        self.success_rate = state.get("success_rate")
        self.mean_return = state.get("mean_return")
