"""Learning from pixels against learning from state: success (and return) over robot minutes, with SAC.

For each camera task named on the command line, SAC learns it twice from scratch under the same settings and seeds:
from its camera frames plus proprioception (DrQ, `robo_rl.algorithms.drq.PixelSAC`), and from the full state of its
state-only twin (the same simulator without cameras). Robot minutes are env steps times the control period over 60,
the time one robot would need to collect the data, which is what a real-robot run pays; wall-clock is recorded too
but is not the comparison (rendering and the encoder cost CPU time a robot does not).

A task is `PIXELS` (its state twin taken from `STATE_TWINS`) or `PIXELS=STATE`. The defaults are the peg arm's and the
RC car's camera variants; a task that is not registered is reported and skipped, so the script runs on any branch.

    python bench/pixels_vs_state.py                                   # the peg's and the car's camera tasks
    python bench/pixels_vs_state.py double_integrator/pixels --env-steps 4000 --out /tmp/p.json
    python bench/pixels_vs_state.py my_pixels=my_state --set sac.encoder.features=32 --seeds 0 1 2
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

import torch
from machine import machine_info, warm_up_torch, warn_if_busy

from robo_rl.algorithms.encoder_config import EncoderConfig
from robo_rl.algorithms.sac import SACConfig
from robo_rl.build import build_runner
from robo_rl.config import apply_overrides
from robo_rl.experiment import ExperimentConfig, TaskConfig
from robo_rl.runners.off_policy_config import OFF_POLICY_LOOP, OffPolicyRunnerConfig
from robo_rl.sim import make, names

RESULTS = Path(__file__).parent / "results" / "pixels_vs_state.json"
DEFAULT_TASKS = ("mujoco/peg_insert_pixels", "rc_car/race_pixels")
STATE_TWINS = {
    "mujoco/peg_insert_pixels": "mujoco/peg_insert",
    "rc_car/race_pixels": "rc_car/race",
    "double_integrator/pixels": "double_integrator",
}
"""Each camera task's state-only twin: the same simulator and reward, observed by its state vector."""


@dataclass(frozen=True)
class Point:
    """One evaluation of a run."""

    env_steps: int
    robot_minutes: float
    wall_s: float
    eval_return: float
    success_rate: float | None


@dataclass(frozen=True)
class Run:
    task: str
    observation: str
    """"pixels" or "state"."""
    seed: int
    curve: tuple[Point, ...]


def pair_of(argument: str) -> tuple[str, str]:
    """(camera task, state task) of a `PIXELS` or `PIXELS=STATE` argument."""
    pixels, _, state = argument.partition("=")
    state = state or STATE_TWINS.get(pixels, "")
    if not state:
        raise SystemExit(f"{pixels}: no state twin known; name it as {pixels}=STATE_TASK")
    return pixels, state


def experiment(task: str, seed: int, args: argparse.Namespace) -> ExperimentConfig:
    """SAC on `task` with the bench's budget; `--set` overrides applied last (to both observation kinds alike)."""
    eval_every = max(1, args.eval_every // args.num_envs)
    loop = replace(
        OFF_POLICY_LOOP,
        max_iterations=max(1, args.env_steps // args.num_envs),
        eval_interval=eval_every,
        eval_episodes=args.eval_episodes,
    )
    cfg = ExperimentConfig(
        name=f"pixels_vs_state_{task.replace('/', '_')}",
        seed=seed,
        algo="sac",
        task=TaskConfig(name=task, num_envs=args.num_envs),
        sac=SACConfig(encoder=EncoderConfig(features=args.features, channels=args.channels)),
        off_policy=OffPolicyRunnerConfig(
            loop=loop, learning_starts=args.learning_starts, batch_size=args.batch_size, buffer_capacity=args.capacity
        ),
    )
    return apply_overrides(cfg, args.set) if args.set else cfg


def train(task: str, observation: str, seed: int, args: argparse.Namespace) -> Run:
    """One run from scratch; its evaluations as robot minutes, wall seconds, return and success rate."""
    cfg = experiment(task, seed, args)
    runner = build_runner(cfg, make)
    dt = float(runner.env.dt)
    curve: list[Point] = []
    start = time.perf_counter()

    def record(row: dict[str, Any]) -> None:
        if row.get("eval_return") is None:
            return
        steps = int(row["env_steps"])
        point = Point(
            steps, steps * dt / 60.0, time.perf_counter() - start, row["eval_return"], row["eval_success_rate"]
        )
        curve.append(point)
        success = "-" if point.success_rate is None else f"{point.success_rate:.2f}"
        print(
            f"  {observation:6s} seed {seed}: {steps:7d} steps {point.robot_minutes:7.2f} robot min "
            f"return {point.eval_return:9.2f} success {success}",
            flush=True,
        )

    runner.learn(record)
    return Run(task, observation, seed, tuple(curve))


def summary(runs: list[Run]) -> dict[str, Any]:
    """Per observation kind: the median over seeds of the final return and success, and the robot minutes."""
    out: dict[str, Any] = {}
    for observation in ("pixels", "state"):
        finals = [run.curve[-1] for run in runs if run.observation == observation and run.curve]
        if not finals:
            continue
        successes = [p.success_rate for p in finals if p.success_rate is not None]
        out[observation] = {
            "robot_minutes": finals[0].robot_minutes,
            "final_return_median": statistics.median(p.eval_return for p in finals),
            "final_success_median": statistics.median(successes) if successes else None,
            "wall_s_median": statistics.median(p.wall_s for p in finals),
        }
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("tasks", nargs="*", default=list(DEFAULT_TASKS), help="PIXELS or PIXELS=STATE task names")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0])
    parser.add_argument("--env-steps", type=int, default=50_000, help="env steps per run (all envs together)")
    parser.add_argument("--eval-every", type=int, default=5_000, help="env steps between evaluations")
    parser.add_argument("--eval-episodes", type=int, default=20)
    parser.add_argument("--num-envs", type=int, default=4)
    parser.add_argument("--learning-starts", type=int, default=1_000)
    parser.add_argument("--batch-size", type=int, default=128)
    parser.add_argument(
        "--capacity", type=int, default=100_000, help="replay capacity (24 KiB a transition at 64x64 RGB)"
    )
    parser.add_argument("--features", type=int, default=50, help="encoder features per camera")
    parser.add_argument("--channels", type=int, default=32, help="encoder filters per convolution")
    parser.add_argument("--set", nargs="*", default=[], metavar="KEY=VALUE", help="config overrides for every run")
    parser.add_argument(
        "--observations", nargs="+", choices=("pixels", "state"), default=["pixels", "state"], help="which to train"
    )
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    warn_if_busy()
    warm_up_torch()
    registered = set(names())
    results: dict[str, Any] = {"machine": machine_info(), "settings": {k: str(v) for k, v in vars(args).items()}}
    results["tasks"] = {}
    missing = []
    for argument in args.tasks:
        pixels, state = pair_of(argument)
        absent = [name for name in (pixels, state) if name not in registered]
        if absent:
            print(f"{pixels}: skipped, task(s) {absent} not registered on this branch", file=sys.stderr)
            missing.append(pixels)
            continue
        print(f"{pixels} (pixels) vs {state} (state)", flush=True)
        runs = [
            train(task, kind, seed, args)
            for seed in args.seeds
            for kind, task in (("pixels", pixels), ("state", state))
            if kind in args.observations
        ]
        results["tasks"][pixels] = {
            "state_task": state,
            "summary": summary(runs),
            "runs": [asdict(run) for run in runs],
        }
        print(json.dumps(results["tasks"][pixels]["summary"], indent=2), flush=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {args.out}")
    return 1 if missing and not results["tasks"] else 0


if __name__ == "__main__":
    sys.exit(main())
