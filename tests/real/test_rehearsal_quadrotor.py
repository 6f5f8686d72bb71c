"""The quadrotors' hand-over rehearsed with physics.

The Crazyflie (robo_rl.sim.rehearsal.crazyflie): policy_node's core and its crazyswarm2 link against the firmware's
commander stand-in (robo_rl.sim.quadrotor.crazyflie_commander, restating bitcraze/crazyflie-firmware
2026.08-2-g2a18fc29: crtp_commander_rpyt.c's thrust lock, commander.c's priorities, crtp_commander_high_level.c's
planner; its rules are tested one by one in test_crazyflie_handover.py) flying quadrotor/hover over a ground. PX4
(robo_rl.sim.rehearsal.px4): the node wired as Px4Output against PX4's commander stand-in flying the X500.

The policy is a linear cascaded controller exported as a robo_rl policy (position and velocity errors → the tilt
wanted, tilt error → body rates; height error → thrust about hover): it flies the simulated vehicles steadily
without training, so the rehearsal's measures mean something in CI. The trained policies' numbers are in
docs/BENCHMARKS.md (bench/rehearsal.py)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from robo_rl.real import px4
from robo_rl.real.node_core import NodeSettings
from robo_rl.real.profile import RobotProfile, load_profile
from robo_rl.sim import make
from robo_rl.sim.rehearsal import Report, rehearse, standard_plan
from robo_rl.sim.rehearsal.crazyflie import CrazyflieRig
from robo_rl.sim.rehearsal.px4 import Px4Rig, SimulatedPx4

GRAVITY = 9.81
POSITION_GAIN, VELOCITY_GAIN, TILT_GAIN = 4.0, 3.0, 5.0
"""1/s², 1/s, 1/s: the cascade (as robo_rl.sim.quadrotor.expert's pilot)."""
MAX_RATE = 10.0
"""rad/s at a roll or pitch rate action of 1 (ctbr.max_body_rate)."""


def _cascade_weights(hover: float) -> tuple[dict[tuple[str, str], float], dict[str, float]]:
    """Small-angle cascade in the policy's observation terms: roll ≈ rotation_21, pitch ≈ rotation_02 (FLU body to
    ENU world); the roll wanted is (kp e_y + kd v_y) / g (a positive roll tilts the thrust toward -y), the pitch
    wanted -(kp e_x + kd v_x) / g; rate action = k_tilt (wanted - tilt) / max rate."""
    k = TILT_GAIN / MAX_RATE
    weights = {
        ("roll_rate", "position_error_y"): k * POSITION_GAIN / GRAVITY,
        ("roll_rate", "velocity_y"): k * VELOCITY_GAIN / GRAVITY,
        ("roll_rate", "rotation_21"): -k,
        ("pitch_rate", "position_error_x"): -k * POSITION_GAIN / GRAVITY,
        ("pitch_rate", "velocity_x"): -k * VELOCITY_GAIN / GRAVITY,
        ("pitch_rate", "rotation_02"): -k,
        ("yaw_rate", "rotation_10"): -k,
        ("collective_thrust", "position_error_z"): -0.8,
        ("collective_thrust", "velocity_z"): -0.6,
    }
    return weights, {"collective_thrust": hover}


def _cascade(linear_policy: Callable[..., Path], name: str, params: tuple[str, ...]) -> Path:
    profile = load_profile(name)
    env = make(profile.task, num_envs=1, params=[*profile.task_params, *params])
    weights, bias = _cascade_weights(env.hover_action[0])  # type: ignore[attr-defined]
    return linear_policy(name, weights, bias)


@pytest.fixture(scope="module")
def cascade_policy(linear_policy: Callable[..., Path]) -> Path:
    return _cascade(linear_policy, "quadrotor_crazyswarm2", ("position_integral_limit=0",))


@pytest.fixture(scope="module")
def x500_cascade_policy(linear_policy: Callable[..., Path]) -> Path:
    return _cascade(linear_policy, "quadrotor_px4", ())


def _judge(report: Report, profile: RobotProfile) -> None:
    """The goals of issue 48 on one rehearsal: no rule broken, never the motors off in the air, the four transitions
    in order, the fault answered within one period of the staleness timeout, the take-over's first steps within the
    ramp's share of the thrust action's range (2), every excursion below 10 cm and 0.1 rad."""
    assert profile.handover is not None
    assert report.refusals == [] and report.violations == []
    assert report.airborne_motor_off_periods == 0
    causes = [(t.to, t.cause) for t in report.transitions]
    assert causes == [("policy", "policy"), ("vehicle", "fault"), ("policy", "policy"), ("vehicle", "vehicle")]
    assert 0 <= report.transitions[1].response_periods <= 1
    assert report.transitions[0].command_jump <= 2 * profile.dt / profile.handover.ramp + 1e-6
    for transition in report.transitions:
        assert transition.position_jump < 0.1 and transition.attitude_jump < 0.1, transition


def test_the_crazyflie_takes_off_hands_over_catches_a_fault_and_lands(cascade_policy: Path) -> None:
    profile = load_profile("quadrotor_crazyswarm2")
    assert profile.handover is not None and profile.crazyswarm2 is not None
    target = (0.0, 0.0, profile.crazyswarm2.takeoff_height)
    rig = CrazyflieRig(profile, target)
    plan = standard_plan(True, "odom")
    report = rehearse(rig, str(cascade_policy), plan, NodeSettings(target=target), available=lambda _: False)
    _judge(report, profile)  # violations: a packet the thrust lock zeroed, a zero-thrust packet in the air
    assert rig.world.position()[2] == 0.0  # landed
    assert rig.firmware.log[:10] == ["rpyt thrust=0"] * 10  # unlocked on the ground first
    assert rig.firmware.log[10:12] == ["notify_setpoints_stop", "takeoff height=0.5 duration=2"]


def test_px4_takes_off_holds_hands_over_in_offboard_and_takes_back_in_hold(x500_cascade_policy: Path) -> None:
    """The X500 under PX4's commander stand-in (robo_rl.sim.rehearsal.px4_commander, PX4-Autopilot's
    Commander.cpp, mode_requirements.cpp, offboardCheck.cpp, failsafe.cpp): PX4 takes off and holds; the take-over
    streams the hold setpoint until PX4 is in offboard, then ramps; the silent odometry switches PX4 to Hold
    (DO_SET_MODE AUTO LOITER, accepted) in the period it goes stale; no command rejected, no offboard-loss failsafe,
    never zero thrust in the air."""
    profile = load_profile("quadrotor_px4")
    assert profile.handover is not None
    target = (0.0, 0.0, 1.0)
    rig = Px4Rig(SimulatedPx4(profile, target))
    plan = standard_plan(False, "odom", settle=5.0)
    report = rehearse(rig, str(x500_cascade_policy), plan, NodeSettings(target=target), available=lambda _: False)
    _judge(report, profile)  # violations: a rejected command, a setpoint without the offboard signal, the failsafe
    hold, offboard = px4.NAVIGATION_STATE_AUTO_LOITER, px4.NAVIGATION_STATE_OFFBOARD
    assert [mode for _, mode, _ in rig.commander.modes] == [hold, offboard, hold, offboard, hold]
