"""RC car race benchmarks: simulator throughput, and lap times of a trained policy against pure pursuit.

(a) env-steps/s of `rc_car/race` (random actions in [-1, 1], so cars leave the track and reset as in early
    training) at 1, 64, 1024 and 4096 envs, side by side with the same task one env per copy: Gymnasium's
    `SyncVectorEnv` of `GymnasiumEnv(make("rc_car/race", 1))` copies. Those copies are stepped one after the other,
    so their env-steps/s hardly depend on their number; above `--max-gym-envs` copies the rate measured at the
    largest measured number stands in for it (flagged `gym_measured_envs` in the JSON).
(b) With `--run RUN_DIR`: the run's deterministic policy (its checkpoint, or `--onnx` for RUN_DIR/policy.onnx)
    and the pure-pursuit baseline each drive `--laps` cars on the run's evaluation task, every car from a random
    place of the track (the same places for both) for a first lap and then a timed flying lap
    (`robo_rl.sim.rc_car.lap_timing`); reported: flying lap times (mean, median, best, worst), first laps and
    off-track events.
(c) With `--run RUN_DIR`: wall-clock of training (the runner's `wall_time`, without process start-up) to the
    first iteration whose training episodes include a clean lap (`train_success_rate` > 0) and to the first
    evaluation where every episode succeeded.

Usage: `python bench/rc_car.py` for (a); `python bench/rc_car.py --run runs/rc_car_race_ppo/<time>-seed0 --skip-steps`
for (b) and (c) only. Results go to `bench/results/rc_car.json`.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

import gymnasium
import numpy as np
import torch
from machine import machine_info, warn_if_busy
from pendulum_steps import time_steps

from robo_rl.sim import make
from robo_rl.sim.gymnasium_adapter import GymnasiumEnv

RESULTS = Path(__file__).parent / "results" / "rc_car.json"
BATCHES = (1, 64, 1024, 4096)
TASK = "rc_car/race"


def bench_batched(num_envs: int, device: str, seconds: float) -> dict[str, Any]:
    env = make(TASK, num_envs, device=device, seed=0)
    generator = torch.Generator(device=device).manual_seed(1)
    actions = [torch.rand(num_envs, 2, generator=generator, device=device) * 2 - 1 for _ in range(16)]
    sync = torch.cuda.synchronize if device.startswith("cuda") else lambda: None
    count = [0]

    def step() -> None:
        env.step(actions[count[0] % len(actions)])
        count[0] += 1

    return time_steps(step, seconds, num_envs, sync)


def bench_gymnasium(num_envs: int, seconds: float) -> dict[str, Any]:
    start = time.perf_counter()
    envs = gymnasium.vector.SyncVectorEnv([lambda: GymnasiumEnv(make(TASK, 1, seed=0))] * num_envs)
    build_s = time.perf_counter() - start
    envs.reset(seed=0)
    rng = np.random.default_rng(1)
    actions = [rng.uniform(-1.0, 1.0, size=(num_envs, 2)).astype(np.float32) for _ in range(16)]
    count = [0]

    def step() -> None:
        envs.step(actions[count[0] % len(actions)])
        count[0] += 1

    result = time_steps(step, seconds, num_envs, lambda: None)
    envs.close()
    return {**result, "build_s": round(build_s, 2)}


def throughput(batches: list[int], device: str, seconds: float, max_gym_envs: int) -> list[dict[str, Any]]:
    rows, gym_rates = [], {}
    print(f"{'envs':>6}{'batched env-steps/s':>22}{'SyncVectorEnv env-steps/s':>28}{'ratio':>9}")
    for num_envs in batches:
        batched = bench_batched(num_envs, device, seconds)
        measured = min(num_envs, max_gym_envs)
        if measured not in gym_rates:
            gym_rates[measured] = bench_gymnasium(measured, seconds)
        gym = gym_rates[measured]
        ratio = batched["env_steps_per_s"] / gym["env_steps_per_s"]
        row = {"num_envs": num_envs, "batched": batched, "gymnasium": gym, "gym_measured_envs": measured}
        rows.append({**row, "ratio": ratio})
        print(f"{num_envs:>6}{batched['env_steps_per_s']:>22,.0f}{gym['env_steps_per_s']:>28,.0f}{ratio:>9.1f}")
    return rows


def lap_times(run_dir: Path, laps: int, seed: int, use_onnx: bool) -> dict[str, Any]:
    from robo_rl.api.onnx_policy import onnx_actor
    from robo_rl.api.runs import load_trained, make_env
    from robo_rl.sim.rc_car.lap_timing import time_laps
    from robo_rl.sim.rc_car.pure_pursuit import PurePursuit

    trained = load_trained(run_dir)
    actor = onnx_actor(run_dir / "policy.onnx") if use_onnx else trained.actor
    policy_env = make_env(trained.cfg, num_envs=laps, device="cpu", evaluation=True)
    expert_env = make_env(trained.cfg, num_envs=laps, device="cpu", evaluation=True)
    expert = PurePursuit()
    results = {
        "policy": time_laps(policy_env, actor, seed).summary(),
        "pure_pursuit": time_laps(expert_env, lambda obs: expert(expert_env), seed).summary(),
    }
    policy, baseline = results["policy"]["mean_flying_lap_s"], results["pure_pursuit"]["mean_flying_lap_s"]
    speedup = baseline / policy if policy and baseline else None
    for name, summary in results.items():
        laps = f"{summary['flying_laps']} flying laps, off track {summary['off_track']}"
        print(
            f"{name:<14} mean flying lap {summary['mean_flying_lap_s']} s (best {summary['best_flying_lap_s']}), {laps}"
        )
    return {
        "run": str(run_dir),
        "checkpoint_iteration": trained.iteration,
        "actor": "policy.onnx" if use_onnx else "checkpoint",
        "track": policy_env.config.track,  # type: ignore[attr-defined]
        **results,
        "pure_pursuit_over_policy_lap_time": speedup,
    }


def time_to_clean_lap(run_dir: Path) -> dict[str, Any]:
    from robo_rl.runners.run_dir import RunDirectory

    rows = RunDirectory.open(run_dir).metrics()

    def first(condition: Any) -> dict[str, Any] | None:
        row = next((r for r in rows if condition(r)), None)
        return None if row is None else {"iteration": row["iteration"], "wall_time_s": round(row["wall_time"], 1)}

    clean = first(lambda r: (r.get("train_success_rate") or 0) > 0)
    all_pass = first(lambda r: r.get("eval_success_rate") == 1.0)
    print(f"first clean training lap: {clean}; first evaluation with every episode successful: {all_pass}")
    return {"first_clean_training_lap": clean, "first_full_evaluation_success": all_pass}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=2.0, help="measured wall time per throughput point (s)")
    parser.add_argument("--batches", type=int, nargs="+", default=BATCHES, help="numbers of envs")
    parser.add_argument("--max-gym-envs", type=int, default=1024, help="most SyncVectorEnv copies to build")
    parser.add_argument("--device", default="cpu", help="torch device of the batched env (default cpu)")
    parser.add_argument("--threads", type=int, default=2, help="torch threads (default 2)")
    parser.add_argument("--skip-steps", action="store_true", help="skip the throughput part (a)")
    parser.add_argument("--run", type=Path, help="training run directory for the lap times (b) and (c)")
    parser.add_argument("--onnx", action="store_true", help="time RUN/policy.onnx instead of the checkpoint")
    parser.add_argument("--laps", type=int, default=100, help="flying laps (cars) per driver (default 100)")
    parser.add_argument("--seed", type=int, default=12345, help="seed of the start places (default 12345)")
    parser.add_argument("--output", type=Path, default=RESULTS, help="JSON results path")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    report: dict[str, Any] = {"command": " ".join([sys.executable, *sys.argv]), "machine": machine_info()}
    report["load_average_at_start"] = warn_if_busy()
    if not args.skip_steps:
        report["throughput"] = throughput(args.batches, args.device, args.seconds, args.max_gym_envs)
    if args.run is not None:
        report["lap_times"] = lap_times(args.run, args.laps, args.seed, args.onnx)
        report["time_to_clean_lap"] = time_to_clean_lap(args.run)
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(report, indent=2) + "\n")
    print(f"wrote {args.output}")


if __name__ == "__main__":
    main()
