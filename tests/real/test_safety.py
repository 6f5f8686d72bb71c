"""SafetyFilter against hand-computed commands: clip, rate limit, non-finite guard, e-stop latch."""

from __future__ import annotations

import math

import numpy as np
import pytest

from robo_rl.real.profile import ActionLimit
from robo_rl.real.safety import SafetyFilter

LIMITS = (
    ActionLimit("thrust", "1", low=-1.0, high=1.0, safe=-1.0, rate_limit=10.0),
    ActionLimit("steer", "rad", low=-0.5, high=0.5, safe=0.0),
)
DT = 0.02  # thrust moves at most 10 /s × 0.02 s = 0.2 per step


def test_rate_limit_starts_from_the_safe_command() -> None:
    safety = SafetyFilter(LIMITS, DT)
    commands = [safety(np.array([1.0, 0.3])).command for _ in range(4)]
    np.testing.assert_allclose(commands, [[-0.8, 0.3], [-0.6, 0.3], [-0.4, 0.3], [-0.2, 0.3]])


def test_clip_then_rate_limit_flags() -> None:
    safety = SafetyFilter(LIMITS, DT)
    first = safety(np.array([-0.9, 2.0]))
    np.testing.assert_allclose(first.command, [-0.9, 0.5])
    assert first.clipped and not first.rate_limited and first.fault == ""
    second = safety(np.array([0.0, 0.5]))
    np.testing.assert_allclose(second.command, [-0.7, 0.5])
    assert second.rate_limited and not second.clipped


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_non_finite_action_gives_the_safe_command(bad: float) -> None:
    safety = SafetyFilter(LIMITS, DT)
    result = safety(np.array([0.0, bad]))
    np.testing.assert_array_equal(result.command, [-1.0, 0.0])
    assert result.fault == "non-finite action" and safety.fault_count == 1
    assert safety(np.array([-1.0, 0.1])).fault == ""  # not latched


def test_non_finite_observation_gives_the_safe_command() -> None:
    safety = SafetyFilter(LIMITS, DT)
    result = safety(np.array([-1.0, 0.1]), observation=np.array([1.0, math.nan]))
    assert result.fault == "non-finite observation"
    np.testing.assert_array_equal(result.command, [-1.0, 0.0])


def test_estop_latches_until_reset() -> None:
    safety = SafetyFilter(LIMITS, DT)
    safety(np.array([-0.8, 0.2]))
    safety.estop()
    for _ in range(3):
        result = safety(np.array([-0.8, 0.2]))
        assert result.fault == "e-stop"
        np.testing.assert_array_equal(result.command, [-1.0, 0.0])
    safety.reset()
    result = safety(np.array([1.0, 0.2]))
    assert result.fault == ""
    np.testing.assert_allclose(result.command, [-0.8, 0.2])  # rate limited from the safe command again


def test_safe_command_is_not_rate_limited() -> None:
    safety = SafetyFilter(LIMITS, DT)
    for _ in range(10):
        safety(np.array([1.0, 0.0]))
    assert safety.previous[0] == pytest.approx(1.0)
    np.testing.assert_array_equal(safety(np.array([math.nan, 0.0])).command, [-1.0, 0.0])


def test_bad_arguments() -> None:
    with pytest.raises(ValueError, match="dt: must be > 0, got 0"):
        SafetyFilter(LIMITS, 0)
    with pytest.raises(ValueError, match=r"action shape \(3,\), expected \(2,\)"):
        SafetyFilter(LIMITS, DT)(np.zeros(3))
