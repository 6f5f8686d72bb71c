"""Fixtures shared by the MuJoCo backend tests."""

from __future__ import annotations

import warnings
from collections.abc import Callable

import pytest

from robo_rl.sim.gymnasium_adapter import check_task

# check_env's advice about a task's choice of units, not about the API: actions are in SI units (N, N*m, rad),
# observations may be unbounded.
ADVISORY_WARNINGS = ("symmetric and normalized space", "is -infinity", "is infinity")


@pytest.fixture
def checked_task() -> Callable[[str], list[str]]:
    """Runs Gymnasium's env checker on a registered task; returns the warnings that are not advisory."""

    def check(name: str) -> list[str]:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            check_task(name)
        return [str(w.message) for w in caught if not any(a in str(w.message) for a in ADVISORY_WARNINGS)]

    return check
