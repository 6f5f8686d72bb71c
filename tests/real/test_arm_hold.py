"""The arm's safe command holds its measured joints (profile `safe_command: hold_measured`), without ROS.

PolicyNodeCore on the bundled arm profile with a linear probe policy (each joint's target = its measured angle,
plus 0.5 rad on the yaw), the real JointStateReader as the joint_states decoder and a stepped clock:
nothing before a measured pose, the rate limits from the measured pose, the hold, the move home on request and a
foreign JointState skipped. With real rclpy: tests/real/ros/test_arm_joints.py.

Conventions (common_interfaces 5.5.1, rcl_interfaces 2.3.0: the .msg files of the ros-trajectory-msgs,
ros-sensor-msgs and ros-builtin-interfaces wheels of `.venv-ros`): JointTrajectoryPoint.time_from_start is a
builtin_interfaces/Duration, `int32 sec` + `uint32 nanosec` "in the range of [0, 1e9)", the time from the
trajectory's start (header.stamp; zero: now) to reach the point; JointState's arrays pair with `name` by index,
and a message names only the joints its publisher knows.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from robo_rl.real.command import TIME_FROM_START, trajectory_timing
from robo_rl.real.controller import HOMING, PolicyController
from robo_rl.real.node_core import NodeSettings, PolicyNodeCore
from robo_rl.real.profile import RobotProfile, load_profile
from robo_rl.real.ros.diagnostics import WARN
from robo_rl.real.ros.inputs import input_decoder
from robo_rl.real.runtime import PolicyRuntime

from .conftest import FakeClock

JOINTS = ("yaw", "shoulder", "elbow", "wrist")
HOME = (0.0, 0.5, -1.0, 0.5)  # the arm profile's `safe` values
DRIVER_ORDER = ("elbow", "shoulder", "wrist", "yaw")  # joint_state_broadcaster may publish alphabetically
DT = 0.02
RATE = 2.0  # rad/s, every joint
YAW_BIAS = 0.5  # the probe's yaw target runs 0.5 rad ahead of the yaw: its commands show the rate limit


@dataclass
class Arm:
    clock: FakeClock
    profile: RobotProfile
    core: PolicyNodeCore = field(init=False)
    commands: list[dict[str, float]] = field(default_factory=list)
    faults: list[str] = field(default_factory=list)
    statuses: list[tuple[int, str]] = field(default_factory=list)

    def publish(self, fields: dict[str, float], fault: str) -> None:
        self.commands.append(fields)
        self.faults.append(fault)

    def joint_state(self, pose: Sequence[float], names: Sequence[str] = DRIVER_ORDER) -> None:
        """The driver's JointState of `pose` (profile order), its joints in `names` order."""
        by_name = dict(zip(JOINTS, pose, strict=True))
        message = SimpleNamespace(name=list(names), position=[by_name[n] for n in names], velocity=[0.0] * len(names))
        self.core.on_input("joint_states", message)

    def others(self) -> None:
        self.core.on_input("target", SimpleNamespace(fields={f"target.point.{a}": 0.1 for a in "xyz"}))
        state = {f"state.end_effector_to_target.{a}": 0.1 for a in "xyz"}
        self.core.on_input("state", SimpleNamespace(fields=state))

    def period(self, pose: Sequence[float]) -> None:
        """One control period of fresh inputs: the JointState (the trigger) last."""
        self.clock.advance(DT)
        self.others()
        self.joint_state(pose)

    def sent(self) -> list[float]:
        return [self.commands[-1][f"points[0].positions[{i}]"] for i in range(4)]

    def duration(self) -> float:
        command = self.commands[-1]
        return command[TIME_FROM_START[0]] + command[TIME_FROM_START[1]] * 1e-9


@pytest.fixture
def arm(linear_policy: Callable[..., Path], clock: FakeClock) -> Arm:
    weights = {(f"{joint}_angle_target", f"{joint}_angle"): 1.0 for joint in JOINTS}
    policy = linear_policy("arm", weights, {"yaw_angle_target": YAW_BIAS})
    profile = load_profile("arm")
    controller = PolicyController(PolicyRuntime(policy), profile, clock, available=lambda _: False)
    joint_states = next(spec for spec in profile.inputs if spec.joints)
    decoders: dict[str, Callable[[Any], dict[str, float]]] = {
        "joint_states": input_decoder(profile, joint_states),
        "target": lambda m: dict(m.fields),
        "state": lambda m: dict(m.fields),
    }
    result = Arm(clock, profile)
    result.core = PolicyNodeCore(
        controller,
        NodeSettings(),
        decoders,
        result.publish,
        lambda level, message: result.statuses.append((level, message)),
        now_monotonic=clock,
        now_ros_ns=lambda: round(clock.now * 1e9),
    )
    return result


def test_the_arm_profile_holds_its_measured_pose() -> None:
    profile = load_profile("arm")
    assert profile.safe_command == "hold_measured" and profile.safe_action == HOME
    assert {a.rate_limit for a in profile.actions} == {RATE} and profile.dt == DT


def test_time_from_start_is_a_duration_of_whole_seconds_and_nanoseconds() -> None:
    assert trajectory_timing(0.02) == {TIME_FROM_START[0]: 0.0, TIME_FROM_START[1]: 20_000_000.0}
    assert trajectory_timing(1.6) == {TIME_FROM_START[0]: 1.0, TIME_FROM_START[1]: 600_000_000.0}
    assert trajectory_timing(2.9999999999) == {TIME_FROM_START[0]: 3.0, TIME_FROM_START[1]: 0.0}  # nanosec < 1e9
    with pytest.raises(ValueError, match="time_from_start"):
        trajectory_timing(-0.1)


def test_nothing_is_sent_before_a_measured_pose_then_the_policy_starts_from_it(arm: Arm) -> None:
    arm.core.activate()
    arm.core.on_watchdog()  # activated before any input: no home pose, no command at all
    assert arm.commands == [] and arm.core.counters.withheld_commands == 1
    assert arm.statuses == [(WARN, "safe command: stale observation (nothing sent: no measured pose yet)")]
    pose = (0.3, 0.6, -0.8, 0.2)
    arm.period(pose)
    # Rate limited from the measured pose: the yaw 0.04 rad (2 rad/s × 20 ms) toward its target 0.8, the others
    # already where the probe wants them. From the home pose it would have been (0.04, 0.54, -0.96, 0.46).
    assert arm.faults == [""] and arm.sent() == pytest.approx([0.34, 0.6, -0.8, 0.2])
    assert arm.duration() == pytest.approx(DT)
    assert arm.commands[-1][TIME_FROM_START[0]] == 0.0 and arm.commands[-1][TIME_FROM_START[1]] == 20_000_000


def test_stale_joint_states_hold_the_last_measured_pose_and_the_policy_restarts_from_the_next(arm: Arm) -> None:
    arm.core.activate()
    pose = (0.3, 0.6, -0.8, 0.2)
    for _ in range(3):
        arm.period(pose)
    assert arm.sent()[0] == pytest.approx(0.42)  # the yaw 0.12 rad ahead of the arm after three periods
    arm.clock.advance(arm.profile.staleness_timeout + 0.001)
    arm.core.on_watchdog()
    assert arm.faults[-1] == "stale observation" and arm.sent() == pytest.approx(pose)
    assert arm.duration() == pytest.approx(0.12 / RATE)  # back from the last command at 2 rad/s: 60 ms
    arm.clock.advance(DT)
    arm.core.on_watchdog()
    assert arm.sent() == pytest.approx(pose) and arm.duration() == pytest.approx(DT)
    moved = (1.0, 0.2, -0.5, 0.0)  # pushed by hand while the driver was silent
    arm.period(moved)
    assert arm.faults[-1] == "" and arm.sent() == pytest.approx([1.04, 0.2, -0.5, 0.0])  # from `moved`, not `pose`


def test_a_foreign_joint_state_is_skipped_and_only_the_arms_silence_holds(arm: Arm) -> None:
    arm.core.activate()
    pose = (0.3, 0.6, -0.8, 0.2)
    arm.period(pose)
    commands = len(arm.commands)
    gripper = SimpleNamespace(name=["finger_left", "finger_right"], position=[0.01, 0.01], velocity=[0.0, 0.0])
    for _ in range(4):  # a gripper's driver on the same topic, between the arm's messages
        arm.clock.advance(DT / 2)
        arm.core.on_input("joint_states", gripper)
        arm.clock.advance(DT / 2)
        arm.period(pose)
    assert len(arm.commands) == commands + 4 and set(arm.faults) == {""}  # one command per arm message, none latched
    values = arm.core.diagnostics()
    assert values["skipped_messages"] == 4 and values["estopped"] is False
    assert "lacks joint(s) ['yaw', 'shoulder', 'elbow', 'wrist']" in str(values["last_skipped"])
    for _ in range(6):  # now only the gripper publishes: 120 ms without a complete message
        arm.clock.advance(DT)
        arm.others()
        arm.core.on_input("joint_states", gripper)
        arm.core.on_watchdog()
    assert arm.faults[-1] == "stale observation: no joint_states for 0.1 s" and arm.sent() == pytest.approx(pose)
    arm.period(pose)  # the arm's driver is back: control resumes, nothing latched
    assert arm.faults[-1] == "" and arm.core.counters.skipped_messages == 10


def test_go_home_moves_home_timed_by_the_farthest_joint_then_holds_on_deactivation(arm: Arm) -> None:
    arm.core.activate()
    far = (1.2, 0.6, -0.8, 0.2)
    arm.period(far)
    arm.core.go_home()
    arm.core.intervene([0.0, 0.0, 0.0, 0.0])  # the operator's action does not replace the move home
    arm.period(far)
    assert arm.faults[-1] == HOMING and arm.sent() == pytest.approx(HOME)
    # max |home - measured| = |0 - 1.2| (yaw) → 1.2 rad / 2 rad/s = 0.6 s
    assert arm.duration() == pytest.approx(0.6) and arm.commands[-1][TIME_FROM_START[1]] == 600_000_000
    assert arm.statuses[-1] == (WARN, f"safe command: {HOMING}")
    halfway = (0.6, 0.55, -0.9, 0.35)
    arm.period(halfway)
    assert arm.sent() == pytest.approx(HOME) and arm.duration() == pytest.approx(0.3)
    arm.period(HOME)
    assert arm.duration() == pytest.approx(DT) and arm.core.diagnostics()["homing"] is True
    arm.clock.advance(arm.profile.staleness_timeout + 0.001)  # a stale input during the move: hold, not home
    arm.core.on_watchdog()
    assert arm.faults[-1].startswith("stale observation") and arm.sent() == pytest.approx(HOME)
    near = (0.05, 0.5, -1.0, 0.5)
    arm.period(near)
    assert arm.core.stop("deactivated")  # the last command holds where the arm is
    assert arm.faults[-1] == "deactivated" and arm.sent() == pytest.approx(near)
    assert arm.core.diagnostics()["homing"] is False


def test_go_home_asked_while_inactive_starts_at_activation_and_false_gives_control_back(arm: Arm) -> None:
    arm.core.go_home()
    arm.core.activate()
    pose = (0.3, 0.6, -0.8, 0.2)
    arm.period(pose)
    assert arm.faults == [HOMING] and arm.sent() == pytest.approx(HOME)
    assert arm.duration() == pytest.approx(0.3 / RATE)  # the yaw and the wrist, 0.3 rad each
    arm.core.resume_policy()
    arm.period(pose)
    assert arm.faults[-1] == "" and arm.sent() == pytest.approx([0.34, 0.6, -0.8, 0.2])  # from the measured pose


def test_go_home_needs_a_profile_that_holds_its_pose(policy_file: Callable[[str], Path], clock: FakeClock) -> None:
    profile = load_profile("quadrotor_crazyflie")
    controller = PolicyController(PolicyRuntime(policy_file(profile.name)), profile, clock, available=lambda _: False)
    with pytest.raises(ValueError, match="go_home needs safe_command: hold_measured"):
        controller.go_home()
