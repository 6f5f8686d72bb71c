"""A robot profile's inputs as ROS subscriptions' decoders: message → the flat fields the observations read."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from robo_rl.real.derive import derive, labelled_fields
from robo_rl.real.profile import InputSpec, RobotProfile, history_source, source_input
from robo_rl.real.ros.messages import FieldReader, check_paths, message_class

# Odometry fields the quadrotor_state derivation reads (besides those the observations name).
DERIVATION_PATHS = {
    "quadrotor_state": tuple(f"pose.pose.position.{a}" for a in "xyz")
    + tuple(f"pose.pose.orientation.{a}" for a in "wxyz")
    + tuple(f"twist.twist.linear.{a}" for a in "xyz"),
}


@dataclass(frozen=True)
class TopicInput:
    """One subscribed input: its spec, message class and `decode(msg)` → fields."""

    spec: InputSpec
    message_type: type
    decode: Callable[[Any], dict[str, float]]


def topic_inputs(profile: RobotProfile) -> tuple[TopicInput, ...]:
    """The profile's subscribed inputs, in profile order; raises MessageTypeError for unknown types or fields."""
    if not profile.inputs:
        raise ValueError(f"profile {profile.name!r} declares no inputs: the nodes cannot know what to subscribe")
    found = []
    for spec in profile.inputs:
        if spec.derive:
            continue
        message_type = message_class(spec.type)
        if spec.labels:
            found.append(TopicInput(spec, message_type, _labelled(spec)))
            continue
        paths = sorted(_paths(profile, spec))
        check_paths(message_type, paths)
        found.append(TopicInput(spec, message_type, FieldReader(spec.name, paths)))
    return tuple(found)


def _labelled(spec: InputSpec) -> Callable[[Any], dict[str, float]]:
    return lambda message: labelled_fields(spec, message.data)


def _paths(profile: RobotProfile, spec: InputSpec) -> set[str]:
    prefix = f"{spec.name}."
    paths = {
        obs.source.removeprefix(prefix)
        for obs in profile.observations
        if history_source(obs.source) is None and source_input(obs.source) == spec.name
    }
    for other in profile.inputs:
        if other.derive and other.source == spec.name:
            paths |= set(DERIVATION_PATHS[other.derive])
    return paths


def derived_fields(profile: RobotProfile, fields: dict[str, float], target: Sequence[float]) -> dict[str, float]:
    """The fields of every derived input, computed from the current `fields`."""
    derived: dict[str, float] = {}
    for spec in profile.inputs:
        if spec.derive:
            derived |= derive(spec, fields, target)
    return derived
