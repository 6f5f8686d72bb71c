"""A robot profile's inputs as ROS subscriptions' decoders: message → the flat fields the observations read."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from robo_rl.image_spec import ImageSpec
from robo_rl.real.derive import PX4_ODOMETRY_FIELDS, derived_fields, labelled_fields
from robo_rl.real.fault import InputError
from robo_rl.real.images import FrameDecoder
from robo_rl.real.profile import (
    COMPRESSED_IMAGE,
    HOLD_MEASURED,
    IMAGE_TYPES,
    InputSpec,
    RobotProfile,
    held_joint_sources,
    source_input,
)
from robo_rl.real.ros.messages import FieldReader, MessageTypeError, check_paths, message_class

# Fields of the source message each derivation reads (besides those the observations name).
DERIVATION_PATHS = {
    "quadrotor_state": tuple(f"pose.pose.position.{a}" for a in "xyz")
    + tuple(f"pose.pose.orientation.{a}" for a in "wxyz")
    + tuple(f"twist.twist.linear.{a}" for a in "xyz"),
    "px4_state": PX4_ODOMETRY_FIELDS,
}


@dataclass(frozen=True)
class TopicInput:
    """One subscribed input: its spec, message class and `decode(msg)` → fields."""

    spec: InputSpec
    message_type: type
    decode: Callable[[Any], dict[str, float]]


@dataclass(frozen=True)
class ImageInput:
    """One subscribed camera input: its spec, message class (Image or CompressedImage) and frame decoder."""

    spec: InputSpec
    message_type: type
    decode: FrameDecoder


def topic_inputs(profile: RobotProfile) -> tuple[TopicInput, ...]:
    """The profile's subscribed inputs of message fields (not its cameras: `image_inputs`), in profile order; raises
    MessageTypeError for unknown types or fields."""
    if not profile.inputs:
        raise ValueError(f"profile {profile.name!r} declares no inputs: the nodes cannot know what to subscribe")
    found = []
    for spec in profile.inputs:
        if spec.derive or spec.type in IMAGE_TYPES:
            continue
        message_type = message_class(spec.type)
        if not spec.labels and not spec.joints:
            check_paths(message_type, sorted(_paths(profile, spec)))
        found.append(TopicInput(spec, message_type, input_decoder(profile, spec)))
    return tuple(found)


def image_inputs(profile: RobotProfile, cameras: Sequence[ImageSpec]) -> tuple[ImageInput, ...]:
    """The profile's camera inputs, each decoding its frames to its camera's spec among `cameras` (the policy's;
    the profile has been checked against them: every input feeds one)."""
    specs = {camera.name: camera for camera in cameras}
    return tuple(
        ImageInput(
            spec,
            message_class(spec.type),
            FrameDecoder(specs[spec.camera], spec.frame_settings, compressed=spec.type == COMPRESSED_IMAGE),
        )
        for spec in profile.image_inputs
    )


def input_decoder(profile: RobotProfile, spec: InputSpec) -> Callable[[Any], dict[str, float]]:
    """`decode(msg)` → the fields of input `spec` that the profile reads (by attribute access, so rclpy messages
    and rosbags' deserialized ones both work)."""
    if spec.labels:
        return _labelled(spec)
    if spec.joints:
        return JointStateReader(spec.name, spec.joints, _paths(profile, spec))
    return FieldReader(spec.name, sorted(_paths(profile, spec)))


_JOINT_PATH = re.compile(r"^(position|velocity|effort)\[(\d+)\]$")


class JointStateReader:
    """Reads a sensor_msgs/JointState by joint name: `PREFIX.position[i]` is joint `joints[i]` wherever the driver
    put it in the message. InputError naming the joints a message lacks."""

    def __init__(self, prefix: str, joints: Sequence[str], paths: Iterable[str]) -> None:
        self.joints = tuple(joints)
        self.paths: list[tuple[str, str, str]] = []
        for path in sorted(paths):
            match = _JOINT_PATH.match(path)
            if match is None:
                raise MessageTypeError(f"JointState: {path!r} is not position[i], velocity[i] or effort[i]")
            self.paths.append((f"{prefix}.{path}", match.group(1), self.joints[int(match.group(2))]))

    def __call__(self, message: Any) -> dict[str, float]:
        index = {str(name): i for i, name in enumerate(message.name)}
        missing = [joint for joint in self.joints if joint not in index]
        if missing:
            raise InputError(f"JointState lacks joint(s) {missing} (it names {list(index)})")
        values = {}
        for key, field, joint in self.paths:
            array = getattr(message, field)
            if index[joint] < len(array):  # drivers may leave velocity or effort empty
                values[key] = float(array[index[joint]])
        return values


def _labelled(spec: InputSpec) -> Callable[[Any], dict[str, float]]:
    return lambda message: labelled_fields(spec, message.data)


def _paths(profile: RobotProfile, spec: InputSpec) -> set[str]:
    prefix = f"{spec.name}."
    paths = {
        obs.field.removeprefix(prefix)
        for obs in profile.observations
        if obs.field is not None and source_input(obs.field) == spec.name
    }
    for other in profile.inputs:
        if other.derive and other.source == spec.name:
            paths |= set(DERIVATION_PATHS[other.derive])
    if profile.safe_command == HOLD_MEASURED:  # the pose a safe command holds
        for command in profile.commands:
            held = (source for source, _ in held_joint_sources(profile, command))
            paths |= {source.removeprefix(prefix) for source in held if source_input(source) == spec.name}
    return paths


__all__ = ["ImageInput", "InputError", "TopicInput", "derived_fields", "image_inputs", "input_decoder", "topic_inputs"]
