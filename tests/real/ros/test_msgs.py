"""The message packages `make ros-venv` builds from ros_msgs/ (px4_msgs, ackermann_msgs) into .venv-ros: each type
crosses Fast DDS between two rclpy processes intact, its publisher announces the RIHS01 type hash of the upstream
definition (so a PX4 vehicle or a car driver built with upstream's packages matches it), and the fields the hardware
profiles use are there with their types.

UPSTREAM_HASHES were computed once, offline, with `rosidl hash` (rosidl_generator_type_description 4.9.5, Kilted)
over the upstream .msg texts in the PX4/PX4-Autopilot tree named beside each, as package px4_msgs: the message
versions that PX4 v1.16 (px4_msgs release/1.16) publishes (see ros_msgs/README.md). RIHS01 covers the package, type
and field names, field types and array sizes (not comments, constants or defaults): a field that differs from
upstream changes the hash and fails test_type_hashes_match_upstream.

PX4_RELEASE_HASHES hold the same claim to the releases robo_rl supports (PX4 v1.15+, real/px4.py): the same
`rosidl hash` over msg/<Type>.msg of PX4/px4_msgs (github.com/PX4/px4_msgs, the package PX4 generates for ROS 2) at
its tags v1.15.0 (commit 727aef401c9d0c7e662ef8c4861f2469c1528b89) and v1.16.0 (commit
392e831c1f659429ca83902e66820d7094591410); v1.15.4 and v1.16.2 give the same hashes. At v1.14.0, OffboardControlMode,
VehicleCommand and VehicleCommandAck hash differently (hence v1.15+), and VehicleStatus differs between v1.15 and
v1.16 (v1.16's is message version 1, without v1.15's two avoidance_system_* flags): policy_node reads VehicleStatus
only with px4_version 1.16, on fmu/out/vehicle_status_v1.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[3]
ROS_PYTHON = Path(os.environ.get("ROBO_RL_ROS_PYTHON", ROOT / ".venv-ros" / "bin" / "python"))
ROS_VENV = ROS_PYTHON.parents[1]

ACKERMANN = "ackermann_msgs/msg/AckermannDriveStamped"
UPSTREAM_HASHES = {
    # msg/px4_msgs_old/msg/VehicleOdometryV0.msg @ 5cbc74db91e0995245bd457b9508f9294d12d2cd (VehicleOdometry v0)
    "px4_msgs/msg/VehicleOdometry": "RIHS01_4295b96ad312084aa35c84bdcec65ba2f57eb4f6a293d57d52d95acbe99ff817",
    # msg/px4_msgs_old/msg/VehicleStatusV1.msg @ 05de941399c6937fc5bbc7a1acc660900608ea4c (VehicleStatus v1)
    "px4_msgs/msg/VehicleStatus": "RIHS01_828bddbb7d4c2aa6ad93757955f6893be1ec5d8f11885ec7715bcdd76b5226c9",
    # msg/versioned/VehicleRatesSetpoint.msg @ 1e944a5a8cc08b2bd95dc978ce006eb5a1980128 (v0)
    "px4_msgs/msg/VehicleRatesSetpoint": "RIHS01_dd5600094f522966ef850e22847b52fa6addb66795b4631c69a2ce0a8efe4063",
    # msg/VehicleThrustSetpoint.msg @ 014866564299bf6818138f8591403a208571f100
    "px4_msgs/msg/VehicleThrustSetpoint": "RIHS01_5b8b4a61e95ed82423c5fc0f84ecf29f9826a133865b9ffffa1be73977bff738",
    # msg/versioned/ActuatorMotors.msg @ 01b8d51824217fa92e2134ebd73aa267681914d1 (v0)
    "px4_msgs/msg/ActuatorMotors": "RIHS01_78573ab1d26b08f3f494a16476cc896af5f8dceb64f6f723b4a2533ff2fbd321",
    # msg/OffboardControlMode.msg @ 1e944a5a8cc08b2bd95dc978ce006eb5a1980128
    "px4_msgs/msg/OffboardControlMode": "RIHS01_e87463f252f320d2f197d1feadd643b8645e5ef53a2b158dccfdf11372e00f9f",
    # msg/px4_msgs_old/msg/VehicleCommandV0.msg @ 641f7d982f42ce0f342911c0ffce39a6a1b8b688 (VehicleCommand v0)
    "px4_msgs/msg/VehicleCommand": "RIHS01_1f0ab537807e2e20e04826633ea2c52e5431bea8eb0187152ff23bd07f1dd30b",
    # PX4/px4_msgs msg/VehicleCommandAck.msg @ v1.16.0 (392e831c1f659429ca83902e66820d7094591410; v0)
    "px4_msgs/msg/VehicleCommandAck": "RIHS01_36038d69f9db90980fb8fe154f27f22dffed0c35e530b32413cf0456aa8a29e2",
    # ros-drivers/ackermann_msgs msg/AckermannDriveStamped.msg + AckermannDrive.msg (2.0.x), with Kilted's
    # std_msgs/Header and builtin_interfaces/Time
    ACKERMANN: "RIHS01_48ca7612a08d3bb72744fd98b71b7cf2ea24c6ad50fa4e1aa0bbad963c90d8cf",
}

# PX4/px4_msgs at v1.15.0 and v1.16.0 (see the module docstring): type → (v1.15 hash, v1.16 hash).
PX4_RELEASE_HASHES = {
    "px4_msgs/msg/ActuatorMotors": (
        "RIHS01_78573ab1d26b08f3f494a16476cc896af5f8dceb64f6f723b4a2533ff2fbd321",
        "RIHS01_78573ab1d26b08f3f494a16476cc896af5f8dceb64f6f723b4a2533ff2fbd321",
    ),
    "px4_msgs/msg/OffboardControlMode": (
        "RIHS01_e87463f252f320d2f197d1feadd643b8645e5ef53a2b158dccfdf11372e00f9f",
        "RIHS01_e87463f252f320d2f197d1feadd643b8645e5ef53a2b158dccfdf11372e00f9f",
    ),
    "px4_msgs/msg/VehicleCommand": (
        "RIHS01_1f0ab537807e2e20e04826633ea2c52e5431bea8eb0187152ff23bd07f1dd30b",
        "RIHS01_1f0ab537807e2e20e04826633ea2c52e5431bea8eb0187152ff23bd07f1dd30b",
    ),
    "px4_msgs/msg/VehicleCommandAck": (
        "RIHS01_36038d69f9db90980fb8fe154f27f22dffed0c35e530b32413cf0456aa8a29e2",
        "RIHS01_36038d69f9db90980fb8fe154f27f22dffed0c35e530b32413cf0456aa8a29e2",
    ),
    "px4_msgs/msg/VehicleOdometry": (
        "RIHS01_4295b96ad312084aa35c84bdcec65ba2f57eb4f6a293d57d52d95acbe99ff817",
        "RIHS01_4295b96ad312084aa35c84bdcec65ba2f57eb4f6a293d57d52d95acbe99ff817",
    ),
    "px4_msgs/msg/VehicleRatesSetpoint": (
        "RIHS01_dd5600094f522966ef850e22847b52fa6addb66795b4631c69a2ce0a8efe4063",
        "RIHS01_dd5600094f522966ef850e22847b52fa6addb66795b4631c69a2ce0a8efe4063",
    ),
    "px4_msgs/msg/VehicleStatus": (
        "RIHS01_cea1c125c9ecf78934ef9829ab070231fb3cd1b7cc502abcb66740363d1426c0",
        "RIHS01_828bddbb7d4c2aa6ad93757955f6893be1ec5d8f11885ec7715bcdd76b5226c9",
    ),
    "px4_msgs/msg/VehicleThrustSetpoint": (
        "RIHS01_5b8b4a61e95ed82423c5fc0f84ecf29f9826a133865b9ffffa1be73977bff738",
        "RIHS01_5b8b4a61e95ed82423c5fc0f84ecf29f9826a133865b9ffffa1be73977bff738",
    ),
}
V1_16_ONLY = {"px4_msgs/msg/VehicleStatus"}
"""Types whose v1.15 definition differs from ours (v1.16's); policy_node does not read them on v1.15."""

OFFBOARD_FLAGS = (
    "position",
    "velocity",
    "acceleration",
    "attitude",
    "body_rate",
    "thrust_and_torque",
    "direct_actuator",
)

# The fields the hardware profiles (real/profiles, real/px4.py, policy_node) read or write, with rosidl's Python
# type names (float = float32, double = float64, boolean = bool).
PROFILE_FIELDS = {
    "px4_msgs/msg/VehicleOdometry": {
        "timestamp": "uint64",
        "position": "float[3]",
        "q": "float[4]",
        "velocity": "float[3]",
        "angular_velocity": "float[3]",
        "pose_frame": "uint8",
        "velocity_frame": "uint8",
    },
    "px4_msgs/msg/VehicleRatesSetpoint": {
        "timestamp": "uint64",
        "roll": "float",
        "pitch": "float",
        "yaw": "float",
        "thrust_body": "float[3]",
    },
    "px4_msgs/msg/VehicleThrustSetpoint": {"timestamp": "uint64", "xyz": "float[3]"},
    "px4_msgs/msg/OffboardControlMode": {
        "timestamp": "uint64",
        **dict.fromkeys(OFFBOARD_FLAGS, "boolean"),
    },
    "px4_msgs/msg/VehicleCommand": {
        "timestamp": "uint64",
        **{f"param{i}": "float" for i in (1, 2, 3, 4, 7)},
        "param5": "double",
        "param6": "double",
        "command": "uint32",
        "target_system": "uint8",
        "target_component": "uint8",
        "source_system": "uint8",
        "source_component": "uint16",
        "confirmation": "uint8",
        "from_external": "boolean",
    },
    "px4_msgs/msg/VehicleStatus": {"timestamp": "uint64", "arming_state": "uint8", "nav_state": "uint8"},
    "px4_msgs/msg/ActuatorMotors": {"timestamp": "uint64", "control": "float[12]"},
    "px4_msgs/msg/VehicleCommandAck": {"command": "uint32", "result": "uint8"},
    "ackermann_msgs/msg/AckermannDriveStamped": {"header": "std_msgs/Header", "drive": "ackermann_msgs/AckermannDrive"},
}

CONSTANTS = {
    "px4_msgs/msg/VehicleOdometry": {
        "MESSAGE_VERSION": 0,
        "POSE_FRAME_NED": 1,
        "VELOCITY_FRAME_NED": 1,
        "VELOCITY_FRAME_BODY_FRD": 3,
    },
    "px4_msgs/msg/VehicleStatus": {
        "MESSAGE_VERSION": 1,
        "ARMING_STATE_DISARMED": 1,
        "ARMING_STATE_ARMED": 2,
        "NAVIGATION_STATE_POSCTL": 2,
        "NAVIGATION_STATE_OFFBOARD": 14,
    },
    "px4_msgs/msg/VehicleRatesSetpoint": {"MESSAGE_VERSION": 0},
    "px4_msgs/msg/ActuatorMotors": {"MESSAGE_VERSION": 0, "NUM_CONTROLS": 12},
    "px4_msgs/msg/VehicleCommand": {
        "MESSAGE_VERSION": 0,
        "VEHICLE_CMD_COMPONENT_ARM_DISARM": 400,
        "VEHICLE_CMD_DO_SET_MODE": 176,
        "VEHICLE_CMD_SET_NAV_STATE": 100001,
        "ARMING_ACTION_ARM": 1,
        "ARMING_ACTION_DISARM": 0,
    },
    "px4_msgs/msg/VehicleCommandAck": {
        "MESSAGE_VERSION": 0,
        "VEHICLE_CMD_RESULT_ACCEPTED": 0,
        "VEHICLE_CMD_RESULT_TEMPORARILY_REJECTED": 1,
        "VEHICLE_CMD_RESULT_DENIED": 2,
        "VEHICLE_CMD_RESULT_IN_PROGRESS": 5,
    },
}


@pytest.fixture(scope="module")
def messages(ros_scenario: Callable[..., dict[str, Any]]) -> dict[str, Any]:
    missing = [
        pkg for pkg in ("px4_msgs", "ackermann_msgs") if not (ROS_VENV / "share" / pkg / "package.xml").is_file()
    ]
    if missing:
        pytest.skip(
            f"{', '.join(missing)} not in {ROS_VENV}: `make ros-msgs` (part of `make ros-venv`) did not build it"
        )
    result = ros_scenario("scenario_msgs.py", timeout=180.0)
    assert "missing" not in result, f"built into {ROS_VENV} but not importable: {result.get('missing')}"
    return result


def test_every_type_crosses_dds_between_two_processes_intact(messages: dict[str, Any]) -> None:
    assert set(messages["types"]) == set(UPSTREAM_HASHES)
    for type_name, report in messages["types"].items():
        assert report["received"] is not None, f"{type_name}: nothing arrived in 60 s\n{messages['publisher_log']}"
        assert report["received"] == report["sent"], type_name
        assert report["announced_types"] == [type_name]


def test_type_hashes_match_upstream(messages: dict[str, Any]) -> None:
    # The hash the publishing process announced in discovery, i.e. what a PX4 agent or another ROS 2 node compares.
    announced = {type_name: report["announced_hashes"] for type_name, report in messages["types"].items()}
    assert announced == {type_name: [hash_] for type_name, hash_ in UPSTREAM_HASHES.items()}


def test_px4_types_hash_like_px4_v1_15_and_v1_16(messages: dict[str, Any]) -> None:
    # Our side: the hash each built px4_msgs type announces (computed by rosidl from ros_msgs/px4_msgs/msg/*.msg).
    ours = {t: r["announced_hashes"] for t, r in messages["types"].items() if t.startswith("px4_msgs/")}
    assert set(ours) == set(PX4_RELEASE_HASHES)
    for type_name, (v1_15, v1_16) in PX4_RELEASE_HASHES.items():
        assert ours[type_name] == [v1_16], type_name
        assert (ours[type_name] == [v1_15]) == (type_name not in V1_16_ONLY), type_name


def test_the_fields_the_profiles_use(messages: dict[str, Any]) -> None:
    for type_name, fields in PROFILE_FIELDS.items():
        have = messages["types"][type_name]["fields"]
        assert {name: have.get(name) for name in fields} == fields, type_name


def test_message_versions_and_constants(messages: dict[str, Any]) -> None:
    for type_name, constants in CONSTANTS.items():
        assert messages["types"][type_name]["constants"] == constants, type_name


def test_the_classes_come_from_the_ros_venv(messages: dict[str, Any]) -> None:
    for type_name, report in messages["types"].items():
        assert Path(report["module"]).is_relative_to(ROS_VENV.resolve()), (type_name, report["module"])
