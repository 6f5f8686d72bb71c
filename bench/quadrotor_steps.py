"""Quadrotor simulator throughput: env-steps/s of `quadrotor/hover` at 1 ... 16384 envs, per action mode.

Random actions in [-1, 1] (so crashes and auto-resets happen as in early training), after a warm-up, for
eager torch and for the step fused by torch.compile (`HoverConfig.compile`; its compile time is reported and
not counted). Rows: motor mode, motor mode with every domain randomization on (mass, inertia, thrust, motor
time constant, latency, noise, disturbances), CTBR mode. Target (issue 4): >= 30M env-steps/s at 4096 envs on
CPU, motor mode.
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
import time
from pathlib import Path

import torch
from machine import machine_info
from pendulum_steps import time_steps

from robo_rl.sim import make

RESULTS = Path(__file__).parent / "results" / "quadrotor_steps.json"
BATCHES = (1, 64, 1024, 4096, 16384)
FULL_RANDOMIZATION = (
    "randomization.mass=0.3",
    "randomization.inertia=0.3",
    "randomization.thrust_coefficient=0.2",
    "randomization.motor_time_constant=0.3",
    "randomization.max_action_latency=2",
    "randomization.position_noise=0.01",
    "randomization.velocity_noise=0.02",
    "randomization.angular_velocity_noise=0.05",
    "randomization.disturbance_force=0.1",
    "randomization.disturbance_torque=1e-5",
)


def bench(num_envs: int, mode: str, device: str, seconds: float, randomize: bool, compiled: bool) -> dict:
    params = (*(FULL_RANDOMIZATION if randomize else ()), f"compile={compiled}")
    torch._dynamo.reset()  # each row compiles afresh (dynamo keeps at most 8 graphs per function)
    env = make("quadrotor/hover", num_envs, device=device, seed=0, params=params, action_mode=mode)
    generator = torch.Generator(device=device).manual_seed(1)
    actions = [torch.rand(num_envs, 4, generator=generator, device=device) * 2 - 1 for _ in range(16)]
    sync = torch.cuda.synchronize if device.startswith("cuda") else lambda: None
    start = time.perf_counter()
    env.step(actions[0])  # compiles when `compiled`
    sync()
    compile_s = time.perf_counter() - start
    count = itertools.count()

    def step() -> None:
        env.step(actions[next(count) % len(actions)])

    timing = time_steps(step, seconds, num_envs, sync)
    row = {"action_mode": mode, "randomized": randomize, "compiled": compiled, **timing}
    return row | ({"first_step_s": round(compile_s, 1)} if compiled else {})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=2.0, help="measured wall time per point (s)")
    parser.add_argument("--device", default="cpu", help="torch device (default cpu)")
    parser.add_argument("--threads", type=int, default=2, help="torch threads (default 2)")
    parser.add_argument("--output", type=Path, default=RESULTS, help="JSON results path")
    parser.add_argument("--batches", type=int, nargs="+", default=BATCHES, help="numbers of envs")
    parser.add_argument("--no-compile", action="store_true", help="eager rows only (compiling takes minutes)")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    rows = []
    print(f"{'mode':<7}{'random':>7}{'compiled':>9}{'envs':>8}{'env-steps/s':>16}")
    for mode, randomize in (("motor", False), ("motor", True), ("ctbr", False)):
        for compiled in (False,) if args.no_compile else (False, True):
            for num_envs in args.batches:
                row = bench(num_envs, mode, args.device, args.seconds, randomize, compiled)
                rows.append(row)
                line = f"{mode:<7}{randomize!s:>7}{compiled!s:>9}{num_envs:>8}{row['env_steps_per_s']:>16,.0f}"
                print(line, flush=True)
    report = {"command": " ".join([sys.executable, *sys.argv]), "machine": machine_info(), "rows": rows}
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(report, indent=2) + "\n")
    print(f"wrote {args.output}")


if __name__ == "__main__":
    main()
