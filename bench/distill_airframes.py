"""Teacher -> student on the airframe distribution (issue 47): distill a trained `quadrotor_hover_any_teacher_ppo`
run (an MLP that sees the drawn airframe) into `quadrotor_hover_any_ppo`'s GRU student (which sees what a deployed
policy sees) with DAgger (robo_rl.algorithms.distill), and write the student as a run directory of that preset, so
that `robo-rl export RUN`, `robo-rl eval RUN` and bench/airframes.py take it as they take a PPO run.

    python bench/distill_airframes.py TEACHER_RUN --budget 600 --runs-root runs

Every `--eval-interval` iterations the student flies 1000 deterministic evaluation episodes of airframes drawn from
the distribution (the preset's evaluation settings); the best one is kept as checkpoints/best.pt.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import torch
import yaml

from robo_rl.algorithms.distill import Distillation, DistillConfig
from robo_rl.api.configs import preset
from robo_rl.api.envs import task_record
from robo_rl.api.runs import load_trained
from robo_rl.build import build_policy
from robo_rl.config import apply_overrides, to_dict
from robo_rl.modules.recurrent import RecurrentActorCritic
from robo_rl.runners.evaluate import evaluate
from robo_rl.runners.run_dir import RunDirectory
from robo_rl.sim import make
from robo_rl.storage import checkpoint
from robo_rl.task_record import write_task_record

STUDENT = "quadrotor_hover_any_ppo"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("teacher", type=Path, help="run directory of a quadrotor_hover_any_teacher_ppo run")
    parser.add_argument("--budget", type=float, default=600.0, help="seconds of distillation (default 600)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--num-envs", type=int, default=1024)
    parser.add_argument("--num-steps", type=int, default=32)
    parser.add_argument("--eval-interval", type=int, default=25)
    parser.add_argument("--eval-episodes", type=int, default=1000)
    parser.add_argument("--runs-root", type=Path, default=Path("runs"))
    parser.add_argument("--device", default="cpu", help="torch device of the envs, the teacher and the student")
    parser.add_argument("--set", nargs="*", default=[], help="overrides of the student's preset")
    args = parser.parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(args.seed)
    teacher = load_trained(args.teacher, device=args.device).actor.eval()
    overrides = [f"seed={args.seed}", f"task.num_envs={args.num_envs}", f"task.device={args.device}", *args.set]
    cfg = apply_overrides(preset(STUDENT), overrides)
    env = make(cfg.task.name, args.num_envs, args.device, config=cfg.task.config, seed=args.seed)
    eval_env = make(cfg.task.name, args.eval_episodes, args.device, config=cfg.task.evaluation_config)
    student = build_policy(cfg, env, args.device)
    assert isinstance(student, RecurrentActorCritic)
    distill = Distillation(student, teacher, env, DistillConfig(num_steps=args.num_steps), seed=args.seed)
    command = " ".join(sys.argv)
    run = RunDirectory.create(args.runs_root, STUDENT, cfg.seed, yaml.safe_dump(to_dict(cfg), sort_keys=False), command)
    write_task_record(run.path, task_record(cfg, env))
    print(f"run directory: {run.path}", flush=True)
    best, start, trained = -1.0, time.perf_counter(), 0.0
    while trained < args.budget:
        tick = time.perf_counter()
        metrics = distill.step()
        trained += time.perf_counter() - tick
        row: dict[str, float | int | None] = {**metrics, "wall_time": trained, "env_steps": distill.iteration}
        if distill.iteration % args.eval_interval == 0:
            result = evaluate(eval_env, student.deterministic_actor().eval(), seed=12345)
            row["eval_success_rate"] = result.success_rate
            state = {"policy": student.state_dict(), "iteration": distill.iteration}
            checkpoint.save_checkpoint(state, run.latest_checkpoint)
            if result.success_rate is not None and result.success_rate > best:
                best = result.success_rate
                checkpoint.save_checkpoint(state, run.checkpoints / "best.pt")
        run.log(row)
        shown = {k: round(v, 4) if isinstance(v, float) else v for k, v in row.items()}
        print(shown, flush=True)
    run.close()
    print(
        f"distilled {distill.iteration} iterations in {trained:.0f} s ({time.perf_counter() - start:.0f} s with "
        f"evaluations); best evaluation {best:.3f}; export with: robo-rl export {run.path}",
        flush=True,
    )


if __name__ == "__main__":
    main()
