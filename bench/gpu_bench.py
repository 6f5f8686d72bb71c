"""The GPU measurements of issue 38, one part per call (`bench/gpu.sh` runs them all on a lent GPU machine).

- `sim`: quadrotor/hover env-steps/s at 4k-262k envs, random actions with auto-resets: the eager step, the step
  captured as a CUDA graph of `--steps` steps (`robo_rl.capture`), and the compiled step (`HoverConfig.compile`)
  captured the same way. The captured rows count everything a rollout pays per step: the env's random draws
  (eager, before each replay) and the replay. Rows run mode by mode, largest first, in one process; each new env
  (and size) compiles again (about 20 s on an H100: torch.compile's guards are on the env's own objects).
- `train`: a preset trained to its gate in this process (`--set` overrides as `robo-rl train`), with the time from
  process start, the training time the runner counts, and that time split into the iterations that compiled,
  captured or warmed up something and the steady ones after them; every metrics row's timings.

Each call prints one JSON line and appends it to `--output`.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

import torch

from robo_rl.api.process_time import seconds_since_process_start


def sim_row(num_envs: int, mode: str, steps: int, seconds: float) -> dict[str, Any]:
    """env-steps/s of quadrotor/hover on CUDA with `mode` "eager", "graph" or "compile+graph"."""
    from robo_rl.capture import Captured, StaticDraws
    from robo_rl.sim import make

    env: Any = make("quadrotor/hover", num_envs, device="cuda", seed=0, params=(f"compile={mode == 'compile+graph'}",))
    generator = torch.Generator(device="cuda").manual_seed(1)
    actions = torch.rand(steps, num_envs, 4, generator=generator, device="cuda") * 2 - 1
    draws = StaticDraws(steps)
    sync = torch.cuda.synchronize

    if mode == "eager":

        def run() -> None:
            for t in range(steps):
                env.step(actions[t])

    else:

        def block() -> None:
            for t in range(steps):
                env.transition(actions[t], draws.values[t])

        captured = Captured(block, owners=(env,), backend="cuda")

        def run() -> None:
            for t in range(steps):
                draws.fill(t, env.draw())
            captured()

    start = time.perf_counter()
    run()  # warm-up (and compilation)
    run()  # capture
    sync()
    first_s = time.perf_counter() - start
    calls, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        run()
        calls += 1
    sync()
    elapsed = time.perf_counter() - start
    rate = calls * steps * num_envs / elapsed
    return {"num_envs": num_envs, "mode": mode, "steps_per_call": steps, "env_steps_per_s": rate,
            "ms_per_step": 1000 * elapsed / (calls * steps), "first_two_calls_s": round(first_s, 2)}  # fmt: skip


def part_sim(args: argparse.Namespace) -> None:
    """Every (envs, mode) row, each written as soon as it is measured (a timeout keeps the rows before it)."""
    for mode in args.modes:  # the cheap modes at every size first; each compiled size compiles (~20 s on an H100)
        for num_envs in args.envs:
            try:
                row = sim_row(num_envs, mode, args.steps, args.seconds)
            except Exception as error:  # one failed row must not lose the others
                row = {"num_envs": num_envs, "mode": mode, "error": f"{type(error).__name__}: {error}"[:2000]}
            write(args.output, "sim", row)
            print(json.dumps(row), flush=True)


def write(output: Path, part: str, result: Any) -> None:
    record = {"part": part, "device": torch.cuda.get_device_name(), "torch": torch.__version__, "result": result}
    with output.open("a") as out:
        out.write(json.dumps(record) + "\n")


def part_train(args: argparse.Namespace) -> dict[str, Any]:
    from robo_rl.api.configs import preset
    from robo_rl.build import build_runner
    from robo_rl.config import apply_overrides
    from robo_rl.sim import make

    cfg = apply_overrides(preset(args.preset), [f"seed={args.seed}", *args.set])
    runner = build_runner(cfg, make)
    built = seconds_since_process_start()
    rows: list[dict[str, Any]] = []

    def on_row(metrics: dict[str, Any]) -> None:
        keep = ("iteration", "wall_time", "env_steps", "train_success_rate", "eval_success_rate")
        rows.append({key: metrics.get(key) for key in keep} | {"warming": warm_ups(runner)})
        if metrics["wall_time"] > args.budget:
            raise TimeoutError

    runner.stop_requested = lambda: runner.wall_time > args.budget  # also where rows are rare (off-policy)
    reached = False
    try:
        result = runner.learn(on_row)
        reached = result.reached_target
    except TimeoutError:
        pass
    steady = steady_seconds(rows)
    last_eval = next((r["eval_success_rate"] for r in reversed(rows) if r["eval_success_rate"] is not None), None)
    first_two = next((row["wall_time"] for row in rows if row["iteration"] == 2), None)
    return {
        "preset": args.preset,
        "overrides": args.set,
        "seed": args.seed,
        "reached": reached,
        "seconds_from_process_start": seconds_since_process_start(),
        "seconds_from_process_start_to_built": built,
        "training_seconds": runner.wall_time,
        "first_two_iterations_s": first_two,
        "training_seconds_after_two": None if first_two is None else runner.wall_time - first_two,
        "steady_iterations": steady[0],
        "steady_seconds": steady[1],
        "warming_seconds": runner.wall_time - steady[1],
        "iterations": runner.iteration,
        "env_steps": runner.env_steps,
        "capture_backend": getattr(runner, "capture_backend", None),
        "last_eval_success_rate": last_eval,
        "rows": rows,
    }  # fmt: skip


def warm_ups(runner: Any) -> int:
    """Graphs compiled or captured so far in this process: torch.compile's graphs, and the runner's captured blocks
    (each `Captured` counts once its graph exists, and once for its eager first call)."""
    from torch._dynamo.utils import counters

    blocks = [getattr(runner, "_device_rollout", None), getattr(runner, "_captured_evaluation", None)]
    blocks += [getattr(runner, name, None) for name in ("_captured_update", "_captured_updates")]
    updates = getattr(runner, "updates", None)  # the off-policy runner's captured gradient steps, one per plan
    blocks += list(getattr(updates, "_graphs", {}).values())
    count = int(counters["stats"]["unique_graphs"])
    for block in blocks:
        captured = getattr(block, "captured", block)
        calls = getattr(captured, "calls", 0)
        count += min(calls, 2) if isinstance(calls, int) else 0
    return count


def steady_seconds(rows: list[dict[str, Any]]) -> tuple[int, float]:
    """(iterations, seconds) of the iterations in which nothing was compiled, captured or warmed up."""
    iterations, seconds, previous_time, previous_count = 0, 0.0, 0.0, 0
    for row in rows:
        if row["warming"] == previous_count:
            iterations += 1
            seconds += row["wall_time"] - previous_time
        previous_time, previous_count = row["wall_time"], row["warming"]
    return iterations, seconds


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("part", choices=("sim", "train"))
    parser.add_argument("--output", type=Path, required=True, help="JSON-lines file to append the result to")
    parser.add_argument("--envs", type=int, nargs="+", default=[262144, 65536, 16384, 4096], help="sim: env counts")
    parser.add_argument("--modes", nargs="+", default=["eager", "graph", "compile+graph"], help="sim: step modes")
    parser.add_argument("--steps", type=int, default=16, help="sim: steps per captured graph")
    parser.add_argument("--seconds", type=float, default=1.0, help="sim: timed seconds per row")
    parser.add_argument("--preset", default="quadrotor_hover_ppo", help="train: preset name")
    parser.add_argument("--seed", type=int, default=0, help="train: seed")
    parser.add_argument("--budget", type=float, default=60.0, help="train: stop after this many training seconds")
    parser.add_argument("--set", nargs="*", default=[], help="train: config overrides KEY=VALUE")
    args = parser.parse_args(argv)
    if not torch.cuda.is_available():
        sys.exit("gpu_bench.py needs CUDA")
    if args.part == "sim":
        part_sim(args)
        return
    result = part_train(args)
    write(args.output, "train", result)
    print(json.dumps({k: v for k, v in result.items() if k != "rows"}), flush=True)


if __name__ == "__main__":
    main()
