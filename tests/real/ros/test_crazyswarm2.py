"""policy_node with the quadrotor_crazyswarm2 profile against a stand-in crazyswarm2 server, over real rclpy
(scenario_crazyswarm2.py): the Twist on cmd_vel_legacy carries the policy's body rates in deg/s with crazyswarm2's
and the firmware's signs, its thrust as the firmware's value, and 0 thrust (motors off, the thrust lock released)
while the inputs are missing or stale. The signs themselves are checked against crazyswarm2's and
crazyflie-firmware's code in tests/real/test_crazyswarm2.py."""

from __future__ import annotations

from collections.abc import Callable
from importlib import resources
from pathlib import Path
from typing import Any

import pytest
import yaml

# The probe policy: each body-rate action 0.1 × the measured FLU body rate, thrust action -1 × the height error.
WEIGHTS = {
    ("roll_rate", "angular_velocity_x"): 0.1,
    ("pitch_rate", "angular_velocity_y"): 0.1,
    ("yaw_rate", "angular_velocity_z"): 0.1,
    ("collective_thrust", "position_error_z"): -1.0,
}


def _profile(folder: Path) -> Path:
    """quadrotor_crazyswarm2 with its gyro input as a labelled Float32MultiArray (no crazyflie_interfaces here) and
    without its hand-over (the policy in control from activation, the zero-thrust safe command on a fault): this
    scenario checks the messages; the hand-over to and from the high-level commander is
    tests/real/test_crazyflie_handover.py's."""
    data = yaml.safe_load(resources.files("robo_rl.real").joinpath("profiles/quadrotor_crazyswarm2.yaml").read_text())
    data.pop("handover")
    data.pop("crazyswarm2")
    labels = ["values[0]", "values[1]", "values[2]"]
    data["inputs"] = [
        {"name": "gyro", "type": "std_msgs/msg/Float32MultiArray", "labels": labels} if spec["name"] == "gyro" else spec
        for spec in data["inputs"]
    ]
    path = folder / "quadrotor_crazyswarm2_test.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


@pytest.fixture(scope="module")
def flight(
    ros_scenario: Callable[..., dict[str, Any]],
    linear_policy: Callable[..., Path],
    tmp_path_factory: pytest.TempPathFactory,
) -> dict[str, Any]:
    policy = linear_policy("quadrotor_crazyswarm2", WEIGHTS)
    profile = _profile(tmp_path_factory.mktemp("crazyswarm2"))
    result = ros_scenario("scenario_crazyswarm2.py", str(policy), str(profile), timeout=180.0)
    assert result["ready"], result["logs"]["policy_node"]
    return result


def test_cmd_vel_legacy_carries_rates_in_deg_s_and_the_firmwares_thrust(flight: dict[str, Any]) -> None:
    flying = [t for t in flight["twists"] if flight["started"] < t[0] < flight["stopped"] and t[3] != 0.0]
    assert len(flying) >= 100, flight["logs"]["policy_node"]
    linear_x, linear_y, linear_z, angular_x, angular_y, angular_z = flying[-1][1:]
    # Gyro (30, -20, 10) deg/s FLU: the probe's actions 0.1 × (0.5236, -0.3491, 0.1745) rad/s command rates of
    # (10, 10, 5) rad/s × those, i.e. (30, -20, 5) deg/s. Roll rate on linear.y, FLU pitch rate on linear.x
    # (crazyswarm2 negates it, the firmware's nose-up pitch negates it back), the yaw rate negated on angular.z (the
    # firmware negates the legacy yaw rate).
    assert (linear_y, linear_x, angular_z) == pytest.approx((30.0, -20.0, -5.0), abs=1e-3)
    assert (angular_x, angular_y) == (0.0, 0.0)
    # 0.2 m below the target: thrust action 0.2 → 31034.681 + 0.2 × 29109.448.
    assert linear_z == pytest.approx(31034.681 + 0.2 * 29109.448, abs=0.01)


def test_missing_and_stale_inputs_send_zero_thrust(flight: dict[str, Any]) -> None:
    twists = flight["twists"]
    before = [t for t in twists if t[0] < flight["started"]]
    # Once the inputs stopped, the first zero-thrust command starts the safe state: everything from it on is all
    # zeros (a policy command still in flight as the odometry stops may come before it, at any machine speed).
    first_safe = next(i for i, t in enumerate(twists) if t[0] > flight["stopped"] and t[3] == 0.0)
    after = twists[first_safe:]
    assert len(before) >= 5 and len(after) >= 5, flight["logs"]["policy_node"]
    assert {tuple(t[1:]) for t in before + after} == {(0.0,) * 6}
