"""The quadrotor hover step on the CPU three ways, side by side: torch eager, torch.compile (inductor) and the numba
per-env kernel (`HoverConfig.backend="numba"`), env-steps/s at several env counts and thread counts; and the RC car
race step two ways (`--task rc_car/race`: torch eager and `RaceConfig.backend="numba"`; it has no compiled path).

Each (backend, integrator) runs in its own process, one after another, with random actions in [-1, 1] (crashes and
resets happen as in early training), after a warm-up. The compile and JIT caches are measured separately: the
first step of a process whose cache directory is empty (cold) and of a second process on the same directory
(warm), for torch.compile (TORCHINDUCTOR_CACHE_DIR) and numba (ROBO_RL_CACHE).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from machine import machine_info, warn_if_busy

RESULTS = Path(__file__).parent / "results" / "fused_step.json"
"""Default output; `--task rc_car/race` writes fused_step_rc_car.json beside it unless --output says otherwise."""
BACKENDS = ("eager", "compile", "numba")


def worker(
    task: str, backend: str, integrator: str, sizes: list[int], threads: list[int], seconds: float
) -> list[dict]:
    import torch
    from pendulum_steps import time_steps

    from robo_rl.sim import make

    rows = []
    for num_envs in sizes:
        params = ["backend=numba"] if backend == "numba" else []
        if task == "quadrotor/hover":
            params += [f"integrator={integrator}", f"compile={backend == 'compile'}"]
        env = make(task, num_envs, seed=0, params=tuple(params))
        generator = torch.Generator().manual_seed(1)
        width = env.action_spec.dim
        actions = [torch.rand(num_envs, width, generator=generator) * 2 - 1 for _ in range(16)]
        start = time.perf_counter()
        env.step(actions[0])
        first = time.perf_counter() - start
        for count in threads:
            torch.set_num_threads(count)
            if backend == "numba":
                from robo_rl.sim.numba_support import set_threads

                set_threads(count)
            calls = iter(range(10**12))

            def step(env: Any = env, actions: list = actions, calls: Any = calls) -> None:
                env.step(actions[next(calls) % len(actions)])

            timing = time_steps(step, seconds, num_envs, lambda: None)
            row = {"task": task, "backend": backend, "integrator": integrator, "threads": count, **timing}
            rows.append(row | {"first_step_s": round(first, 2)})
    return rows


def first_step_seconds(task: str, backend: str, cache: str) -> float:
    """Seconds of a fresh process's first step at 4096 envs with the cache directory `cache`."""
    env = {**os.environ, "TORCHINDUCTOR_CACHE_DIR": cache, "ROBO_RL_CACHE": cache}
    command = [sys.executable, __file__, "--worker", backend, "--sizes", "4096", "--threads", "1", "--seconds", "0.2"]
    command += ["--task", task]
    done = subprocess.run(command, capture_output=True, text=True, env=env, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])[0]["first_step_s"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=2.0, help="measured wall time per point (s)")
    parser.add_argument("--sizes", type=int, nargs="+", default=[1024, 4096, 16384], help="numbers of envs")
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2], help="torch / numba thread counts")
    parser.add_argument("--integrators", nargs="+", default=["rk4", "semi_implicit_euler"], help="integrators")
    parser.add_argument("--output", type=Path, default=RESULTS, help="JSON results path")
    parser.add_argument("--task", default="quadrotor/hover", choices=["quadrotor/hover", "rc_car/race"], help="task")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--integrator", default="rk4", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        print(json.dumps(worker(args.task, args.worker, args.integrator, args.sizes, args.threads, args.seconds)))
        return
    load = warn_if_busy()
    rows: list[dict] = []
    hover = args.task == "quadrotor/hover"
    backends = BACKENDS if hover else ("eager", "numba")
    for integrator in args.integrators if hover else ["semi_implicit_euler"]:
        for backend in backends:
            command = [sys.executable, __file__, "--worker", backend, "--integrator", integrator, "--task", args.task]
            command += ["--seconds", str(args.seconds), "--sizes", *map(str, args.sizes)]
            command += ["--threads", *map(str, args.threads)]
            done = subprocess.run(command, capture_output=True, text=True, check=True)
            for row in json.loads(done.stdout.strip().splitlines()[-1]):
                rows.append(row)
                print(f"{integrator:<20}{backend:<8}{row['threads']:>3} threads {row['num_envs']:>6} envs "
                      f"{row['env_steps_per_s'] / 1e6:8.2f} M env-steps/s", flush=True)  # fmt: skip
    caches = {}
    for backend in ("compile", "numba") if hover else ("numba",):
        with tempfile.TemporaryDirectory() as cache:
            caches[backend] = {
                "cold_s": first_step_seconds(args.task, backend, cache),
                "warm_s": first_step_seconds(args.task, backend, cache),
            }
        print(f"{backend}: first step {caches[backend]['cold_s']} s with an empty cache, "
              f"{caches[backend]['warm_s']} s with a warm one", flush=True)  # fmt: skip
    result = {"command": " ".join([sys.executable, *sys.argv]), "machine": machine_info(), "load_at_start": load,
              "rows": rows, "first_step": caches}  # fmt: skip
    if not hover and args.output == RESULTS:
        args.output = RESULTS.with_name("fused_step_rc_car.json")
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {args.output}")


if __name__ == "__main__":
    main()
