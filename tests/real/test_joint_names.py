"""Arms: JointState read by joint name (drivers publish their own order, often alphabetical), the command's joint
order from the profile, and a JointState lacking a profile joint refused."""

from __future__ import annotations

from dataclasses import dataclass, field
from importlib import resources

import pytest
import yaml

from robo_rl.real.profile import ProfileError, load_profile, profile_from_dict
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
