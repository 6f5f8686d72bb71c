"""Arms: JointState read by joint name (drivers publish their own order, often alphabetical), the command's joint
order from the profile, a JointState lacking a profile joint refused (the node skips it), and the profiles whose safe
command holds the measured joints."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from importlib import resources

import pytest
import yaml

from robo_rl.real.profile import ProfileError, held_joint_sources, load_profile, profile_from_dict
from robo_rl.real.ros.inputs import InputError, JointStateReader

PROFILE_ORDER = ("yaw", "shoulder", "elbow", "wrist")


@dataclass
class JointState:
    """The fields of sensor_msgs/msg/JointState that a reader uses (the ROS class itself is tested in .venv-ros)."""

    name: list[str]
    position: list[float]
    velocity: list[float] = field(default_factory=list)
    effort: list[float] = field(default_factory=list)


def _reader() -> JointStateReader:
    profile = load_profile("arm")
    spec = profile.inputs[0]
    paths = [o.source.removeprefix("joint_states.") for o in profile.observations if o.source.startswith("joint_")]
    return JointStateReader(spec.name, spec.joints, paths)


def test_a_shuffled_joint_state_is_read_by_name() -> None:
    # A driver's alphabetical order: elbow, shoulder, wrist, yaw.
    message = JointState(["elbow", "shoulder", "wrist", "yaw"], [-1.0, 0.5, 0.25, 0.1], [10.0, 20.0, 30.0, 40.0])
    fields = _reader()(message)
    assert [fields[f"joint_states.position[{i}]"] for i in range(4)] == [0.1, 0.5, -1.0, 0.25]
    assert [fields[f"joint_states.velocity[{i}]"] for i in range(4)] == [40.0, 20.0, 10.0, 30.0]


def test_extra_joints_are_ignored_and_empty_arrays_left_missing() -> None:
    message = JointState(["gripper", "yaw", "shoulder", "elbow", "wrist"], [0.9, 0.1, 0.2, 0.3, 0.4])
    fields = _reader()(message)
    assert [fields[f"joint_states.position[{i}]"] for i in range(4)] == [0.1, 0.2, 0.3, 0.4]
    assert not any("velocity" in key for key in fields)  # no velocities published: missing, not zero


def test_a_joint_state_without_a_profile_joint_is_refused_naming_it() -> None:
    with pytest.raises(InputError, match=r"lacks joint\(s\) \['wrist'\]"):
        _reader()(JointState(["yaw", "shoulder", "elbow"], [0.0, 0.0, 0.0]))


def test_the_arm_profile_names_its_joints_for_reading_and_commanding() -> None:
    profile = load_profile("arm")
    assert profile.inputs[0].joints == PROFILE_ORDER and profile.commands[0].joint_names == PROFILE_ORDER


def _arm_dict() -> dict:
    return yaml.safe_load(resources.files("robo_rl.real").joinpath("profiles", "arm.yaml").read_text())


@pytest.mark.parametrize(
    ("edit", "problem"),
    [
        (lambda d: d["inputs"][0].pop("joints"), "a JointState input lists its joint names"),
        (lambda d: d["commands"][0].pop("joint_names"), "a JointTrajectory command lists its joint names"),
        (lambda d: d["inputs"][0].update(joints=["yaw", "shoulder", "elbow"]), "joint index 3 but 3 joints listed"),
        (lambda d: d["commands"][0].update(joint_names=["yaw", "yaw", "elbow", "wrist"]), "duplicate names"),
        (lambda d: d["inputs"][1].update(joints=["a"]), "only a sensor_msgs/msg/JointState input has joint names"),
    ],
)
def test_profiles_with_unusable_joint_names_are_refused(edit: object, problem: str) -> None:
    data = _arm_dict()
    edit(data)  # type: ignore[operator]
    with pytest.raises(ProfileError, match=problem.replace("(", r"\(").replace(")", r"\)")):
        profile_from_dict(data)


def test_the_held_pose_reads_each_commanded_joints_measured_position() -> None:
    profile = load_profile("arm")
    positions = [f"points[0].positions[{i}]" for i in range(4)]
    measured = [f"joint_states.position[{i}]" for i in range(4)]
    assert held_joint_sources(profile, profile.commands[0]) == tuple(zip(measured, positions, strict=True))
    data = _arm_dict()  # the command in another joint order: each action still holds its own joint
    data["commands"][0]["joint_names"] = ["wrist", "elbow", "shoulder", "yaw"]
    for i, command_field in enumerate(data["commands"][0]["fields"]):
        command_field["field"] = f"points[0].positions[{3 - i}]"
    shuffled = profile_from_dict(data)
    assert [source for source, _ in held_joint_sources(shuffled, shuffled.commands[0])] == measured


@pytest.mark.parametrize(
    ("edit", "problem"),
    [
        (lambda d: d.update(safe_command="hold"), "safe_command: must be one of ('fixed', 'hold_measured')"),
        (
            lambda d: (d.pop("driver"), d["commands"][0].update(type="std_msgs/msg/Float32MultiArray")),
            "hold_measured with commands[0]: type: a held pose needs a trajectory_msgs/msg/JointTrajectory",
        ),
        (
            lambda d: d["commands"][0]["fields"][1].update(field="points[0].velocities[1]"),
            "'points[0].velocities[1]' (shoulder_angle_target): not a joint position",
        ),
        (
            lambda d: d["commands"][0].update(joint_names=["yaw", "shoulder", "elbow", "gripper"]),
            "joint 'gripper' is in no JointState input's joints",
        ),
        (lambda d: d["actions"][2].pop("rate_limit"), "actions[2].rate_limit: hold_measured times the move home"),
    ],
)
def test_profiles_that_cannot_hold_their_measured_pose_are_refused(edit: object, problem: str) -> None:
    data = _arm_dict()
    edit(data)  # type: ignore[operator]
    with pytest.raises(ProfileError, match=re.escape(problem)):
        profile_from_dict(data)
    data["safe_command"] = "fixed"
    if "safe_command" not in problem:
        profile_from_dict(data)  # the same profile with a fixed safe command loads
