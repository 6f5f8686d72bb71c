"""Peg insertion learned in robot time: success over robot minutes for (a) SAC alone, (b) RLPD + 20 demonstrations,
(c) (b) + an operator's corrections (issue 36; HIL-SERL's claim that demonstrations and corrections make a
contact-rich task learnable where RL alone is not).

Each run is one arm at 10 Hz (`num_envs=1`: robot minutes = env steps / 600) training on mujoco/peg_insert's
sparse reward (1 when the peg is 2 cm deep in a hole placed ±2 cm, ±10°, seen through an estimate off by 0.5 mm per
axis: the presets' `PEG_BENCHMARK_TASK`), with the presets' learner (observations normalized, entropy temperature
from 0.01):
- a: `robo-rl train peg_insert_sac`;
- b: `robo-rl train peg_insert_rlpd` with `off_policy.prior_buffer` = 20 whole episodes of the simulated operator
  (`robo-rl record-demos mujoco/peg_insert --episodes 20 --whole-episodes` with the presets' task settings; about
  1,000 steps, under 2 robot minutes, not counted in the runs' robot time);
- c: `robo-rl train peg_insert_hil` with the same demonstrations: the simulated operator
  (robo_rl.sim.mujoco.peg_expert) takes over when the policy heads wrong, at most 20 % of the steps; its steps
  are stored in the online and the demonstration buffer;
- d, e (issue 54, not run by default: `--setups d_fql_demos e_pa_rl_demos`): the flow policies with the same
  demonstrations, `robo-rl train peg_insert_fql` (flow Q-learning) and `peg_insert_pa_rl` (PA-RL), the flow cloned
  on them for 4,000 steps first.
Success: the deterministic policy on 32 random holes every 10 robot minutes (in simulation, not robot time), and
the training episodes' own success (the robot's view, with the operator's help in c). Also the operator's share of
the steps per 10 robot minutes and over the run, and the first robot minute at which the evaluation reached 90 %.
The demonstrator's own success rate is measured the same way. `--set KEY=VALUE` passes settings to every run
(e.g. `--set sac.init_alpha=1.0 --set sac.target_entropy=-4 --set sac.normalize_obs=false` for SAC's defaults).

`--pixels SIZE` learns from the cameras instead (issue 37): the same runs on mujoco/peg_insert_pixels, whose
observation is the state vector plus the wrist and side cameras' SIZE x SIZE frames (SAC becomes DrQ: a camera
encoder trained by the critic), with demonstrations recorded on that task (frames included). `--eval-minutes`
evaluates more often than every 10 robot minutes. `--no-estimate` (issue 51) takes the hole estimate out of the
state vector (the joints alone) and gives the critic the tip relative to the true hole (privileged): with
`--pixels` only the cameras show the hole; without, it is the blind control.

Usage: `python bench/peg_hil.py [--minutes 60] [--seeds 0 1 2] [--parallel 2] [--set KEY=VALUE ...]`; results in
bench/results/peg_hil.json. Needs about 6 CPU minutes per run and robot hour (one thread each); from 32 x 32 pixels
about 40 times that (bench/pixels_vs_state.py).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from machine import machine_info

RESULTS = Path(__file__).parent / "results" / "peg_hil.json"
ROBO_RL = str(Path(sys.executable).parent / "robo-rl")
SETUPS = {
    "a_sac": "peg_insert_sac",
    "b_rlpd_demos": "peg_insert_rlpd",
    "c_rlpd_demos_operator": "peg_insert_hil",
    "d_fql_demos": "peg_insert_fql",
    "e_pa_rl_demos": "peg_insert_pa_rl",
}
FLOW_SETUPS = ("d_fql_demos", "e_pa_rl_demos")
"""The flow-policy learners: their flow is cloned on the demonstrations first (BC_STEPS steps)."""
BC_STEPS = 4000
DEMO_EPISODES = 20
STEPS_PER_MINUTE = 600
STATE_TASK, PIXELS_TASK = "mujoco/peg_insert", "mujoco/peg_insert_pixels"
CAMERAS = "[wrist,side]"


def task_params(estimate_noise: float | None = None) -> list[str]:
    """The presets' task settings as `key=value` (what the demonstrations and the demonstrator's test use too), the
    hole estimate's error `estimate_noise` (m per axis) where given."""
    from robo_rl.sim.mujoco.presets import PEG_BENCHMARK_TASK

    noise = PEG_BENCHMARK_TASK.hole_estimate_noise if estimate_noise is None else estimate_noise
    return [f"hole_estimate_noise={noise}", "num_threads=1"]


def pixel_params(pixels: int | None, no_estimate: bool = False) -> list[str]:
    """The camera task's settings as `key=value` (none without `--pixels`); `no_estimate`: the state vector without
    the hole estimate, the tip relative to the true hole as the critic's privileged observation (without `--pixels`
    the blind control: the joints alone show nothing of the hole)."""
    hidden = ["observe_hole_estimate=false", "privileged_hole=true"] if no_estimate else []
    return hidden if pixels is None else [f"cameras={CAMERAS}", f"image_size={pixels}", *hidden]


def record_demonstrations(
    path: Path, pixels: int | None = None, estimate_noise: float | None = None, no_estimate: bool = False
) -> None:
    """The benchmark's DEMO_EPISODES whole episodes of the simulated operator on the presets' task (seed 7), with
    the camera frames when `pixels`, with the hole estimate's error `estimate_noise` where given, with the
    observation without the estimate (and the privileged part) when `no_estimate`."""
    task = STATE_TASK if pixels is None else PIXELS_TASK
    record = [ROBO_RL, "record-demos", task, "--episodes", str(DEMO_EPISODES), "--whole-episodes"]
    params = task_params(estimate_noise) + pixel_params(pixels, no_estimate)
    record += ["--seed", "7", *(arg for item in params for arg in ("--param", item))]
    subprocess.run([*record, "-o", str(path)], check=True, capture_output=True)


def run(
    name: str, seed: int, minutes: float, demo: Path, root: Path, sets: list[str], eval_minutes: float = 10.0
) -> dict[str, Any]:
    steps = round(minutes * STEPS_PER_MINUTE)
    cmd = [ROBO_RL, "train", SETUPS[name], "--seed", str(seed), "--max-iterations", str(steps), "--quiet"]
    cmd += [arg for item in sets for arg in ("--set", item)]
    every = round(STEPS_PER_MINUTE * eval_minutes)
    cmd += ["--runs-root", str(root / name), "--set", f"off_policy.loop.eval_interval={every}"]
    if name != "a_sac":
        cmd += ["--set", f"off_policy.prior_buffer={demo}"]
    if name in FLOW_SETUPS:
        cmd += ["--set", f"off_policy.bc_pretrain_steps={BC_STEPS}"]
    subprocess.run(cmd, check=True, capture_output=True, text=True, env={**os.environ, "OMP_NUM_THREADS": "1"})
    (metrics,) = (root / name).glob("*/*/metrics.jsonl")
    return score(name, seed, [json.loads(line) for line in metrics.read_text().splitlines()])


def score(name: str, seed: int, rows: list[dict[str, Any]]) -> dict[str, Any]:
    """One run's result from its metrics rows: the evaluations (every 10 robot minutes unless asked otherwise), with
    the training episodes' success and the operator's share of the steps since the evaluation before."""
    curve, window, previous = [], [], 0
    for row in rows:
        window.append((row, row["env_steps"] - previous))  # the row's own steps (the log's rows are 100 steps)
        previous = row["env_steps"]
        if row.get("eval_success_rate") is None:
            continue
        steps = sum(n for _, n in window)
        driven = sum((r.get("intervention_rate") or 0.0) * n for r, n in window)
        window_rows = [r for r, _ in window]
        episodes = sum(r.get("episodes") or 0 for r in window_rows)
        won = sum((r.get("train_success_rate") or 0.0) * (r.get("episodes") or 0) for r in window_rows)
        curve.append(
            {
                "robot_min": row["env_steps"] / STEPS_PER_MINUTE,
                "eval_success": row["eval_success_rate"],
                "train_success": won / episodes if episodes else None,
                "operator_share": driven / steps if "intervention_rate" in row else None,
            }
        )
        window = []
    last = rows[-1]
    reached = [point["robot_min"] for point in curve if point["eval_success"] >= 0.9]
    return {
        "setup": name,
        "seed": seed,
        "first_90_percent_robot_min": reached[0] if reached else None,
        "robot_min": last["env_steps"] / STEPS_PER_MINUTE,
        "final_eval_success": last.get("eval_success_rate"),
        "operator_share_total": last.get("intervention_rate_total", 0.0),
        "training_episodes": sum(row.get("episodes") or 0 for row in rows),
        "training_successes": sum(
            round((row.get("train_success_rate") or 0) * (row.get("episodes") or 0)) for row in rows
        ),
        "curve": curve,
    }


def demonstrator_success(seed: int, episodes: int = 64) -> float:
    """The simulated operator alone on `episodes` random holes (its own success rate, for scale)."""
    code = (
        "import numpy as np, torch\n"
        "from robo_rl.sim.mujoco.peg_insert import PegInsert\n"
        "from robo_rl.sim.mujoco.peg_expert import PegSearchExpert\n"
        "from robo_rl.sim.mujoco.presets import PEG_BENCHMARK_TASK\n"
        f"env = PegInsert({episodes}, config=PEG_BENCHMARK_TASK, seed={seed})\n"
        "expert = PegSearchExpert(env); done = np.zeros(env.num_envs, bool); won = np.zeros(env.num_envs, bool)\n"
        "for _ in range(env.max_episode_steps):\n"
        "    _, _, term, trunc, info = env.step(expert.action())\n"
        "    won |= info['success'].numpy() & ~done; done |= term.numpy() | trunc.numpy()\n"
        "print(won.mean())\n"
    )
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True)
    return float(out.stdout.strip().splitlines()[-1])


def summary(results: list[dict[str, Any]]) -> dict[str, Any]:
    out = {}
    for name in SETUPS:
        rows = [r for r in results if r["setup"] == name]
        if rows:
            finals = [r["final_eval_success"] for r in rows]
            out[name] = {
                "seeds": len(rows),
                "final_eval_success": finals,
                "seeds_at_90_percent": sum(f is not None and f >= 0.9 for f in finals),
                "first_90_percent_robot_min": [r.get("first_90_percent_robot_min") for r in rows],
                "operator_share_last_10_min": [r["curve"][-1]["operator_share"] for r in rows if r["curve"]],
                "operator_share_per_10_min": [[p["operator_share"] for p in r["curve"]] for r in rows],
                "mean_operator_share": sum(r["operator_share_total"] for r in rows) / len(rows),
            }
    return out


def rescore(directory: Path, output: Path) -> None:
    """Replace the results file's runs by `score` of the metrics files kept in `directory` (a run's metrics copied
    as seedS_SETUP.jsonl while the benchmark ran), keeping the file's other fields."""
    out = json.loads(output.read_text())
    results = []
    for path in sorted(directory.glob("seed*_*.jsonl")):
        seed, name = path.stem.removeprefix("seed").split("_", 1)
        rows = [json.loads(line) for line in path.read_text().splitlines()]
        results.append(score(name, int(seed), rows))
    out["results"], out["summary"] = results, summary(results)
    output.write_text(json.dumps(out, indent=2) + "\n")
    print(json.dumps(out["summary"], indent=2))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--minutes", type=float, default=60.0, help="robot minutes per run (default 60)")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--setups", nargs="+", default=list(SETUPS)[:3], choices=list(SETUPS))
    parser.add_argument("--parallel", type=int, default=2, help="runs at once (default 2)")
    parser.add_argument("--merge", action="store_true", help="keep the results file's other runs")
    parser.add_argument("--pixels", type=int, metavar="SIZE", help="learn from the cameras' SIZE x SIZE frames")
    parser.add_argument(
        "--no-estimate",
        action="store_true",
        help="the state vector without the hole estimate (joints only), the critic privileged (without --pixels: "
        "the blind control)",
    )
    parser.add_argument("--eval-minutes", type=float, default=10.0, help="robot minutes between evaluations")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="a setting for every run")
    parser.add_argument("--output", type=Path, default=RESULTS, help=f"results file (default {RESULTS})")
    parser.add_argument(
        "--rescore",
        type=Path,
        metavar="DIR",
        help="score kept metrics files DIR/seedS_SETUP.jsonl into the results file's runs instead of training",
    )
    args = parser.parse_args()
    output: Path = args.output
    if args.rescore is not None:
        rescore(args.rescore, output)
        return
    results: list[dict[str, Any]] = []
    if args.merge and output.is_file():
        rerun = {(name, seed) for seed in args.seeds for name in args.setups}
        kept = json.loads(output.read_text()).get("results", [])
        results = [r for r in kept if (r["setup"], r["seed"]) not in rerun]
    out: dict[str, Any] = {"machine": machine_info(), "minutes": args.minutes, "demo_episodes": DEMO_EPISODES}
    task = [] if args.pixels is None else [f"task.name={PIXELS_TASK}"]
    params = pixel_params(args.pixels, args.no_estimate)
    sets = [*task, *(f"task.config.{item}" for item in params), *args.set]
    out["settings"], out["pixels"], out["no_estimate"] = sets, args.pixels, args.no_estimate
    out["demonstrator_success_64_holes"] = demonstrator_success(seed=100)
    print(f"demonstrator alone: {out['demonstrator_success_64_holes']:.0%} of 64 holes", flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        demo = root / "demos.npz"
        record_demonstrations(demo, args.pixels, no_estimate=args.no_estimate)
        jobs = [(name, seed) for seed in args.seeds for name in args.setups]
        with ThreadPoolExecutor(args.parallel) as pool:  # robot time does not depend on the machine's load
            futures = [
                pool.submit(run, name, seed, args.minutes, demo, root / f"seed{seed}", sets, args.eval_minutes)
                for name, seed in jobs
            ]
            for future in futures:
                results.append(future.result())
                row = {k: v for k, v in results[-1].items() if k != "curve"}
                print(json.dumps(row), flush=True)
                out["results"] = results
                out["summary"] = summary(results)
                output.parent.mkdir(parents=True, exist_ok=True)
                output.write_text(json.dumps(out, indent=2) + "\n")
    print(f"wrote {output}")


if __name__ == "__main__":
    main()
