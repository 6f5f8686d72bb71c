"""The hand-over rehearsed through the real nodes, started by the launch file (`robo-rl launch
launch/sim_quadrotor.launch.yaml vehicle:=true height:=...`, with the profile below among its choices): sim_bridge in
vehicle mode (robo_rl.sim.ros_vehicle: the vehicle's own side, PX4's commander or the Crazyflie firmware's, flying the
simulated quadrotor from the ground) and policy_node with the bundled profile (its staleness timeout generous,
harness.generous_profile: a busy machine's stalls must not hand back by themselves), in the namespace /cf1. A probe
plays the operator on vehicle_request and injects the fault on sim_bridge's `silence` topic:

- crazyswarm2: takeoff (policy_node's link unlocks on the ground, notify_setpoints_stop, the high-level take-off);
  PX4: its own take-off mode, then Hold;
- policy (asked until policy_node reports the policy in control), FLY_S of flight;
- silence: no input for SILENCE_S; policy_node must hand back (handover_mode vehicle) and the vehicle take over;
- policy again, FLY_S; vehicle (a requested hand-back); crazyswarm2: land.

What it records is judged by sim_bridge's diagnostics (rule violations, periods in the air with the motors off, who
is in charge) and policy_node's (hand-backs, the last transition). Waits are on conditions, never on fixed wall-clock
deadlines the machine's speed could miss; the deadlines below are only the limits of a run that went wrong.

argv: LOG_DIR POLICY PROFILE (quadrotor_crazyswarm2 or quadrotor_px4). Prints {"skip": why} for crazyswarm2 when
crazyflie_interfaces is not built (make ros-msgs).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

import rclpy
from diagnostic_msgs.msg import DiagnosticArray
from harness import Processes, finish, generous_profile, launch_copy, spin_for, spin_until
from std_msgs.msg import Float64, String

NAMESPACE = "/cf1"
FLY_S = 2.0
SILENCE_S = 1.5
"""Longer than the generous staleness timeout (1 s)."""
LIMIT_S = 60.0
"""The longest any one step may take before the run counts as failed."""


def main() -> None:
    log_dir, policy, profile_name = Path(sys.argv[1]), sys.argv[2], sys.argv[3]
    crazyflie = profile_name == "quadrotor_crazyswarm2"
    if crazyflie:
        try:
            import crazyflie_interfaces.srv  # noqa: F401
        except ImportError as err:
            finish({"skip": f"crazyflie_interfaces is not built into this ROS venv (make ros-msgs): {err}"})
            return
    height = 0.5 if crazyflie else 1.0
    profile = generous_profile(log_dir, profile_name)
    processes = Processes(log_dir)
    launch = launch_copy(log_dir, profile, {})
    arguments = (f"policy:={policy}", f"profile:={profile}", "vehicle:=true", f"height:={height}", "teleop:=false")
    processes.start("launch", "robo-rl", "launch", str(launch), *arguments)
    rclpy.init()
    probe = rclpy.create_node("operator")
    latest: dict[str, dict[str, str]] = {}
    history: list[tuple[float, str, dict[str, str]]] = []

    def on_diagnostics(message: DiagnosticArray) -> None:
        for status in message.status:
            values = {kv.key: kv.value for kv in status.values} | {"message": status.message}
            latest[status.name] = values
            history.append((time.monotonic(), status.name, values))

    probe.create_subscription(DiagnosticArray, "/diagnostics", on_diagnostics, 100)
    request = probe.create_publisher(String, f"{NAMESPACE}/vehicle_request", 10)
    silence = probe.create_publisher(Float64, f"{NAMESPACE}/silence", 10)
    steps: dict[str, Any] = {}

    def node(key: str) -> str:
        return latest.get(f"{NAMESPACE}/policy_node", {}).get(key, "")

    def bridge_value(key: str) -> str:
        return latest.get(f"{NAMESPACE}/sim_bridge", {}).get(key, "")

    def ask(word: str, done: Any) -> bool:
        """Publish `word` every 0.25 s until `done()`."""
        deadline = time.monotonic() + LIMIT_S
        while time.monotonic() < deadline:
            request.publish(String(data=word))
            if spin_until(probe, done, 0.25):
                return True
        return False

    steps["started"] = spin_until(probe, lambda: node("active") == "True" and bridge_value("steps") != "", LIMIT_S)
    if crazyflie:
        steps["takeoff"] = ask("takeoff", lambda: node("crazyflie_phase") in ("climbing", "flying"))
        steps["climbed"] = spin_until(probe, lambda: node("crazyflie_phase") == "flying", LIMIT_S)
    else:
        steps["px4_holds"] = spin_until(probe, lambda: bridge_value("vehicle_mode") == "4", LIMIT_S)
    steps["policy"] = ask(
        "policy", lambda: node("handover_mode") == "policy" and bridge_value("vehicle_in_charge") == "policy"
    )
    spin_for(probe, FLY_S)
    handbacks = node("handbacks")
    silence.publish(Float64(data=SILENCE_S))
    steps["fault_handed_back"] = spin_until(
        probe, lambda: node("handbacks") != handbacks and bridge_value("vehicle_in_charge") == "vehicle", LIMIT_S
    )
    steps["fault_reason"] = node("handover_last")
    spin_for(probe, SILENCE_S)
    steps["policy_again"] = ask(
        "policy", lambda: node("handover_mode") == "policy" and bridge_value("vehicle_in_charge") == "policy"
    )
    spin_for(probe, FLY_S)
    steps["vehicle"] = ask(
        "vehicle", lambda: node("handover_mode") == "vehicle" and bridge_value("vehicle_in_charge") == "vehicle"
    )
    if crazyflie:
        steps["land"] = ask("land", lambda: node("crazyflie_phase") in ("landing", "ground"))
        steps["landed"] = spin_until(probe, lambda: node("crazyflie_phase") == "ground", LIMIT_S)
    spin_for(probe, 1.5)  # the landing's end, and one more round of diagnostics
    results = {
        "steps": steps,
        "bridge": latest.get(f"{NAMESPACE}/sim_bridge"),
        "node": latest.get(f"{NAMESPACE}/policy_node"),
        "max_violations": max(
            (int(v.get("rule_violations", "0")) for _, n, v in history if n.endswith("sim_bridge")), default=0
        ),
        "max_motors_off_in_air": max(
            (int(v.get("motors_off_in_air", "0")) for _, n, v in history if n.endswith("sim_bridge")), default=0
        ),
    }
    probe.destroy_node()
    finish(results, processes, ["launch"])


if __name__ == "__main__":
    main()
