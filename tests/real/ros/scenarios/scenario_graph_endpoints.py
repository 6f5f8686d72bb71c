"""The topics each node of the simulated graph really publishes and subscribes to, as rcl's graph reports them.

argv: LOG_DIR POLICY (a quadrotor_crazyflie policy.onnx). Starts `robo-rl launch launch/sim_quadrotor.launch.yaml`
(sim_bridge, policy_node active, teleop_node) and a recorder with launch/params/quadrotor.yaml's topics, all in /cf1,
waits until policy_node subscribes to its odometry (configured) and the recorder has found its topics, and prints
each node's publishers and subscriptions; test_secure_mode.py compares them with the enclaves' grants.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import rclpy
import yaml
from harness import Processes, finish, spin_until

NODES = ("policy_node", "teleop_node", "sim_bridge", "recorder")


def main() -> None:
    log_dir, policy = Path(sys.argv[1]), sys.argv[2]
    processes = Processes(log_dir)
    processes.start("launch", "robo-rl", "launch", "launch/sim_quadrotor.launch.yaml", f"policy:={policy}")
    # launch/params/quadrotor.yaml with the bag in the log folder (its /**/recorder section's output_dir would win
    # over a -p, which is a /** section, and put the bag in the checkout)
    params = yaml.safe_load(Path("launch/params/quadrotor.yaml").read_text())
    params["/**/recorder"]["ros__parameters"]["output_dir"] = str(log_dir / "bags")
    params_file = log_dir / "quadrotor.yaml"
    params_file.write_text(yaml.safe_dump(params))
    recorder_args = ["--ros-args", "-r", "__node:=recorder", "-r", "__ns:=/cf1", "--params-file", str(params_file)]
    processes.start("recorder", "recorder", *recorder_args)
    rclpy.init()
    probe = rclpy.create_node("probe")

    def endpoints() -> dict[str, dict[str, list[str]]]:
        found = {}
        for name in NODES:
            try:
                publishers = probe.get_publisher_names_and_types_by_node(name, "/cf1")
                subscriptions = probe.get_subscriber_names_and_types_by_node(name, "/cf1")
            except Exception:  # the node is not in the graph yet
                continue
            found[name] = {
                "publish": sorted(topic for topic, _ in publishers),
                "subscribe": sorted(topic for topic, _ in subscriptions),
            }
        return found

    def ready() -> bool:
        seen = endpoints()
        return (
            set(seen) == set(NODES)
            and "/cf1/odom" in seen["policy_node"]["subscribe"]
            and "/cf1/odom" in seen["recorder"]["subscribe"]
            and "/cf1/operator_log" in seen["recorder"]["subscribe"]
        )

    results = {"ready": spin_until(probe, ready, 180.0)}
    time.sleep(1.0)  # the recorder polls the graph every 0.5 s: let it subscribe to whatever else appeared
    spin_until(probe, lambda: False, 1.0)
    results["endpoints"] = endpoints()
    probe.destroy_node()
    finish(results, processes, ["launch", "recorder"])


if __name__ == "__main__":
    main()
