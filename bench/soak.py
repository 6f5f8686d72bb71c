"""The soak with faults (issue 52): policy_node flying sim_bridge's quadrotor for a long time through a relay that
injects every fault kind, every command checked, policy_node's memory sampled.

Stepped simulated time (the default): tests/real/ros/scenarios/scenario_soak.py for `--sim-minutes` simulated
minutes (60: the long form; the test tests/real/ros/test_soak.py runs 30 s of it), one fault every `--every` steps
of 10 ms (200: 180 of each of the ten kinds in an hour). It reports the faults injected, the invariant violations
(0 is the goal), what policy_node's /diagnostics reported against what the referee expected, the node's RSS growth
after a minute of warm-up (< 1 % is the goal) and the wall time.

`--real-time` (a benchmark, not a test): the same graph on the wall clock for `--minutes` (sim_bridge in real time,
no /clock; scenario_soak_real_time.py): the command rate, missed deadlines, stamp latencies, RSS, violations, with
the faults that exist on the wall clock (all but the clock jump; the process stop keeps its backlog). `--stress-ng
N` runs `stress-ng --cpu N` meanwhile.

Usage: `python bench/soak.py [--sim-minutes 60] [--seed 0] [--every 200]`,
`python bench/soak.py --real-time [--minutes 10] [--stress-ng 2]` (needs `make ros-venv`; `--ros-python` another ROS
venv's Python). Results: bench/results/soak.json, soak_real_time.json, soak_real_time_stress_ng.json.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from machine import machine_info, warn_if_busy

from robo_rl.real.ros.netns import LOOPBACK_NETNS

ROOT = Path(__file__).resolve().parents[1]
SCENARIOS = ROOT / "tests" / "real" / "ros" / "scenarios"
sys.path.insert(0, str(SCENARIOS))
from soak_model import naming  # noqa: E402  (the scenarios' folder is not a package)
from soak_policy import export_soak_policy  # noqa: E402

RESULTS = Path(__file__).parent / "results"


@contextlib.contextmanager
def stress_ng(count: int) -> Iterator[None]:
    """`stress-ng --cpu count` while the soak runs (nothing for 0)."""
    if count == 0:
        yield
        return
    process = subprocess.Popen(["stress-ng", "--cpu", str(count)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        yield
    finally:
        process.send_signal(2)
        process.wait(30)


def run_soak(ros_python: Path, script: str, arguments: list[str], log_dir: Path, timeout: float) -> dict:
    """One run of a soak scenario in the loopback-only namespace; its JSON result."""
    argv = [*LOOPBACK_NETNS, str(ros_python), str(SCENARIOS / script), str(log_dir), *arguments]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, cwd=ROOT)
    lines = done.stdout.strip().splitlines()
    if done.returncode != 0 or not lines or not lines[-1].startswith("{"):
        raise SystemExit(f"{script} failed (exit {done.returncode}):\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}")
    return json.loads(lines[-1])


def summary(result: dict) -> dict:
    """The figures worth a line: faults, violations, naming, memory, time."""
    diagnostics = result.get("diagnostics") or {}
    keys = ("sim_seconds", "wall_seconds", "violations", "unanswered", "resends", "sim_stalls", "rss_growth_percent")
    figures = {key: result.get(key) for key in keys if key in result}
    figures["injected"] = result.get("injected")
    figures["naming"] = naming(result.get("injected", {}), diagnostics)
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sim-minutes", type=float, default=60.0, help="simulated minutes (stepped time)")
    parser.add_argument("--seed", type=int, default=0, help="the simulator's and the fault schedule's seed")
    parser.add_argument("--every", type=int, default=200, help="steps (10 ms) from one fault to the next")
    parser.add_argument("--real-time", action="store_true", help="the wall-clock benchmark instead (item 5)")
    parser.add_argument("--minutes", type=float, default=10.0, help="--real-time: wall-clock minutes")
    parser.add_argument("--stress-ng", type=int, default=0, help="--real-time: `stress-ng --cpu N` meanwhile")
    parser.add_argument("--ros-python", type=Path, default=ROOT / ".venv-ros" / "bin" / "python")
    parser.add_argument("--output", type=Path, default=None, help="the result file (default: bench/results/soak*.json)")
    args = parser.parse_args()
    if not args.ros_python.is_file():
        raise SystemExit(f"{args.ros_python} missing: run `make ros-venv` first (or pass --ros-python)")
    if args.stress_ng and shutil.which("stress-ng") is None:
        raise SystemExit("--stress-ng: stress-ng is not installed (apt-get install -y stress-ng)")
    loadavg = warn_if_busy()
    started = time.time()
    with tempfile.TemporaryDirectory() as tmp:
        policy = export_soak_policy(Path(tmp) / "policy.onnx")
        log_dir = Path(tmp) / "logs"
        log_dir.mkdir()
        if args.real_time:
            arguments = [str(policy), str(args.minutes * 60.0), str(args.seed), str(args.every)]
            with stress_ng(args.stress_ng):
                result = run_soak(args.ros_python, "scenario_soak_real_time.py", arguments, log_dir, args.minutes * 120)
        else:
            arguments = [str(policy), str(args.sim_minutes * 60.0), str(args.seed), str(args.every)]
            result = run_soak(args.ros_python, "scenario_soak.py", arguments, log_dir, args.sim_minutes * 600 + 600)
    result.pop("logs", None)
    name = "soak_real_time" + ("_stress_ng" if args.stress_ng else "") if args.real_time else "soak"
    output = args.output or RESULTS / f"{name}.json"
    record = {
        "machine": machine_info(),
        "command": " ".join(sys.argv),
        "loadavg_1min_start": loadavg,
        "elapsed_s": time.time() - started,
        "summary": summary(result),
        "result": result,
    }
    output.write_text(json.dumps(record, indent=1, default=float))
    print(json.dumps(record["summary"], indent=1, default=float))
    print(f"wrote {output}")


if __name__ == "__main__":
    main()
