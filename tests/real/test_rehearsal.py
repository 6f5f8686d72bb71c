"""Rehearsals of the hand-over protocol (robo_rl.sim.rehearsal) on the ground vehicles: the RC car against the
VESC chain (f1tenth/vesc ros2 153998d: vesc_ackermann's linear maps, vesc_driver's clamps; the bundled calibration),
the arm against joint_trajectory_controller's acceptance rule (ros2_controllers jazzy ed360c9,
validate_trajectory_msg) on a controller clock skewed from ours. The quadrotors' rehearsals are in
test_crazyflie_handover.py and test_px4_handover.py."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest

from robo_rl.real.handover import HandoverSettings
from robo_rl.real.profile import load_profile
from robo_rl.sim.rehearsal import Event, Plan, rehearse, standard_plan
from robo_rl.sim.rehearsal.arm import ArmRig
from robo_rl.sim.rehearsal.car import CarRig


def _no_messages(_: str) -> bool:
    return False


def test_the_car_hands_over_and_back_without_breaking_the_vesc_rules(policy_file: Callable[[str], Path]) -> None:
    ramp = 0.5
    profile = replace(load_profile("rc_car"), handover=HandoverSettings("stop", ramp=ramp))
    plan = standard_plan(False, "track")
    report = rehearse(CarRig(profile), str(policy_file("rc_car")), plan, available=_no_messages)
    assert report.violations == []
    assert [(t.to, t.cause) for t in report.transitions] == [
        ("policy", "policy"),
        ("vehicle", "fault"),
        ("policy", "policy"),
        ("vehicle", "vehicle"),
    ]
    fault = report.transitions[1]
    assert 0 <= fault.response_periods <= 1  # stopped within one period of the input going stale
    take_overs = [t for t in report.transitions if t.to == "policy"]
    # Actions span 2 (from -1 to 1): a take-over's steps stay within the ramp's share of that.
    assert all(t.command_jump <= 2 * profile.dt / ramp + 1e-9 for t in take_overs)


def test_the_car_rehearsal_counts_a_clamped_command(linear_policy: Callable[..., Path]) -> None:
    """A calibration whose servo stops short of the policy's steering angle (built past the profile's own refusal:
    the servo reaches +-0.2 rad) makes every clamped command a violation: here a policy steering 0.8 (0.335 rad)."""
    profile = load_profile("rc_car")
    assert profile.vesc is not None
    rig = CarRig(replace(profile, handover=HandoverSettings("stop", ramp=0.0)))
    rig.vesc = replace(profile.vesc, servo_min=0.3, servo_max=0.7)
    plan = Plan((Event(0.0, "policy"),), 0.5)
    policy = linear_policy("rc_car", {}, {"steering": 0.8, "drive": 0.2})
    report = rehearse(rig, str(policy), plan, available=_no_messages)
    assert len(report.violations) >= 20 and "the servo clamps +0.335 rad" in report.violations[-1]


@pytest.mark.parametrize("skew", [-1.0, 1.0])
def test_the_arm_hands_over_and_back_with_every_trajectory_accepted(
    policy_file: Callable[[str], Path], skew: float
) -> None:
    """joint_trajectory_controller's clock 1 s ahead of or behind ours: every command (the policy's, the ramp's,
    the held pose) is taken, since they go out stamped zero."""
    ramp = 0.5
    profile = replace(load_profile("arm"), handover=HandoverSettings("hold_measured", ramp=ramp))
    rig = ArmRig(profile, ["action_mode=position"], skew=skew)
    report = rehearse(rig, str(policy_file("arm")), standard_plan(False, "joint_states"), available=_no_messages)
    assert report.violations == []
    assert [t.cause for t in report.transitions] == ["policy", "fault", "policy", "vehicle"]
    assert 0 <= report.transitions[1].response_periods <= 1
    rate_step = max(a.rate_limit for a in profile.actions) * profile.dt
    assert all(t.command_jump <= rate_step + 1e-9 for t in report.transitions)
