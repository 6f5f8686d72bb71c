"""Curriculum: initial-state and randomization ranges that grow from a fraction to their full size."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class CurriculumConfig:
    """Linear growth of every initial-state range and randomization half-range over the first `steps` control
    steps of an env (counted once per batched `step`, so it does not depend on num_envs). Off by default.

    At control step k the ranges are `fraction(k)` of their configured size: scales drawn as 1 +- f r,
    disturbances +- f d, latency floor(f L) and initial offsets +- f x. Observation noise is not scaled.
    """

    steps: int = 0
    """Control steps until the ranges reach full size; 0 disables the curriculum (full ranges from the start)."""
    initial_fraction: float = 0.25
    """Fraction of the full ranges at step 0."""

    def __post_init__(self) -> None:
        if not isinstance(self.steps, int) or self.steps < 0:
            raise ValueError(f"CurriculumConfig.steps must be an int >= 0, got {self.steps!r}")
        if not 0.0 <= self.initial_fraction <= 1.0:
            raise ValueError(f"CurriculumConfig.initial_fraction must lie in [0, 1], got {self.initial_fraction}")

    def fraction(self, step: int) -> float:
        """Size of the ranges at control step `step`, relative to the configured ranges."""
        if self.steps == 0 or step >= self.steps:
            return 1.0
        return self.initial_fraction + (1.0 - self.initial_fraction) * step / self.steps
