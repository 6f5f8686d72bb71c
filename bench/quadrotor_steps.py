"""Quadrotor simulator throughput: env-steps/s of `quadrotor/hover` at 1 ... 16384 envs, per action mode.

Random actions in [-1, 1] (so crashes and auto-resets happen as in early training), eager torch, after a
warm-up. `--randomize` turns every domain randomization on (mass, inertia, thrust, motor time constant,
latency, noise, disturbances). Target (issue 4): >= 30M env-steps/s at 4096 envs on CPU, motor mode.
"""

from __future__ import annotations

import argparse
import json
import sys
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


def bench(num_envs: int, mode: str, device: str, seconds: float, randomize: bool) -> dict:
    params = FULL_RANDOMIZATION if randomize else ()
    env = make("quadrotor/hover", num_envs, device=device, seed=0, params=params, action_mode=mode)
    generator = torch.Generator(device=device).manual_seed(1)

    def step() -> None:
        env.step(torch.rand(num_envs, 4, generator=generator, device=device) * 2 - 1)

    sync = torch.cuda.synchronize if device.startswith("cuda") else lambda: None
    return {"action_mode": mode, "randomized": randomize, **time_steps(step, seconds, num_envs, sync)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=2.0, help="measured wall time per point (s)")
    parser.add_argument("--device", default="cpu", help="torch device (default cpu)")
    parser.add_argument("--threads", type=int, default=2, help="torch threads (default 2)")
    parser.add_argument("--output", type=Path, default=RESULTS, help="JSON results path")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    rows = []
    print(f"{'mode':<7}{'random':>7}{'envs':>8}{'env-steps/s':>16}")
    for mode, randomize in (("motor", False), ("motor", True), ("ctbr", False)):
        for num_envs in BATCHES:
            rows.append(bench(num_envs, mode, args.device, args.seconds, randomize))
            print(f"{mode:<7}{randomize!s:>7}{num_envs:>8}{rows[-1]['env_steps_per_s']:>16,.0f}", flush=True)
    report = {"command": " ".join([sys.executable, *sys.argv]), "machine": machine_info(), "rows": rows}
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(report, indent=2) + "\n")
    print(f"wrote {args.output}")


if __name__ == "__main__":
    main()
