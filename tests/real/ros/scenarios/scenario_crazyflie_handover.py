"""policy_node in a Crazyflie's namespace (/cf1) with the bundled quadrotor_crazyswarm2 profile (its staleness timeout
made generous) against a stand-in crazyswarm2 server whose Crazyflie is robo_rl.sim.quadrotor.crazyflie_commander:
the probe serves /cf1/takeoff, land, go_to and notify_setpoints_stop (crazyflie_interfaces), feeds every Twist on
/cf1/cmd_vel_legacy to the stand-in as crazyswarm2's C++ server would, ticks the stand-in every 10 ms, moves the
vehicle along the high-level position target, and publishes /cf1/odom and /cf1/gyro from it. Requests go on
/cf1/vehicle_request: policy (refused on the ground), takeoff, policy, then the odometry stops (the fault), resumes,
policy, vehicle, land.

argv: LOG_DIR POLICY. Prints {"skip": why} when crazyflie_interfaces is not built (make ros-msgs).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

from harness import Processes, finish, generous_profile, ros_args, spin_publishing_until, spin_until

STALENESS_S = 0.3
SETTLE_S = 60.0
HOLD_S = 0.5


def main() -> None:
    log_dir, policy = Path(sys.argv[1]), sys.argv[2]
    try:
        from crazyflie_interfaces.msg import LogDataGeneric
        from crazyflie_interfaces.srv import GoTo, Land, NotifySetpointsStop, Takeoff
    except ImportError as err:
        finish({"skip": f"crazyflie_interfaces is not built into this ROS venv (make ros-msgs): {err}"})
        return
    import rclpy
    from geometry_msgs.msg import Twist
    from nav_msgs.msg import Odometry
    from std_msgs.msg import String

    from robo_rl.sim.quadrotor.crazyflie_commander import CrazyflieCommander, Source, VehicleState, legacy_packet

    processes = Processes(log_dir)
    profile = generous_profile(log_dir, "quadrotor_crazyswarm2", STALENESS_S)
    params = {"policy": policy, "profile": profile, "autostart": True, "target": [0.0, 0.0, 0.5]}
    processes.start("policy_node", "policy_node", *ros_args("policy_node", "/cf1", **params))
    rclpy.init()
    probe = rclpy.create_node("crazyswarm2_stand_in")
    cf = CrazyflieCommander()
    start = time.monotonic()
    world: dict[str, Any] = {"state": VehicleState((0.1, 0.2, 0.0)), "odom": True}
    calls: list[tuple[float, str]] = []
    packets: list[tuple[float, int]] = []
    ticks: list[tuple[float, str, bool, float]] = []

    def now() -> float:
        return time.monotonic() - start

    def on_twist(m: Twist) -> None:
        twist = {"linear.x": m.linear.x, "linear.y": m.linear.y, "linear.z": m.linear.z, "angular.z": m.angular.z}
        roll, pitch, yawrate, thrust = legacy_packet(twist)
        packets.append((now(), thrust))
        cf.packet_rpyt(roll, pitch, yawrate, thrust, now())

    def seconds(duration: Any) -> float:
        return duration.sec + duration.nanosec * 1e-9

    def takeoff(request: Any, response: Any) -> Any:
        calls.append((now(), "takeoff"))
        cf.takeoff(request.height, seconds(request.duration), now())
        return response

    def land(request: Any, response: Any) -> Any:
        calls.append((now(), "land"))
        cf.land(request.height, seconds(request.duration), now())
        return response

    def go_to(request: Any, response: Any) -> Any:
        calls.append((now(), f"go_to relative={request.relative}"))
        goal = request.goal
        cf.go_to(goal.x, goal.y, goal.z, request.yaw, seconds(request.duration), now(), request.relative)
        return response

    def notify(request: Any, response: Any) -> Any:
        calls.append((now(), "notify_setpoints_stop"))
        cf.notify_setpoints_stop(now())
        return response

    probe.create_subscription(Twist, "/cf1/cmd_vel_legacy", on_twist, 100)
    services = [
        probe.create_service(Takeoff, "/cf1/takeoff", takeoff),
        probe.create_service(Land, "/cf1/land", land),
        probe.create_service(GoTo, "/cf1/go_to", go_to),
        probe.create_service(NotifySetpointsStop, "/cf1/notify_setpoints_stop", notify),
    ]
    odometry = probe.create_publisher(Odometry, "/cf1/odom", 10)
    gyro = probe.create_publisher(LogDataGeneric, "/cf1/gyro", 10)
    requests = probe.create_publisher(String, "/cf1/vehicle_request", 10)

    def tick() -> None:
        """One stabilizer tick of the stand-in, the vehicle moved, its odometry and gyro published."""
        state: VehicleState = world["state"]
        active = cf.setpoint(now(), state)
        ticks.append((now(), active.source.value, active.motors_off, state.position[2]))
        if active.source is Source.HIGHLEVEL and active.setpoint.position is not None:
            state = VehicleState(active.setpoint.position, (0.0, 0.0, 0.0), active.setpoint.yaw)
        elif active.motors_off:
            x, y, z = state.position
            state = VehicleState((x, y, max(0.0, z - 0.01)), state.velocity, state.yaw)
        world["state"] = state
        stamp = probe.get_clock().now().to_msg()
        if world["odom"]:
            m = Odometry()
            m.header.stamp = stamp
            m.pose.pose.position.x, m.pose.pose.position.y, m.pose.pose.position.z = state.position
            m.pose.pose.orientation.w = 1.0
            odometry.publish(m)
        log = LogDataGeneric()
        log.header.stamp = stamp
        log.values = [0.0, 0.0, 0.0]
        gyro.publish(log)

    def ask(word: str) -> float:
        requests.publish(String(data=word))
        return now()

    def called(name: str, since: float) -> bool:
        return any(t >= since and what.startswith(name) for t, what in calls)

    def run_until(condition: Any, timeout: float = SETTLE_S) -> bool:
        return spin_publishing_until(probe, condition, timeout, tick, 0.01)

    def run_for(seconds_: float) -> None:
        until = now() + seconds_
        run_until(lambda: now() >= until, seconds_ + 1.0)

    ready = spin_until(
        probe, lambda: odometry.get_subscription_count() > 0 and requests.get_subscription_count() > 0, 20.0
    )
    run_for(1.0)
    refused_at = ask("policy")  # on the ground, not taken off by the node: refused, nothing sent
    run_for(HOLD_S)
    asked_takeoff = ask("takeoff")
    took_off = run_until(lambda: called("takeoff", asked_takeoff))
    climbed = run_until(lambda: world["state"].position[2] >= 0.499)
    run_for(0.3)
    asked_policy = ask("policy")
    flying = run_until(lambda: sum(t > asked_policy and th > 0 for t, th in packets) >= 100)
    world["odom"] = False  # the fault: the odometry stops
    fault_at = now()
    handed_back = run_until(lambda: called("notify_setpoints_stop", fault_at))
    run_for(HOLD_S)
    held_until = now()
    world["odom"] = True
    run_for(HOLD_S)
    asked_again = ask("policy")
    again = run_until(lambda: sum(t > asked_again and th > 0 for t, th in packets) >= 30)
    asked_vehicle = ask("vehicle")
    back = run_until(lambda: called("notify_setpoints_stop", asked_vehicle))
    run_for(HOLD_S)
    asked_land = ask("land")
    landed = run_until(lambda: called("land", asked_land) and world["state"].position[2] == 0.0)
    run_for(HOLD_S)
    del services
    results = {
        "ready": ready,
        "times": {
            "refused": refused_at,
            "takeoff": asked_takeoff,
            "policy": asked_policy,
            "fault": fault_at,
            "held_until": held_until,
            "again": asked_again,
            "vehicle": asked_vehicle,
            "land": asked_land,
        },
        "reached": [took_off, climbed, flying, handed_back, again, back, landed],
        "calls": calls,
        "packets": packets,
        "ticks": ticks,
    }
    finish(results, processes, ["policy_node"])


if __name__ == "__main__":
    main()
