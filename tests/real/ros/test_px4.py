"""policy_node with the quadrotor_px4 profile against a stand-in PX4 on the real px4_msgs types (scenario_px4.py):
frames, microsecond stamps, the offboard heartbeat, no arming unless asked, and silence on a fault."""

from __future__ import annotations

import itertools
import statistics
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

# The probe policy: body-rate actions 0.1 × the FLU body rates, thrust action -1 × the ENU height error; the
# profile scales rates by (10, 10, 5) rad/s and maps thrust action a to (a + 1) / 2 up.
WEIGHTS = {
    ("roll_rate", "angular_velocity_x"): 0.1,
    ("pitch_rate", "angular_velocity_y"): 0.1,
    ("yaw_rate", "angular_velocity_z"): 0.1,
    ("collective_thrust", "position_error_z"): -1.0,
}


@pytest.fixture(scope="module")
def probe_policy(linear_policy: Callable[..., Path]) -> Path:
    return linear_policy("quadrotor_px4", WEIGHTS)


def _run(ros_scenario: Callable[..., dict[str, Any]], policy: Path, requests: str) -> dict[str, Any]:
    result = ros_scenario("scenario_px4.py", str(policy), requests, timeout=180.0)
    assert result["ready"], result["logs"]["policy_node"]
    return result


def test_px4_frames_stamps_heartbeat_and_no_arming_by_default(
    ros_scenario: Callable[..., dict[str, Any]], probe_policy: Path
) -> None:
    result = _run(ros_scenario, probe_policy, "none")
    flying = [s for s in result["setpoints"] if s[0] < result["stopped"]]
    assert len(flying) > 100, result["logs"]["policy_node"]
    roll, pitch, yaw, thrust = flying[-1][3:]
    # FRD body rates (0.3, 0.5, 0.2) are FLU (0.3, -0.5, -0.2); the policy answers 0.1 × them, i.e. FLU rates
    # (0.3, -0.5, -0.1) rad/s, which are FRD (0.3, 0.5, 0.1): a sign slip in either conversion flips one.
    assert (roll, pitch, yaw) == pytest.approx((0.3, 0.5, 0.1), abs=1e-4)
    # 0.8 m up in NED (z -0.8) is 0.2 m below the ENU target 1.0: thrust action 0.2, up (0.2 + 1) / 2 = 0.6, FRD -0.6.
    assert thrust == pytest.approx(-0.6, abs=1e-4)
    # PX4 stamps are microseconds of the same clock.
    assert max(abs(s[2] - s[1]) for s in flying) < 200_000
    beats = [b for b in result["heartbeats"] if b[0] < result["stopped"]]
    assert {tuple(b[3]) for b in beats} == {(False, False, False, False, True, False, False)}  # body_rate only
    gaps = [b[0] - a[0] for a, b in itertools.pairwise(beats)]
    assert statistics.median(gaps) == pytest.approx(0.1, abs=0.02)
    assert len(beats) >= 20 and max(gaps) < 0.5  # 10 Hz, and never near PX4's 2 Hz limit
    assert max(abs(b[2] - b[1]) for b in beats) < 200_000
    assert result["commands"] == []  # never arms nor switches modes unless asked


def test_px4_goes_silent_on_a_fault_and_requests_only_when_asked(
    ros_scenario: Callable[..., dict[str, Any]], probe_policy: Path
) -> None:
    result = _run(ros_scenario, probe_policy, "offboard+arm")
    stopped = result["stopped"]
    # Odometry stops: after the staleness timeout (0.05 s) no setpoint (not even a zero-thrust one) and no heartbeat,
    # so that PX4's offboard-loss failsafe takes over.
    assert not [s for s in result["setpoints"] if s[0] > stopped + 0.25]
    assert not [b for b in result["heartbeats"] if b[0] > stopped + 0.25]
    # Every setpoint sent was the policy's (rate limited from idle: -0.5, then -0.6), never a zero-thrust one.
    assert all(s[6] <= -0.5 + 1e-6 for s in result["setpoints"])
    sent = [(c[1], c[2], c[3], c[4], c[5], c[6]) for c in result["commands"]]
    assert sent == [(176, 1.0, 6.0, 1, 1, True), (400, 1.0, 0.0, 1, 1, True)]  # offboard, then arm; once each
    first = min(b[0] for b in result["heartbeats"])
    assert result["commands"][0][0] - first >= 0.9  # after 1 s of setpoint stream
