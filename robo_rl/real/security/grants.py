"""Which topics each node of a robot's graph may publish and subscribe to: the enclaves' permissions.

One grant per node of the launch files, named after the node's full name in the robot's namespace (the enclave the
node runs as in the secure mode):
- policy_node subscribes to the profile's inputs (state and cameras) and the operator's topics; it publishes the
  command topics (every command type of the profile: the node picks one at start), /diagnostics and operator_log;
  a PX4 profile adds the offboard heartbeat and VehicleCommand out, acks and status in.
- teleop_node is the operator: the only enclave that may publish `estop`, `intervention`, `go_home` and
  `vehicle_request` (with `intervening` and `episode_event`), reading the joystick; it may call policy_node's
  services (lifecycle transitions, parameters), so that `ros2 lifecycle set` runs as it.
- driver is the robot's driver: the only enclave that may publish the profile's state inputs; it reads the
  commands. sim_bridge stands in for it in simulation and gets the same topics (plus its own `silence`).
- recorder subscribes to the topics it records (its `topics` parameter) and publishes nothing of the robot's.
- train_on_robot (the trainer's robot link, `robo-rl train --robot`) reads the state and the operator's topics and
  publishes the commands and its transitions.
Every node also publishes /rosout and /parameter_events and serves its own parameter services (`NODE/*`).
Names resolve as rcl resolves them: a relative name in the robot's namespace, then the remap rules (`FROM:=TO`,
FROM resolved the same way) of the launch file's `remap:` entries.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from robo_rl.real import px4
from robo_rl.real.profile import RobotProfile
from robo_rl.real.security.documents import Grant

OPERATOR_PUBLISHES = ("estop", "intervention", "go_home", "vehicle_request", "intervening", "episode_event")
POLICY_READS = ("estop", "intervention", "go_home", "vehicle_request")
TRAINER_READS = ("estop", "intervention", "intervening", "episode_event")
COMMON_PUBLISHES = ("/rosout", "/parameter_events")
DIAGNOSTICS = "/diagnostics"
OPERATOR_LOG = "operator_log"
TRANSITIONS = "transitions"
CRAZYSWARM2_SERVICES = ("takeoff", "land", "go_to", "notify_setpoints_stop")
"""The crazyswarm2 services policy_node calls (real/ros/outputs.py's CRAZYSWARM2_SERVICES, checked equal in
tests/real/test_security.py)."""
NODES = ("policy_node", "teleop_node", "driver", "sim_bridge", "recorder", "train_on_robot")


def resolve(name: str, namespace: str, remaps: Mapping[str, str]) -> str:
    """`name` as rcl resolves it in `namespace` with `remaps` (both sides of a rule resolved the same way)."""
    full = _expand(name, namespace)
    for source, target in remaps.items():
        if _expand(source, namespace) == full:
            return _expand(target, namespace)
    return full


def robot_grants(
    profile: RobotProfile, namespace: str, remaps: Mapping[str, str], recorded: Sequence[str]
) -> tuple[Grant, ...]:
    """The grant of every node in `NODES` for `profile` in `namespace` (`recorded`: the recorder's topics)."""

    def names(*topics: str) -> tuple[str, ...]:
        return tuple(resolve(topic, namespace, remaps) for topic in topics)

    state = names(*_state_topics(profile))
    commands = names(*(command.topic for command in profile.commands))
    px4_out, px4_in = _px4_topics(profile)
    grants = {
        "policy_node": (
            (*commands, *names(*px4_out), DIAGNOSTICS, *names(OPERATOR_LOG)),
            (*state, *names(*POLICY_READS, *px4_in)),
        ),
        "teleop_node": (names(*OPERATOR_PUBLISHES), names("joy")),
        "driver": ((*state, *names(*px4_in)), (*commands, *names(*px4_out))),
        "sim_bridge": (
            (*state, *names(*px4_in), DIAGNOSTICS),
            (*commands, *names(*px4_out, "silence", "episode_event")),
        ),
        "recorder": ((), names(*recorded)),
        "train_on_robot": ((*commands, *names(TRANSITIONS)), (*state, *names(*TRAINER_READS))),
    }
    services = names(*CRAZYSWARM2_SERVICES) if profile.driver == "crazyswarm2" else ()
    return tuple(
        _grant(node, namespace, publish, subscribe, services if node == "policy_node" else ())
        for node, (publish, subscribe) in grants.items()
    )


def _grant(
    node: str, namespace: str, publish: Sequence[str], subscribe: Sequence[str], calls: Sequence[str] = ()
) -> Grant:
    full = _expand(node, namespace)
    calls = (*calls, _expand("policy_node/*", namespace)) if node == "teleop_node" else tuple(calls)
    extra = (f"{full}/transition_event",) if node == "policy_node" else ()
    return Grant(full, (*publish, *extra, *COMMON_PUBLISHES), tuple(subscribe), calls, (f"{full}/*",))


def _state_topics(profile: RobotProfile) -> list[str]:
    """The topics the profile's inputs are read from (state and cameras), not the derived ones."""
    return [spec.topic_name for spec in profile.inputs if not spec.derive and spec.type]


def _px4_topics(profile: RobotProfile) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(what policy_node sends PX4 beyond the setpoint, what it reads from PX4) for a PX4 profile, else empty."""
    if not any(command.type.startswith("px4_msgs/") for command in profile.commands):
        return (), ()
    status = (*(topic for topic in px4.VEHICLE_STATUS_TOPICS.values() if topic), "fmu/out/vehicle_status")
    return (px4.OFFBOARD_MODE_TOPIC, px4.VEHICLE_COMMAND_TOPIC), (px4.VEHICLE_COMMAND_ACK_TOPIC, *status)


def _expand(name: str, namespace: str) -> str:
    if name.startswith("/"):
        return name
    if name.startswith("~"):
        raise ValueError(f"topic {name!r}: private names are not used by the robot's graph")
    return f"{namespace.rstrip('/')}/{name}"
