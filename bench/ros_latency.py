"""policy_node latency over ROS 2: odometry → command at 100, 500 and 1000 Hz, 60 s each (issue 7's benchmark).

A quadrotor_crazyflie policy (the quadrotor_hover_ppo actor, 22 → 4, exported with its real metadata; weights
do not change the cost) runs in policy_node (real rclpy from .venv-ros, Fast DDS, observation trigger). The load
generator (bench/ros_latency_driver.py) publishes nav_msgs/Odometry on a fixed grid and timestamps the commands
it receives; both run as separate processes inside a loopback-only network namespace (`unshare -rn`), one core
each on this 2-core machine. Reported per rate: end-to-end latency (odometry published → command received, one
clock) p50/p99/max, the node's own header-stamp → publish latency p50/p99, missed deadlines (commands later than
one period after their odometry's stamp, counted by the node), lost commands, and the node's CPU time per command.
Target at 500 Hz: p99 ≤ 1 ms, under 0.1 % missed deadlines and nothing lost, on a quiet machine and with one
core kept busy.

`--load N` runs every rate again with N busy processes (a Python spin loop each, pinned to CPU 0, 1, ...) for the
duration, so that quiet and loaded numbers come from the same tool: `--load 0 1` measures both.

Usage: `python bench/ros_latency.py [--seconds 60] [--rates 100 500 1000] [--load 0 [1 ...]]` (needs
`make ros-venv`). Results go to bench/results/ros_latency.json.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import torch
from machine import machine_info, warn_if_busy

from robo_rl.api.configs import preset
from robo_rl.build import build_policy
from robo_rl.config import config_hash
from robo_rl.export.onnx import PolicyMetadata, export_onnx
from robo_rl.real.ros.netns import LOOPBACK_NETNS
from robo_rl.sim import make

ROOT = Path(__file__).resolve().parents[1]
RESULTS = Path(__file__).parent / "results" / "ros_latency.json"
ROS_PYTHON = ROOT / ".venv-ros" / "bin" / "python"
BUSY_LOOP = "import os, sys\nos.sched_setaffinity(0, {int(sys.argv[1])})\nwhile True:\n    pass\n"


def export_policy(path: Path) -> Path:
    cfg = preset("quadrotor_hover_ppo")
    env = make(cfg.task.name, num_envs=1)
    torch.manual_seed(0)
    policy = build_policy(cfg, env)
    metadata = PolicyMetadata(env.obs_spec, env.action_spec, env.dt, cfg.task.name, config_hash(cfg), "bench")
    return export_onnx(policy.deterministic_actor(), metadata, path)


@contextlib.contextmanager
def busy_cores(count: int) -> Iterator[list[int]]:
    """`count` busy-looping processes, the k-th pinned to the k-th CPU this process may use; yields those CPUs."""
    cpus = sorted(os.sched_getaffinity(0))
    pinned = [cpus[k % len(cpus)] for k in range(count)]
    processes = [subprocess.Popen([sys.executable, "-c", BUSY_LOOP, str(cpu)]) for cpu in pinned]
    try:
        yield pinned
    finally:
        for process in processes:
            process.kill()
            process.wait()


def run_rate(policy: Path, rate: float, seconds: float, log: Path) -> dict:
    argv = [*LOOPBACK_NETNS, str(ROS_PYTHON), str(Path(__file__).parent / "ros_latency_driver.py")]
    done = subprocess.run(
        [*argv, str(policy), str(rate), str(seconds), str(log)], capture_output=True, text=True, timeout=seconds + 120
    )
    lines = done.stdout.strip().splitlines()
    if done.returncode != 0 or not lines:
        raise SystemExit(f"driver failed at {rate} Hz:\n{done.stderr[-2000:]}\n{log.read_text()[-2000:]}")
    return json.loads(lines[-1])


def measure(policy: Path, rate: float, load: int, seconds: float, log: Path) -> dict:
    """One driver run at `rate` with `load` busy cores; the row also records them and the load average."""
    with busy_cores(load) as cpus:
        row = run_rate(policy, rate, seconds, log)
        row |= {"load": load, "busy_cpus": cpus, "loadavg_1min_end": os.getloadavg()[0]}
    print(
        f"{rate:6.0f} Hz, load {load}: e2e p50 {row['e2e_p50_ms']:.3f} ms, p99 {row['e2e_p99_ms']:.3f} ms, "
        f"max {row['e2e_max_ms']:.2f} ms; node p99 {row['node_stamp_latency_p99_ms']:.3f} ms; "
        f"missed {row['node_missed_deadlines']}; lost {row['lost']} of {row['sent']}; "
        f"node CPU {row['node_cpu_us_per_command']:.0f} µs/command",
        flush=True,
    )
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=60.0, help="measured seconds per rate (after 2 s warm-up)")
    parser.add_argument("--rates", type=float, nargs="+", default=[100.0, 500.0, 1000.0])
    parser.add_argument(
        "--load", type=int, nargs="+", default=[0], help="busy cores during the runs; several values: one pass each"
    )
    args = parser.parse_args()
    if not ROS_PYTHON.is_file():
        raise SystemExit(f"{ROS_PYTHON} missing: run `make ros-venv` first")
    loadavg = warn_if_busy()
    with tempfile.TemporaryDirectory() as tmp:
        policy = export_policy(Path(tmp) / "policy.onnx")
        rows = [
            measure(policy, rate, load, args.seconds, Path(tmp) / f"node_{rate:.0f}_{load}.log")
            for load in args.load
            for rate in args.rates
        ]
    result = {"machine": machine_info(), "command": " ".join(sys.argv), "loadavg_1min_start": loadavg, "rows": rows}
    RESULTS.write_text(json.dumps(result, indent=1))
    print(f"wrote {RESULTS}")


if __name__ == "__main__":
    main()
