"""Who may publish what in the robot's graph (real/security/grants.py), and what a node reads before rclpy.init.

The name resolution follows ROS 2's rules as rcl implements them (design article "Topic and Service name mapping
to DDS"; rcl/remap.c): a relative name is expanded in the node's namespace, a remap rule's FROM is expanded the
same way and must match the whole expanded name. The parameter-file matching follows rcl_yaml_param_parser
(`/**` all nodes, `*` one token, `**` any, the full name).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from robo_rl.real.profile import load_profile
from robo_rl.real.ros.startup import StartupArguments, file_parameters, startup_arguments
from robo_rl.real.security.documents import Grant
from robo_rl.real.security.grants import CRAZYSWARM2_SERVICES, NODES, resolve, robot_grants
from robo_rl.real.security.secure_mode import secure_mode

RECORDED = ("odom", "drive", "estop", "intervention", "operator_log", "/diagnostics")


def grants(profile: str, remaps: dict[str, str] | None = None) -> dict[str, Grant]:
    found = robot_grants(load_profile(profile), "/car1", remaps or {}, RECORDED)
    return {grant.enclave.rsplit("/", 1)[1]: grant for grant in found}


def publishers(of: dict[str, Grant], topic: str) -> set[str]:
    return {node for node, grant in of.items() if topic in grant.publish}


def test_resolution_follows_rcl() -> None:
    assert resolve("odom", "/car1", {}) == "/car1/odom"
    assert resolve("/odom", "/car1", {}) == "/odom"
    assert resolve("odom", "/car1", {"odom": "/vesc/odom"}) == "/vesc/odom"
    assert resolve("odom", "/car1", {"/car1/odom": "odom2"}) == "/car1/odom2"
    assert resolve("odom", "/car1", {"/odom": "/x"}) == "/car1/odom"  # FROM /odom is another name


def test_only_the_operator_commands_and_only_the_driver_states() -> None:
    car = grants("rc_car", {"odom": "/vesc/odom"})
    assert set(car) == set(NODES)
    for topic in ("/car1/estop", "/car1/intervention", "/car1/go_home", "/car1/vehicle_request"):
        assert publishers(car, topic) == {"teleop_node"}, topic
        assert topic in car["policy_node"].subscribe
    for topic in ("/vesc/odom", "/car1/track", "/car1/drive_state"):
        assert publishers(car, topic) == {"driver", "sim_bridge"}, topic
        assert topic in car["policy_node"].subscribe and topic in car["train_on_robot"].subscribe
    for topic in ("/car1/drive", "/car1/cmd_vel"):  # both command types: the node picks one at start
        assert publishers(car, topic) == {"policy_node", "train_on_robot"}, topic
    assert car["recorder"].publish == ("/rosout", "/parameter_events")
    assert "/car1/operator_log" in car["recorder"].subscribe and "/vesc/odom" in car["recorder"].subscribe
    assert car["teleop_node"].call == ("/car1/policy_node/*",)  # ros2 lifecycle set runs as the operator
    assert car["policy_node"].serve == ("/car1/policy_node/*",)


def test_px4_and_crazyswarm2_extras() -> None:
    px4 = grants("quadrotor_px4")
    assert "/car1/fmu/in/offboard_control_mode" in px4["policy_node"].publish
    assert "/car1/fmu/out/vehicle_command_ack" in px4["policy_node"].subscribe
    assert publishers(px4, "/car1/fmu/out/vehicle_odometry") == {"driver", "sim_bridge"}
    swarm = grants("quadrotor_crazyswarm2")
    assert swarm["policy_node"].call == tuple(f"/car1/{name}" for name in CRAZYSWARM2_SERVICES)


def test_crazyswarm2_services_are_the_nodes() -> None:
    outputs = pytest.importorskip("robo_rl.real.ros.outputs", reason="needs rclpy (.venv-ros)")
    assert tuple(outputs.CRAZYSWARM2_SERVICES) == CRAZYSWARM2_SERVICES


def test_startup_arguments_read_as_rcl_would(tmp_path: Path) -> None:
    shared = tmp_path / "shared.yaml"
    shared.write_text(
        "/**:\n  ros__parameters:\n    keystore: /a\n/**/policy_node:\n  ros__parameters:\n    secure: false\n"
    )
    inline = tmp_path / "inline.yaml"
    inline.write_text(
        "/car1/policy_node:\n  ros__parameters:\n    secure: true\n/other:\n  ros__parameters:\n    keystore: /x\n"
    )
    argv = ["policy_node", "--threads", "2", "--ros-args", "--disable-stdout-logs", "-r", "__node:=policy_node",
            "-r", "__ns:=/car1", "--params-file", str(shared), "--params-file", str(inline), "-p", "keystore:=/b",
            "--enclave", "/car1/pn", "--", "extra"]  # fmt: skip
    start = startup_arguments(argv, "node", ("secure", "keystore"))
    assert (start.full_name, start.enclave) == ("/car1/policy_node", "/car1/pn")
    assert start.parameters == {"secure": True, "keystore": "/b"}
    nested = tmp_path / "nested.yaml"
    nested.write_text("car1:\n  '*':\n    ros__parameters:\n      secure: true\n")
    assert file_parameters(nested, StartupArguments("teleop_node", "/car1")) == {"secure": True}
    assert file_parameters(nested, StartupArguments("teleop_node", "/car2")) == {}


def test_secure_mode_from_parameter_or_environment() -> None:
    assert secure_mode(False, "", "/car1/policy_node", environ={}) is None
    mode = secure_mode(True, "ks", "/car1/policy_node", environ={})
    assert mode is not None and mode.keystore == Path("ks").absolute()
    assert mode.environment()["ROS_SECURITY_STRATEGY"] == "Enforce"  # never Permissive
    env = {"ROS_SECURITY_ENABLE": "true", "ROS_SECURITY_KEYSTORE": "/ks"}
    from_env = secure_mode(False, "", "/car1/policy_node", environ=env)
    assert from_env is not None and from_env.keystore == Path("/ks")
