"""Issue 53's benchmark: the RL current controller against the PI/FOC baseline, in our simulator and in GEM; its
training time; its Cortex-M4 cost; the speed controller against the PI speed controller.

1. `robo-rl train electric_motor_current_ppo --export` for each seed: training seconds and iterations to the target
   (within 10 % of PI's tracking error); seed 0 again for a fixed 160 iterations (about a minute) without a target.
2. Each policy and the PI/FOC baseline (per-axis clipping, gem-control's; and clipping on the voltage circle) on the
   same drawn episodes (seed 2024, 256 each) in three sets: every speed; |speed| >= 0.75 of the limit (field
   weakening); and there with references needing up to the full voltage (margin 1.0, the voltage limit). The first
   set also in GEM (`--gem-episodes`, episode by episode; GEM is about 100x slower).
3. `robo-rl export --target cortex-m4 --verify` of each policy: QEMU instructions per step, the estimate at 168 MHz,
   C vs onnxruntime.
4. `robo-rl train electric_motor_speed_ppo` (seed 0) and its policy against `foc.SpeedPi` on 256 episodes.

Timings are wall-clock on this machine with the load named in the result (1-minute load average before each run).
Usage: `python bench/electric_motor.py [--seeds 0 1 2] [--gem-episodes 32] [--out bench/results/electric_motor.json]`.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import torch
from machine import machine_info, warn_if_busy

from robo_rl.sim.electric_motor import CurrentControlConfig
from robo_rl.sim.electric_motor.gem_judge import rollout_gem
from robo_rl.sim.electric_motor.scenario import draw_scenario, rollout
from robo_rl.sim.electric_motor.scoring import onnx_factory, pi_factory, score
from robo_rl.sim.electric_motor.speed_control import PmsmSpeedControl
from robo_rl.sim.electric_motor.speed_scoring import pi_speed_controller, score_speed

ROOT = Path(__file__).resolve().parents[1]
SETS = {
    "every speed": CurrentControlConfig(),
    "field weakening (|speed| >= 0.75 limit)": CurrentControlConfig(speed_min=0.75),
    "voltage limit (and references up to the full voltage)": CurrentControlConfig(speed_min=0.75, voltage_margin=1.0),
}


def train(preset: str, seed: int, root: Path, *extra: str) -> dict[str, Any]:
    """One `robo-rl train` run in a process of its own; its run directory, seconds, iterations, final evaluation."""
    load = os.getloadavg()[0]
    command = [sys.executable, "-m", "robo_rl.cli.main", "train", preset, "--seed", str(seed), "--quiet"]
    subprocess.run([*command, "--runs-root", str(root), "--export", *extra], check=True, cwd=ROOT)
    run = sorted((root / preset).iterdir())[-1]
    rows = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    evals = [row for row in rows if row.get("eval_return") is not None]
    return {
        "run": str(run),
        "seed": seed,
        "flags": list(extra),
        "training_s": rows[-1]["wall_time"],
        "iterations": rows[-1]["iteration"],
        "final_eval_return": evals[-1]["eval_return"] if evals else None,
        "load_before": load,
    }


def firmware(run: str) -> dict[str, Any]:
    subprocess.run(
        [sys.executable, "-m", "robo_rl.cli.main", "export", run, "--target", "cortex-m4", "--verify"],
        check=True,
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
    )
    report = json.loads((Path(run) / "firmware_cortex-m4" / "report.json").read_text())
    qemu = report.get("qemu") or {}
    return {
        "layers": report["layers"],
        "flash_bytes": report["cortex_m4_size"]["text"],
        "instructions_per_step": qemu.get("instructions_per_inference"),
        "estimated_us_at_168MHz": qemu.get("estimated_latency_us"),
        "qemu_vs_onnxruntime_max_abs": (qemu.get("vs_onnxruntime") or {}).get("max_abs_error"),
        "host_vs_onnxruntime_max_abs": report["host_parity"]["max_abs_error"],
    }


def compare(policies: dict[str, str], gem_episodes: int) -> dict[str, Any]:
    results: dict[str, Any] = {}
    for label, config in SETS.items():
        scenario = draw_scenario(config, 256, seed=2024)
        controllers = {"PI/FOC (axis clip, gem-control)": pi_factory(config.motor, config.dt)}
        controllers["PI/FOC (circle clip)"] = pi_factory(config.motor, config.dt, "circle")
        controllers.update({name: onnx_factory(Path(path)) for name, path in policies.items()})
        results[label] = {name: score(scenario, rollout(scenario, f)).as_dict() for name, f in controllers.items()}
        print(label, json.dumps(results[label], indent=1), flush=True)
    scenario = draw_scenario(SETS["every speed"], gem_episodes, seed=2024)
    controllers = {"PI/FOC (axis clip, gem-control)": pi_factory(scenario.config.motor, scenario.config.dt)}
    controllers.update({name: onnx_factory(Path(path)) for name, path in policies.items()})
    results[f"in GEM: every speed, {gem_episodes} episodes"] = {
        name: {
            "gem": score(scenario, rollout_gem(scenario, f)).as_dict(),
            "ours": score(scenario, rollout(scenario, f)).as_dict(),
        }
        for name, f in controllers.items()
    }
    return results


def speed(root: Path) -> dict[str, Any]:
    run = train("electric_motor_speed_ppo", 0, root)
    policy = onnx_factory(Path(run["run"]) / "policy.onnx")(1)
    task = PmsmSpeedControl(64, seed=0)
    rl = score_speed(task, lambda obs: policy(obs, obs[:, 2], obs[:, 1]), episodes_per_env=4)
    task = PmsmSpeedControl(64, seed=0)
    pi = score_speed(task, pi_speed_controller(task), episodes_per_env=4)
    return {"training": run, "policy": rl.as_dict(), "PI speed (foc.SpeedPi)": pi.as_dict()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--gem-episodes", type=int, default=32)
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "electric_motor.json")
    args = parser.parse_args()
    warn_if_busy()
    torch.set_num_threads(1)
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        runs = [train("electric_motor_current_ppo", seed, root) for seed in args.seeds]
        fixed = ("--max-iterations", "160", "--set", "runner.loop.target_return=null")
        runs.append(train("electric_motor_current_ppo", 0, root / "fixed", *fixed))
        policies = {
            f"PPO seed {r['seed']}" + (" (160 iterations)" if r["flags"] else " (to target)"): r["run"] + "/policy.onnx"
            for r in runs
        }
        result = {
            "machine": machine_info(),
            "training": runs,
            "comparison": compare(policies, args.gem_episodes),
            "cortex_m4": {name: firmware(str(Path(path).parent)) for name, path in policies.items()},
            "speed": speed(root),
        }
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
