"""SafetyFilter against hand-computed commands: clip, rate limit, non-finite guard, e-stop latch."""

from __future__ import annotations

import math

import numpy as np
import pytest

from robo_rl.real.fault import Fault, FaultKind
from robo_rl.real.profile import ActionLimit
from robo_rl.real.safety import SafetyFilter

LIMITS = (
    ActionLimit("thrust", "1", low=-1.0, high=1.0, safe=-1.0, rate_limit=10.0),
    ActionLimit("steer", "rad", low=-0.5, high=0.5, safe=0.0),
)
DT = 0.02  # thrust moves at most 10 /s × 0.02 s = 0.2 per step

STALE = Fault(FaultKind.STALE)
HOMING = Fault(FaultKind.HOMING)


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


# --------------------------------------------------------------------------- hold_measured (a position-commanded arm)

JOINTS = (
    ActionLimit("shoulder", "rad", low=-1.6, high=1.6, safe=0.5, rate_limit=2.0),
    ActionLimit("elbow", "rad", low=-2.6, high=2.6, safe=-1.0, rate_limit=1.0),
)
HOME = [0.5, -1.0]  # the joints' `safe` values: the home pose, only on request


def test_hold_sends_nothing_before_a_measured_pose() -> None:
    safety = SafetyFilter(JOINTS, DT, hold_measured=True)
    for result in (safety.safe_command(STALE), safety(np.array([0.0, 0.0]))):
        assert result.withheld and result.fault  # never the home pose as a fallback
    assert safety.home_command(HOMING).withheld


def test_hold_keeps_the_pose_measured_when_the_safe_commands_began() -> None:
    safety = SafetyFilter(JOINTS, DT, hold_measured=True)
    safety.measure([0.2, -0.4])
    first = safety(np.array([0.2, -0.4]))
    assert not first.withheld and first.duration == DT
    safety.measure([0.25, -0.4])  # the arm followed
    held = safety.safe_command(Fault(FaultKind.NON_FINITE, message="non-finite observation"))
    np.testing.assert_allclose(held.command, [0.25, -0.4])
    safety.measure([0.1, 0.3])  # measurements go on (e.g. an e-stop): the hold does not follow them
    np.testing.assert_allclose(safety.safe_command(Fault(FaultKind.ESTOP)).command, [0.25, -0.4])


def test_hold_duration_keeps_each_joint_within_its_rate_limit() -> None:
    safety = SafetyFilter(JOINTS, DT, hold_measured=True)
    safety.measure([0.0, 0.0])
    safety(np.array([0.0, 0.0]))
    for _ in range(5):  # the commands run ahead: shoulder 0.04 rad/step (2 rad/s), elbow 0.02 (1 rad/s)
        sent = safety(np.array([1.0, 1.0])).command
    np.testing.assert_allclose(sent, [0.2, 0.1])
    safety.measure([0.1, 0.02])  # where the arm is: behind its commands
    held = safety.safe_command(STALE)
    # back from the last command (0.2, 0.1) to (0.1, 0.02): max(0.1 / 2, 0.08 / 1) = 0.08 s
    assert held.duration == pytest.approx(0.08)
    assert safety.safe_command(STALE).duration == pytest.approx(DT)  # already there


def test_hold_restarts_the_rate_limits_from_the_measured_pose() -> None:
    safety = SafetyFilter(JOINTS, DT, hold_measured=True)
    safety.measure([1.0, -2.0])
    np.testing.assert_allclose(safety(np.array([1.5, -2.5])).command, [1.04, -2.02])  # not from home (0.5, -1)
    safety.safe_command(STALE)
    safety.measure([-0.3, 0.4])  # moved by hand while the inputs were stale
    np.testing.assert_allclose(safety(np.array([1.5, 1.0])).command, [-0.26, 0.42])
    safety.estop()
    safety.reset()  # activation: the earlier measurements are forgotten
    assert safety(np.array([0.0, 0.0])).withheld
    safety.measure([0.3, 0.3])
    np.testing.assert_allclose(safety(np.array([0.0, 0.0])).command, [0.26, 0.28])


def test_home_is_timed_by_the_farthest_joint_at_its_rate_limit() -> None:
    safety = SafetyFilter(JOINTS, DT, hold_measured=True)
    safety.measure([1.3, -0.2])
    home = safety.home_command(HOMING)
    np.testing.assert_allclose(home.command, HOME)
    # |0.5 - 1.3| / 2 = 0.4 s, |-1.0 + 0.2| / 1 = 0.8 s: the elbow sets the pace
    assert home.duration == pytest.approx(0.8) and home.fault == "going home"
    safety.measure(HOME)
    assert safety.home_command(HOMING).duration == pytest.approx(DT)  # there: one period
    safety.measure([0.45, -0.9])
    safety.estop()  # the e-stop wins: the pose where the arm is, held
    stopped = safety.home_command(HOMING)
    np.testing.assert_allclose(stopped.command, [0.45, -0.9])
    assert stopped.fault == "e-stop"


def test_travel_time_by_hand() -> None:
    safety = SafetyFilter(JOINTS, DT, hold_measured=True)
    assert safety.travel_time(np.array([0.0, 0.0]), np.array([-1.0, 0.5])) == pytest.approx(0.5)
    assert safety.travel_time(np.array([0.0, 0.0]), np.array([0.001, 0.0])) == pytest.approx(DT)
    assert safety.travel_time(None, np.array([1.0, 1.0])) == pytest.approx(DT)


def test_a_fixed_safe_command_is_unchanged_by_measurements() -> None:
    safety = SafetyFilter(LIMITS, DT)
    safety.measure([0.3, 0.3])
    result = safety.safe_command(STALE)
    np.testing.assert_array_equal(result.command, [-1.0, 0.0])
    assert not result.withheld and result.duration == 0.0
    np.testing.assert_allclose(safety(np.array([1.0, 0.3])).command, [-0.8, 0.3])  # from the safe command
