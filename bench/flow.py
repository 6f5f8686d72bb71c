"""Flow-matching policies from demonstrations (issue 9): success rate vs env steps, flow vs Gaussian.

Per task and seed, 10 demonstrations of the task's scripted expert (`robo-rl record-demos`) and these learners:
  bc-gaussian  SAC's squashed-Gaussian actor behaviour-cloned on the demos (maximum likelihood), no RL;
  bc-flow      a flow policy cloned on the demos (flow matching), no RL: FQL's flow, sampled with K Euler steps;
  sac          Gaussian SAC fine-tuned from bc-gaussian with the demos as RLPD prior buffer, critic warm-up,
               small temperature and the Q-filtered BC term (the best Gaussian recipe of bench/hil.py);
  sac-rlpd     Gaussian SAC fine-tuned from bc-gaussian with the demos as RLPD prior buffer only (the
               preset's SAC settings: no BC term, so RL may leave the averaged demonstrations);
  fql          flow Q-learning fine-tuned from the cloned flow (one-step policy distilled from it);
  dsrl         SAC steering the noise of the frozen cloned flow.
Every learner clones for `--bc-steps` steps; the fine-tuned ones then train for `--iterations` iterations with a
deterministic evaluation (`--eval-episodes` episodes) every `--eval-interval` iterations. Reported per run: the
evaluation after cloning and the success rate at every evaluation with its env-step count.
Target of the issue: on the multimodal task (point/obstacle), flow fine-tuning reaches a higher success rate than
Gaussian SAC at the same number of steps.

Usage: `python bench/flow.py [--tasks point/obstacle quadrotor/hover] [--seeds 0 1 2] [--iterations 1500]`.
Results go to bench/results/flow.json.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from machine import machine_info, warn_if_busy

from robo_rl.build import build_runner
from robo_rl.cli.main import main as cli
from robo_rl.cli.tasks import env_factory, resolve_config
from robo_rl.runners.evaluate import evaluate_held_out

RESULTS = Path(__file__).parent / "results" / "flow.json"
TASKS = ("point/obstacle", "quadrotor/hover")
GAUSSIAN_RECIPE = ["off_policy.critic_warmup_steps=2000", "sac.init_alpha=0.01", "sac.bc_weight=1.0"]
LEARNERS = ("bc-gaussian", "bc-flow", "sac", "sac-rlpd", "fql", "dsrl")


def learner_config(task: str, learner: str, demos: Path, args: argparse.Namespace, seed: int) -> Any:
    algo = {"bc-gaussian": "sac", "bc-flow": "fql", "sac": "sac", "sac-rlpd": "sac", "fql": "fql", "dsrl": "dsrl"}[
        learner
    ]
    overrides = [
        f"algo={algo}",
        f"seed={seed}",
        f"off_policy.prior_buffer={demos}",
        f"off_policy.bc_pretrain_steps={args.bc_steps}",
        f"off_policy.max_iterations={0 if learner.startswith('bc-') else args.iterations}",
        f"off_policy.eval_interval={args.eval_interval}",
        f"off_policy.eval_episodes={args.eval_episodes}",
        "off_policy.eval_min_train_success=null",
        "off_policy.target_success_rate=null",
        *(GAUSSIAN_RECIPE if learner in ("sac", "bc-gaussian") else []),
    ]
    if task == "point/obstacle":
        return resolve_config(f"point_obstacle_{algo}", overrides)
    networks = [] if algo == "sac" else [f"{algo}.{n}_hidden=[64,64]" for n in ("actor", "flow")]
    return resolve_config("quadrotor_hover_sac", [*overrides, *networks])  # the hover preset's sizes for all


def run(cfg: Any, learner: str) -> dict[str, Any]:
    start = time.perf_counter()
    runner = build_runner(cfg, env_factory())
    setup = time.perf_counter() - start
    actor = runner.algorithm.actor
    policy = actor.flow.deterministic_actor() if learner == "bc-flow" else actor.deterministic_actor()
    cloned = evaluate_held_out(runner.eval_env, policy.eval(), cfg.seed)
    curve: list[dict[str, float]] = [{"env_steps": 0, "success": cloned.success_rate, "return": cloned.mean_return}]

    def on_iteration(metrics: dict[str, Any]) -> None:
        if metrics.get("eval_success_rate") is not None:
            curve.append(
                {
                    "env_steps": metrics["env_steps"],
                    "success": metrics["eval_success_rate"],
                    "return": metrics["eval_return"],
                }
            )

    if cfg.off_policy.max_iterations > 0:
        runner.learn(on_iteration)
    return {"setup_seconds": setup, "seconds": runner.wall_time, "curve": curve}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tasks", nargs="+", default=["point/obstacle"], choices=TASKS)
    parser.add_argument("--learners", nargs="+", default=list(LEARNERS), choices=LEARNERS)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--bc-steps", type=int, default=4000, help="behaviour-cloning steps of every learner")
    parser.add_argument("--iterations", type=int, default=1500, help="fine-tuning iterations")
    parser.add_argument("--eval-interval", type=int, default=250)
    parser.add_argument("--eval-episodes", type=int, default=200)
    parser.add_argument("--output", help="JSON file (default: bench/results/flow.json)")
    args = parser.parse_args()
    warn_if_busy()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for task in args.tasks:
            demos = Path(tmp) / f"{task.replace('/', '_')}.npz"
            assert cli(["record-demos", task, "--episodes", "10", "-o", str(demos)]) == 0
            for seed in args.seeds:
                for learner in args.learners:
                    row = {"task": task, "seed": seed, "learner": learner}
                    row |= run(learner_config(task, learner, demos, args, seed), learner)
                    rows.append(row)
                    points = " ".join(f"{p['env_steps'] // 1000}k:{p['success']:.2f}" for p in row["curve"])
                    print(f"{task} seed {seed} {learner:12s} {points} ({row['seconds']:.0f} s)", flush=True)
    output = RESULTS if args.output is None else Path(args.output)
    output.write_text(json.dumps({"machine": machine_info(), "command": " ".join(sys.argv), "rows": rows}, indent=1))
    print(f"wrote {output}")


if __name__ == "__main__":
    main()
