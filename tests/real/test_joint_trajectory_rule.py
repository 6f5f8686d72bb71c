"""The arm's JointTrajectory commands against joint_trajectory_controller's acceptance rule, without ROS.

The rule (`jtc_accepts`) is restated in our words from ros-controls/ros2_controllers, branch jazzy at commit
ed360c97d6e9e74cb884e3e39a949d987cd15c11 (2026-08-16), joint_trajectory_controller/src/joint_trajectory_controller.cpp,
`JointTrajectoryController::validate_trajectory_msg` (with `validate_trajectory_point_field`), which both the topic
callback and the action goal callback run before a trajectory replaces the current one; a rejected trajectory is
dropped with an error log and the controller keeps its old reference (the arm freezes). Its checks, in order:

- unless `allow_partial_joints_goal` (default false), exactly as many joint names as the controller's `joints`;
- at least one joint name and at least one point;
- every joint name one of the controller's `joints`;
- unless `allow_nonzero_velocity_at_trajectory_end` (default false), every velocity of the last point at most
  float epsilon in magnitude;
- a non-zero `header.stamp` is the start time on the controller's clock: the trajectory is dropped when
  stamp + the last point's time_from_start is earlier than the controller's now. A zero stamp skips the check: the
  controller starts the trajectory at its first sample of it, on its own clock (trajectory.cpp, `Trajectory::sample`);
- time_from_start strictly increasing from point to point;
- (without `allow_integration_in_goal_trajectories`, default false) each point's positions one per joint name,
  its velocities and accelerations empty or one per joint name;
- effort values only for a controller with the effort command interface.

policy_node stamps a JointTrajectory zero (`robo_rl.real.command.stamped_now`, used by the ROS layer's
CommandOutput; the published stamp is checked with real rclpy in tests/real/ros/test_arm_joints.py). Before, it
stamped our now: with the robot's clock 1 s ahead of ours, every 20 ms command ended 0.98 s in the controller's past.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pytest

from robo_rl.real.command import stamped_now
from robo_rl.real.controller import HOMING, PolicyController
from robo_rl.real.profile import JOINT_TRAJECTORY, RobotProfile, load_profile
from robo_rl.real.runtime import PolicyRuntime
from robo_rl.sim.rehearsal.jtc import NS, Point, Trajectory, jtc_accepts, one_point_trajectory
from robo_rl.sim.rehearsal.jtc import Controller as JtcController

from .conftest import FakeClock, export_linear_policy

JOINTS = ("yaw", "shoulder", "elbow", "wrist")
POSE = (1.2, 0.6, -0.8, 0.2)  # the measured pose, profile order
OUR_NOW_NS = 1_764_400_000 * NS + 123_456_789  # a wall-clock time on policy_node's computer
SKEWS_S = (-10.0, -1.0, -0.02, 0.0, 0.02, 1.0, 10.0)
"""The controller's clock minus ours."""


def Controller(**settings: Any) -> JtcController:
    """The arm's controller at our now unless told otherwise (jazzy's defaults otherwise)."""
    return JtcController(**{"joints": JOINTS, "now_ns": OUR_NOW_NS, **settings})


def sent_stamp_ns(command_type: str, our_now_ns: int) -> int:
    """The header stamp CommandOutput gives a command of `command_type` sent at `our_now_ns`."""
    return our_now_ns if stamped_now(command_type) else 0


@dataclass(frozen=True)
class ArmCommands:
    """What policy_node's controller sends on the arm profile: the policy's command, the hold, the move home."""

    profile: RobotProfile
    policy: dict[str, float]
    hold: dict[str, float]
    home: dict[str, float]


def _observe(controller: PolicyController, pose: Sequence[float]) -> None:
    joints = {f"joint_states.position[{i}]": angle for i, angle in enumerate(pose)}
    joints |= {f"joint_states.velocity[{i}]": 0.0 for i in range(len(pose))}
    controller.observe(joints, "joint_states")
    controller.observe({f"target.point.{axis}": 0.1 for axis in "xyz"}, "target")
    controller.observe({f"state.end_effector_to_target.{axis}": 0.1 for axis in "xyz"}, "state")


@pytest.fixture(scope="module")
def arm_commands(tmp_path_factory: pytest.TempPathFactory) -> ArmCommands:
    weights = {(f"{joint}_angle_target", f"{joint}_angle"): 1.0 for joint in JOINTS}
    policy = export_linear_policy("arm", tmp_path_factory.mktemp("arm") / "policy.onnx", weights, {})
    profile = load_profile("arm")
    clock = FakeClock()
    controller = PolicyController(PolicyRuntime(policy), profile, clock, available=lambda _: False)
    controller.restart()
    _observe(controller, POSE)
    policy_fields = controller.step().fields
    clock.advance(profile.staleness_timeout + 0.001)  # the inputs go silent: the measured pose held
    hold = controller.step()
    assert hold.safety.fault.startswith("stale observation"), hold.safety.fault
    _observe(controller, POSE)
    controller.go_home()
    home = controller.step()
    assert home.safety.fault == HOMING
    return ArmCommands(profile, policy_fields, hold.fields, home.fields)


def _duration_s(fields: Mapping[str, float]) -> float:
    return fields["points[0].time_from_start.sec"] + fields["points[0].time_from_start.nanosec"] * 1e-9


def test_only_a_joint_trajectory_goes_out_with_a_zero_stamp() -> None:
    assert not stamped_now(JOINT_TRAJECTORY)
    for stamped in ("ackermann_msgs/msg/AckermannDriveStamped", "geometry_msgs/msg/TwistStamped"):
        assert stamped_now(stamped)
    assert sent_stamp_ns(JOINT_TRAJECTORY, OUR_NOW_NS) == 0
    assert sent_stamp_ns("ackermann_msgs/msg/AckermannDriveStamped", OUR_NOW_NS) == OUR_NOW_NS


def test_the_restated_rule_keeps_the_sources_checks() -> None:
    """Hand-made trajectories, one per check of validate_trajectory_msg, at the controller's now (no skew)."""
    still = Point(20_000_000, POSE)
    accept = Trajectory(OUR_NOW_NS, JOINTS, (still,))
    controller = Controller()
    assert jtc_accepts(accept, controller) == ""
    ends_now = Trajectory(OUR_NOW_NS - 20_000_000, JOINTS, (still,))  # ends exactly at now: not in the past
    assert jtc_accepts(ends_now, controller) == ""
    assert jtc_accepts(Trajectory(OUR_NOW_NS - 20_000_001, JOINTS, (still,)), controller) == "ends in the past"
    partial = Trajectory(0, JOINTS[:3], (Point(20_000_000, POSE[:3]),))
    assert jtc_accepts(partial, controller) == "joint count differs from the controller's"
    assert jtc_accepts(partial, Controller(allow_partial_joints_goal=True)) == ""
    assert jtc_accepts(Trajectory(0, JOINTS, ()), controller) == "no points"
    moving = Point(20_000_000, POSE, velocities=(0.1, 0.0, 0.0, 0.0))
    assert jtc_accepts(Trajectory(0, JOINTS, (moving,)), controller) == "last point moves"
    assert (
        jtc_accepts(Trajectory(0, JOINTS, (moving,)), Controller(allow_nonzero_velocity_at_trajectory_end=True)) == ""
    )
    twice = Trajectory(0, JOINTS, (still, still))
    assert jtc_accepts(twice, controller) == "time_from_start not increasing"
    short = Trajectory(0, JOINTS, (Point(20_000_000, POSE[:3]),))
    assert jtc_accepts(short, controller) == "a point's values do not match the joint names"
    pushing = Trajectory(0, JOINTS, (Point(20_000_000, POSE, effort=(1.0, 1.0, 1.0, 1.0)),))
    assert jtc_accepts(pushing, controller) == "effort without an effort command interface"


def test_the_policys_command_is_accepted_whatever_the_clock_skew(arm_commands: ArmCommands) -> None:
    spec = arm_commands.profile.commands[0]
    assert spec.type == JOINT_TRAJECTORY and _duration_s(arm_commands.policy) == pytest.approx(0.02)
    sent = one_point_trajectory(arm_commands.policy, spec.joint_names, sent_stamp_ns(spec.type, OUR_NOW_NS))
    assert sent.stamp_ns == 0 and sent.points[0].positions[1:] == pytest.approx(POSE[1:])
    for skew in SKEWS_S:
        assert jtc_accepts(sent, Controller(now_ns=OUR_NOW_NS + round(skew * NS))) == "", skew


def test_the_old_stamp_of_our_now_froze_the_arm_when_the_robots_clock_ran_ahead(arm_commands: ArmCommands) -> None:
    """The bug: stamp = our now, time_from_start 20 ms. The controller drops the command once its clock runs more
    than 20 ms ahead of ours (1 s: the command ended 0.98 s ago on its clock); behind, it waits, then starts it."""
    spec = arm_commands.profile.commands[0]
    old = one_point_trajectory(arm_commands.policy, spec.joint_names, OUR_NOW_NS)
    verdicts = {skew: jtc_accepts(old, Controller(now_ns=OUR_NOW_NS + round(skew * NS))) for skew in SKEWS_S}
    assert verdicts == {
        -10.0: "",
        -1.0: "",
        -0.02: "",
        0.0: "",
        0.02: "",  # ends exactly at the controller's now
        1.0: "ends in the past",
        10.0: "ends in the past",
    }
    assert jtc_accepts(old, Controller(now_ns=OUR_NOW_NS + 20_000_001)) == "ends in the past"


@pytest.mark.parametrize("kind", ["hold", "home"])
def test_the_hold_and_the_move_home_are_accepted_whatever_the_clock_skew(arm_commands: ArmCommands, kind: str) -> None:
    spec = arm_commands.profile.commands[0]
    fields = arm_commands.hold if kind == "hold" else arm_commands.home
    # The hold: at least one period (the last command was the measured pose); home: |0 - 1.2| rad (yaw) / 2 rad/s.
    assert _duration_s(fields) == pytest.approx({"hold": 0.02, "home": 0.6}[kind])
    sent = one_point_trajectory(fields, spec.joint_names, sent_stamp_ns(spec.type, OUR_NOW_NS))
    expected = POSE if kind == "hold" else arm_commands.profile.safe_action
    assert sent.stamp_ns == 0 and sent.points[0].positions == pytest.approx(expected)
    for skew in SKEWS_S:
        assert jtc_accepts(sent, Controller(now_ns=OUR_NOW_NS + round(skew * NS))) == "", skew


def test_the_profiles_joint_names_must_be_the_controllers(arm_commands: ArmCommands) -> None:
    """A controller configured with the URDF's own names (e.g. joint_1..joint_4) drops every command: the profile's
    joint_names must be the controller's `joints` (any order: the controller re-sorts by name)."""
    spec = arm_commands.profile.commands[0]
    sent = one_point_trajectory(arm_commands.policy, spec.joint_names, 0)
    assert jtc_accepts(sent, Controller(joints=tuple(reversed(JOINTS)))) == ""
    renamed = Controller(joints=("joint_1", "joint_2", "joint_3", "joint_4"))
    assert jtc_accepts(sent, renamed) == "joint yaw is not the controller's"
    with_gripper = Controller(joints=(*JOINTS, "finger"))
    assert jtc_accepts(sent, with_gripper) == "joint count differs from the controller's"
