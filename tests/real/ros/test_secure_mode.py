"""The secure mode of the robot's graph (issue 52, item 1): DDS-Security through the RMW, refusals in one line.

Found on this machine: the ros-* wheels' Fast DDS (3.2, rmw_fastrtps_cpp 9.3.3) is built without DDS-Security: rcl
refuses a secure participant with "This Fast DDS version doesn't have the security libraries", whatever the
strategy, and PyPI has no other RMW. So here the node refuses `secure:=true` in one line saying so, and the test of
who may command the node (rogue participants without credentials or without the permission) is ready for an RMW
with DDS-Security and skips here, saying why. A tampered permissions file is refused by the node's own check
(OpenSSL's S/MIME verification, before rcl) on any RMW. The keystore itself is checked under Cyclone DDS's security
plugins in tests/real/security/test_dds_security.py.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest


@pytest.fixture(scope="module")
def secure(ros_scenario: Callable[..., dict[str, Any]], policy_file: Callable[[str], Path]) -> dict[str, Any]:
    return ros_scenario("scenario_secure_mode.py", str(policy_file("quadrotor_crazyflie")), timeout=400.0)


def test_the_keystore_is_made_for_the_graph(secure: dict[str, Any]) -> None:
    assert secure["create_exit"] == 0, secure["create_output"]
    assert secure["create_output"].count("enclave /cf1/") == 6


def test_tampered_permissions_are_refused_at_start_in_one_line(secure: dict[str, Any]) -> None:
    tampered = secure["tampered"]
    assert tampered["exit"] == 2
    assert tampered["stderr"] == tampered["stderr"].strip() and "\n" not in tampered["stderr"]
    assert tampered["stderr"].startswith(f"error: secure mode: {tampered['file']}: signature does not verify")


def test_without_dds_security_the_node_refuses_secure_mode(secure: dict[str, Any]) -> None:
    if secure["supported"]:
        pytest.skip("this RMW has DDS-Security: test_only_the_operator_commands_the_node applies")
    assert "doesn't have the security libraries" in secure["rmw_says"]
    start = secure["secure_start"]
    assert start["exit"] == 2 and "\n" not in start["stderr"], start
    assert start["stderr"].startswith("error: secure mode: this RMW's Fast DDS was built without DDS-Security")


def test_only_the_operator_commands_the_node(secure: dict[str, Any]) -> None:
    if not secure["supported"]:
        pytest.skip(f"this RMW has no DDS-Security (rcl: {secure['rmw_says'][:120]})")
    peers = secure["peers"]
    seen = peers["observer"]
    log = seen["operator_log"]
    assert log and {entry["node"] for entry in log} <= {"/cf1/operator", "?"}  # "?": not yet named by the graph
    assert {entry["enclave"] for entry in log} <= {"/cf1/teleop_node", "?"} and len({e["gid"] for e in log}) == 1
    assert all(entry["topic"] == "intervention" for entry in log)  # no rogue e-stop was ever acted on
    assert "from.estop" not in seen["diagnostics"]
    assert "rogue" not in seen["diagnostics"].get("senders.intervention", "")
    assert secure["exit_codes"] == {"policy_node": 0}


@pytest.fixture(scope="module")
def graph(ros_scenario: Callable[..., dict[str, Any]], policy_file: Callable[[str], Path]) -> dict[str, Any]:
    return ros_scenario("scenario_graph_endpoints.py", str(policy_file("quadrotor_crazyflie")), timeout=400.0)


def test_each_enclave_allows_what_its_node_uses(graph: dict[str, Any]) -> None:
    """Under Enforce a node whose endpoint its grant lacks would fail to start: every topic each node of the simulated
    graph publishes or subscribes to (rcl's graph) is in its enclave's grant, sim_bridge standing in for the driver."""
    import yaml

    from robo_rl.real.profile import load_profile
    from robo_rl.real.security.grants import robot_grants

    assert graph["ready"], graph["logs"]
    params = yaml.safe_load((Path(__file__).parents[3] / "launch" / "params" / "quadrotor.yaml").read_text())
    recorded = params["/**/recorder"]["ros__parameters"]["topics"]
    grants = {g.enclave: g for g in robot_grants(load_profile("quadrotor_crazyflie"), "/cf1", {}, recorded)}
    for node, used in graph["endpoints"].items():
        grant = grants[f"/cf1/{node}"]
        assert set(used["publish"]) <= set(grant.publish), (node, set(used["publish"]) - set(grant.publish))
        assert set(used["subscribe"]) <= set(grant.subscribe), (node, set(used["subscribe"]) - set(grant.subscribe))
    # and the exclusive ones are used by their owner: the operator's topics by teleop_node, the state by the driver
    used = graph["endpoints"]
    assert "/cf1/estop" in used["teleop_node"]["publish"] and "/cf1/odom" in used["sim_bridge"]["publish"]
    assert {"/cf1/odom", "/cf1/estop", "/cf1/intervention"} <= set(used["policy_node"]["subscribe"])
    assert {"/cf1/cmd_motors", "/diagnostics", "/cf1/operator_log"} <= set(used["policy_node"]["publish"])
    assert {"/cf1/odom", "/cf1/cmd_motors", "/cf1/estop", "/diagnostics"} <= set(used["recorder"]["subscribe"])
