"""Who sent it: every operator command policy_node acts on carries its publisher's identity (issue 52, item 2).

The identity is the DDS writer's GUID that rmw hands out as the message's publisher GID, and the node that owns that
publisher in the ROS graph (rcl's endpoint info): two operators on the same topic family from one process get told
apart, a malformed intervention is not counted, and `estop false` is never acted on.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest


@pytest.fixture(scope="module")
def senders(ros_scenario: Callable[..., dict[str, Any]], policy_file: Callable[[str], Path]) -> dict[str, Any]:
    return ros_scenario("scenario_senders.py", str(policy_file("quadrotor_crazyflie")), timeout=300.0)


def test_each_command_is_attributed_to_its_publisher(senders: dict[str, Any]) -> None:
    assert senders["active"] and senders["intervention_seen"] and senders["estop_seen"], senders["logs"]
    ((gid_a,), (gid_b,)) = senders["graph"]["operator_a"], senders["graph"]["operator_b"]
    diagnostics = senders["diagnostics"]
    assert diagnostics["from.intervention"] == f"/cf1/operator_a (enclave /, gid {gid_a})"
    assert diagnostics["from.estop"] == f"/cf1/operator_b (enclave /, gid {gid_b})"
    # the intruder's one-number intervention was refused: only operator_a's are counted (the first ones may be
    # under "?" for the node: rmw can hand out a publisher before the graph message naming its node)
    assert f"/cf1/operator_a (enclave /, gid {gid_a}): " in diagnostics["senders.intervention"]
    assert "intruder" not in diagnostics["senders.intervention"]
    assert "intervention from /intruder" in senders["logs"]["policy_node"]


def test_operator_log_records_every_accepted_command(senders: dict[str, Any]) -> None:
    log = senders["operator_log"]
    estops = [entry for entry in log if entry["topic"] == "estop"]
    assert [entry["node"] for entry in estops] == ["/cf1/operator_b"] and estops[0]["value"] == "true"
    interventions = [entry for entry in log if entry["topic"] == "intervention"]
    assert interventions and "/cf1/operator_a" in {entry["node"] for entry in interventions}
    assert {entry["node"] for entry in interventions} <= {"/cf1/operator_a", "?"}  # "?": not yet in the graph
    assert {entry["gid"] for entry in interventions} == set(senders["graph"]["operator_a"])  # the GID always
    assert int(senders["diagnostics"]["senders.intervention"].rsplit(": ", 1)[1]) >= 1
    assert senders["exit_codes"] == {"policy_node": 0}
