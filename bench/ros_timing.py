"""The wall-clock figures of the ROS scenario tests, measured quiet and loaded: rates and delays, never asserted.

The ROS integration tests (tests/real/ros) assert only what holds at any machine speed (one command per message at
most, the order of the command kinds, no lost e-stop); the timing logic runs on stepped time in
tests/real/test_node_core.py. What they used to assert on the wall clock is measured here, from the same scenario
scripts (real policy_node processes from .venv-ros in a loopback-only network namespace), each run `--repeat` times
per load level:
- scenario_policy_node.py (observation trigger, 100 Hz odometry): the command rate (was: 100 Hz ± 10 %); after the
  odometry stops, the first safe command's delay past the staleness timeout (was: ≤ one period + 15 ms) and the
  safe commands' rate (was: 100 Hz ± 15 %).
- scenario_timer.py (timer trigger, 50 Hz odometry): the loop's rate while fed and once stale (was: 100 Hz ± 10 %,
  ± 15 %).
- scenario_px4.py (quadrotor_px4 against the stand-in PX4): the OffboardControlMode heartbeat's median and largest
  gap as received (was: 0.1 ± 0.02 s, < 0.5 s; PX4's offboard mode wants 2 Hz at least) and the largest distance
  of a setpoint's or heartbeat's microsecond stamp from the receiver's clock (was: < 200 ms).
The scenarios run the profile with a 1 s staleness timeout (tests/real/ros/scenarios/harness.py): the delay past it
is what the profile's own 50 ms would see, on a machine as busy as this one.

`--load N` keeps N busy processes (a Python spin loop each, pinned to CPU 0, 1, ..., as bench/ros_latency.py does)
for the runs, so that quiet and loaded numbers come from the same tool: `--load 0 2` measures both. With
`--stress-ng`, the load is `stress-ng --cpu N` instead (unpinned, the suite's loaded condition).

Usage: `python bench/ros_timing.py [--load 0 [2 ...]] [--repeat 3] [--stress-ng]` (needs `make ros-venv`). Results go
to bench/results/ros_timing.json.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import torch
from machine import machine_info, warn_if_busy
from ros_latency import ROOT, ROS_PYTHON, busy_cores

from robo_rl.actuator import actuator_of
from robo_rl.api.configs import preset
from robo_rl.build import build_policy
from robo_rl.config import config_hash
from robo_rl.export.onnx import PolicyMetadata, export_onnx
from robo_rl.real.ros.netns import LOOPBACK_NETNS
from robo_rl.sim import make

RESULTS = Path(__file__).parent / "results" / "ros_timing.json"
SCENARIOS = ROOT / "tests" / "real" / "ros" / "scenarios"
ARGUMENTS = {"scenario_px4.py": ("none",)}
"""Arguments a scenario takes after LOG_DIR POLICY (scenario_px4.py: no offboard or arming requests)."""
FIGURES = {
    "scenario_policy_node.py": ("rate_hz", "stale_first_safe_after_s", "staleness_timeout", "stale_rate_hz"),
    "scenario_timer.py": ("fed_rate_hz", "stale_rate_hz"),
    "scenario_px4.py": ("heartbeat_gap_median_s", "heartbeat_gap_max_s", "stamp_offset_max_ms"),
}
"""The measured figures each scenario reports (its other results are the tests' business)."""


TASK_PARAMS = {"scenario_px4.py": ("action_mode=ctbr", "position_integral_limit=0")}
"""The hover task's parameters the scenario's profile deploys (quadrotor_px4: body rates and thrust)."""


def export_policy(path: Path, params: tuple[str, ...] = ()) -> Path:
    """A randomly initialized quadrotor_hover_ppo actor with the metadata the scenario's profile checks (the
    preset's task parameters and `params`, the actuator model); weights do not change the timing."""
    cfg = preset("quadrotor_hover_ppo")
    env = make(cfg.task.name, num_envs=1, config=cfg.task.config, params=params)
    torch.manual_seed(0)
    policy = build_policy(cfg, env)
    metadata = PolicyMetadata(
        env.obs_spec, env.action_spec, env.dt, cfg.task.name, config_hash(cfg), "bench", actuator=actuator_of(env)
    )
    return export_onnx(policy.deterministic_actor(), metadata, path)


def run_scenario(script: str, policy: Path, log_dir: Path) -> dict[str, float]:
    """One run of a scenario script; its wall-clock figures, plus the first safe command's delay past the timeout."""
    argv = [*LOOPBACK_NETNS, str(ROS_PYTHON), str(SCENARIOS / script), str(log_dir), str(policy)]
    argv += ARGUMENTS.get(script, ())
    done = subprocess.run(argv, capture_output=True, text=True, timeout=600, cwd=ROOT)
    lines = done.stdout.strip().splitlines()
    if done.returncode != 0 or not lines or not lines[-1].startswith("{"):
        raise SystemExit(f"{script} failed (exit {done.returncode}):\n{done.stderr[-2000:]}")
    result = json.loads(lines[-1])
    figures = {name: result[name] for name in FIGURES[script]}
    if "stale_first_safe_after_s" in figures and figures["stale_first_safe_after_s"] is not None:
        figures["stale_first_safe_past_timeout_ms"] = 1e3 * (
            figures["stale_first_safe_after_s"] - figures["staleness_timeout"]
        )
    return figures


def summary(runs: list[dict[str, float]]) -> dict[str, dict[str, float]]:
    """Per figure: min, median and max over the runs."""
    names = [name for name in runs[0] if all(isinstance(run.get(name), (int, float)) for run in runs)]
    return {
        name: {
            "min": min(run[name] for run in runs),
            "median": statistics.median(run[name] for run in runs),
            "max": max(run[name] for run in runs),
        }
        for name in names
    }


@contextlib.contextmanager
def stress_ng(count: int) -> Iterator[list[int]]:
    """`stress-ng --cpu count` for the duration (no load for 0); yields [] (its workers are not pinned)."""
    if count == 0:
        yield []
        return
    process = subprocess.Popen(["stress-ng", "--cpu", str(count)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        yield []
    finally:
        process.send_signal(2)
        process.wait(30)


def measure(policies: dict[str, Path], load: int, repeat: int, tmp: Path, use_stress_ng: bool) -> list[dict]:
    rows = []
    with (stress_ng if use_stress_ng else busy_cores)(load) as cpus:
        for script in FIGURES:
            runs = []
            for k in range(repeat):
                log_dir = tmp / f"{Path(script).stem}_{load}_{k}"
                log_dir.mkdir()
                runs.append(run_scenario(script, policies[script], log_dir))
            load_kind = "stress-ng --cpu" if use_stress_ng else "pinned spin loops"
            row = {"scenario": script, "load": load, "load_kind": load_kind, "busy_cpus": cpus, "runs": runs}
            row["summary"] = summary(runs)
            row["loadavg_1min_end"] = os.getloadavg()[0]
            print(f"{script}, load {load}: " + json.dumps(row["summary"]), flush=True)
            rows.append(row)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--load", type=int, nargs="+", default=[0, 2], help="busy cores during the runs; several values: one pass each"
    )
    parser.add_argument("--repeat", type=int, default=3, help="runs of each scenario per load level")
    parser.add_argument("--stress-ng", action="store_true", help="load with `stress-ng --cpu N` (unpinned)")
    args = parser.parse_args()
    if not ROS_PYTHON.is_file():
        raise SystemExit(f"{ROS_PYTHON} missing: run `make ros-venv` first")
    if args.repeat < 1:
        raise SystemExit(f"--repeat: must be >= 1, got {args.repeat}")
    if args.stress_ng and shutil.which("stress-ng") is None:
        raise SystemExit("--stress-ng: stress-ng is not installed")
    loadavg = warn_if_busy()
    with tempfile.TemporaryDirectory() as tmp:
        policies = {
            script: export_policy(Path(tmp) / f"{Path(script).stem}.onnx", TASK_PARAMS.get(script, ()))
            for script in FIGURES
        }
        rows = [row for load in args.load for row in measure(policies, load, args.repeat, Path(tmp), args.stress_ng)]
    result = {"machine": machine_info(), "command": " ".join(sys.argv), "loadavg_1min_start": loadavg, "rows": rows}
    results = RESULTS.with_name("ros_timing_stress_ng.json") if args.stress_ng else RESULTS
    results.write_text(json.dumps(result, indent=1))
    print(f"wrote {results}")


if __name__ == "__main__":
    main()
