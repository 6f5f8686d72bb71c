"""An RC car policy states what its drive action is to the ESC; the robot profile must send exactly that.

The rc_car/race simulator records a `DriveActuator` (robo_rl.actuator): "speed", the ESC's speed setpoint in m/s
= 5 × drive for the bundled f1tenth car, or "throttle". The rc_car profile says `esc: speed` on its
AckermannDriveStamped `drive.speed` and Twist `linear.x` fields with scale 5 (m/s per unit action). A policy
trained on throttle, or exported before the record (which means throttle), is refused by it, and a speed policy
by a profile that sends throttle or another scale.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from importlib import resources
from pathlib import Path

import onnx
import pytest
import yaml

from robo_rl.actuator import DriveActuator, actuator_from_json
from robo_rl.artifact import PolicyArtifact
from robo_rl.real.policy_fit import ProfileMismatchError, drive_mismatches, profile_drive
from robo_rl.real.profile import load_profile, profile_from_dict
from robo_rl.real.runtime import PolicyRuntime


def _with_actuator(source: Path, target: Path, actuator: str | None) -> Path:
    model = onnx.load(str(source))
    props = {p.key: p.value for p in model.metadata_props}
    if actuator is None:
        props.pop("robo_rl.actuator")
        props.pop("robo_rl.schema")
    else:
        props["robo_rl.actuator"] = actuator
    del model.metadata_props[:]
    onnx.helper.set_model_props(model, props)
    onnx.save_model(model, str(target))
    return target


def _profile_data() -> dict:
    return yaml.safe_load(resources.files("robo_rl.real").joinpath("profiles/rc_car.yaml").read_text())


def test_the_car_policy_records_a_speed_setpoint_of_the_profile_s_scale(policy_file: Callable[[str], Path]) -> None:
    runtime = PolicyRuntime(policy_file("rc_car"), load_profile("rc_car"))
    drive = runtime.info.actuator
    assert isinstance(drive, DriveActuator)
    assert (drive.mode, drive.action, drive.scale, drive.max_reverse_speed) == ("speed", "drive", 5.0, 2.0)
    for command in load_profile("rc_car").commands:  # both messages send speed = 5 m/s × drive
        (field,) = [f for f in command.fields if f.action == "drive"]
        assert (field.esc, field.scale, field.offset) == ("speed", drive.scale, 0.0)
    assert actuator_from_json(drive.to_json()) == drive
    artifact = PolicyArtifact.from_props({p.key: p.value for p in onnx.load(str(policy_file("rc_car"))).metadata_props})
    assert artifact.actuator == drive and artifact.schema == 3


def test_a_throttle_policy_and_an_unrecorded_one_are_refused_by_the_speed_profile(
    policy_file: Callable[[str], Path], tmp_path: Path
) -> None:
    source = policy_file("rc_car")
    speed = PolicyRuntime(source).info.actuator
    assert isinstance(speed, DriveActuator)
    throttle = dataclasses.replace(speed, mode="throttle", scale=1.0)
    policy = _with_actuator(source, tmp_path / "throttle.onnx", throttle.to_json())
    with pytest.raises(ProfileMismatchError) as info:
        PolicyRuntime(policy, load_profile("rc_car"))
    assert info.value.mismatches == (
        "ackermann_msgs/msg/AckermannDriveStamped drive.speed (drive): profile sends a speed command; the policy's "
        "drive action is a throttle command",
        "geometry_msgs/msg/Twist linear.x (drive): profile sends a speed command; the policy's drive action is a "
        "throttle command",
    )
    legacy = _with_actuator(source, tmp_path / "legacy.onnx", None)
    with pytest.raises(ProfileMismatchError, match="does not state what its drive action means") as info:
        PolicyRuntime(legacy, load_profile("rc_car"))
    assert len(info.value.mismatches) == 2


def test_a_speed_policy_is_refused_by_a_throttle_profile_or_another_scale(policy_file: Callable[[str], Path]) -> None:
    runtime = PolicyRuntime(policy_file("rc_car"))
    data = _profile_data()
    del data["vesc"]  # a throttle car has no VESC speed calibration (tests/real/test_esc_calibration.py)
    for command in data["commands"]:
        command["fields"][1]["esc"] = "throttle"
    with pytest.raises(ProfileMismatchError, match="profile sends a throttle command; the policy's drive action is "):
        runtime.check(profile_from_dict(data))
    data = _profile_data()
    data["commands"][0]["fields"][1]["scale"] = 3.0  # 3 m/s at full drive: not what the policy learned
    with pytest.raises(ProfileMismatchError) as info:
        runtime.check(profile_from_dict(data))
    assert info.value.mismatches == (
        "ackermann_msgs/msg/AckermannDriveStamped drive.speed (drive): profile sends speed 0 + 3 * action m/s, the "
        "policy's speed setpoint (robo_rl.actuator) is 5 * action m/s",
    )
    data = _profile_data()
    del data["commands"][1]["fields"][1]["esc"]  # a drive field that does not say what the ESC receives
    with pytest.raises(ProfileMismatchError, match="a field that does not say what the ESC receives"):
        runtime.check(profile_from_dict(data))


def test_a_policy_trained_on_the_car_records_what_the_profile_sends() -> None:
    """Learning on the robot (robo_rl.robot.RobotEnv) has no simulated loop: the car is the plant, so the policy
    records the profile's own drive command, which the same profile then accepts."""
    profile = load_profile("rc_car")
    drive = profile_drive(profile)
    assert drive == DriveActuator(mode="speed", scale=5.0, action="drive", car="rc_car")
    assert [m for command in profile.commands for m in drive_mismatches(drive, command)] == []
    assert profile_drive(load_profile("arm")) is None
