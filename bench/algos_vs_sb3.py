"""robo_rl SAC / TD3 / PPO vs Stable-Baselines3 SAC / TD3 / PPO: env-steps and wall-clock to a return threshold.

Tasks: Pendulum (threshold -200) and the MuJoCo task InvertedPendulum-v5 from gymnasium[mujoco] (threshold 950 of
a maximum 1000). For each task, algorithm and seed, both libraries train from scratch under the same protocol:

- Same step budget (`--cap-*`), same evaluation cadence (every `eval_every` env-steps: 1000 for SAC/TD3, one
  rollout for PPO), same evaluator: the deterministic policy on 10 episodes of the *Gymnasium* env with fixed
  reset seeds, clock paused. A run reaches the threshold at the first evaluation whose mean return is >= it.
- Wall-clock is training time only (env stepping + updates), model construction and evaluations excluded, on
  both sides. Every run uses the same torch thread count (`--threads`, default 1) and runs alone.
- SB3 trains on Gymnasium's own env (`make_vec_env`). robo_rl trains on its batched `pendulum` (same dynamics,
  reward and reset as Pendulum-v1, checked in tests) and on `gym/InvertedPendulum-v5` (Gymnasium's MuJoCo env
  behind robo_rl's batched contract, stepped by Gymnasium), so the InvertedPendulum simulator is identical.
- Hyperparameters: SB3 uses rl-baselines3-zoo's tuned Pendulum-v1 values and SB3's defaults on
  InvertedPendulum-v5 (plus the zoo's usual N(0, 0.1) action noise for TD3); robo_rl uses its presets
  (`pendulum_*`) and the InvertedPendulum settings in `ROBO_OVERRIDES`. The JSON records all of them.

Per (task, algorithm): median env-steps and seconds to the threshold over the seeds (a run that misses counts
as infinite), and two ratios, SB3 / robo_rl: steps (sample efficiency; target >= 1) and seconds (target >= 3).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

import gymnasium
import numpy as np
import stable_baselines3
import torch
from machine import finite_or_none, machine_info, warm_up_torch, warn_if_busy
from stable_baselines3 import PPO, SAC, TD3
from stable_baselines3.common.base_class import BaseAlgorithm
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.logger import Logger
from stable_baselines3.common.noise import NormalActionNoise

from robo_rl.api.configs import preset
from robo_rl.build import Runner, build_runner
from robo_rl.config import apply_overrides
from robo_rl.experiment import ExperimentConfig
from robo_rl.sim import make

RESULTS = Path(__file__).parent / "results" / "algos_vs_sb3.json"
ALGOS = ("sac", "td3", "ppo")
EVAL_EPISODES = 10
EVAL_SEEDS = tuple(range(10_000, 10_000 + EVAL_EPISODES))
TARGET_STEP_RATIO = 1.0
TARGET_TIME_RATIO = 3.0
Predict = Callable[[np.ndarray], np.ndarray]


@dataclass(frozen=True)
class Task:
    gym_id: str
    robo_task: str
    threshold: float
    off_policy_cap: int
    """Env-step budget of SAC and TD3 runs (both libraries)."""
    ppo_cap: int
    """Env-step budget of PPO runs (both libraries)."""


TASKS = {
    "pendulum": Task("Pendulum-v1", "pendulum", -200.0, off_policy_cap=20_000, ppo_cap=300_000),
    "inverted_pendulum": Task(
        "InvertedPendulum-v5", "gym/InvertedPendulum-v5", 950.0, off_policy_cap=30_000, ppo_cap=300_000
    ),
}

ROBO_OVERRIDES: dict[str, dict[str, list[str]]] = {
    "pendulum": {"sac": [], "td3": [], "ppo": []},
    "inverted_pendulum": {
        "sac": ["off_policy.batch_size=256", "off_policy.learning_starts=100", "sac.layer_norm=true"],
        "td3": [
            "off_policy.batch_size=256",
            "off_policy.learning_starts=1000",
            "td3.layer_norm=true",
            "td3.actor_hidden=[256,256]",
            "td3.critic_hidden=[256,256]",
        ],
        "ppo": ["task.num_envs=16", "ppo.num_steps=64", "ppo.gamma=0.99", "ppo.num_epochs=10"],
    },
}
"""`--set`-style overrides on the `pendulum_<algo>` preset (the task name is set from `Task.robo_task`).

Chosen in a short sweep (1-2 seeds each, bench/algos_vs_sb3.py's protocol): SAC needs LayerNorm critics on
InvertedPendulum (64-64 without it did not reach 950 in 15k steps); TD3 with 64-64 networks did not reach it in
15k steps with or without LayerNorm, 256-256 did."""

ZOO = "https://github.com/DLR-RM/rl-baselines3-zoo/blob/master/hyperparams"
SB3_SETTINGS: dict[str, dict[str, dict[str, Any]]] = {
    "pendulum": {
        "sac": {"source": f"{ZOO}/sac.yml", "n_envs": 1, "kwargs": {"learning_rate": 1e-3}},
        "td3": {
            "source": f"{ZOO}/td3.yml",
            "n_envs": 1,
            "noise_std": 0.1,
            "kwargs": {
                "gamma": 0.98,
                "buffer_size": 200_000,
                "learning_starts": 10_000,
                "gradient_steps": 1,
                "train_freq": 1,
                "learning_rate": 1e-3,
                "policy_kwargs": {"net_arch": [400, 300]},
            },
        },
        "ppo": {
            "source": f"{ZOO}/ppo.yml",
            "n_envs": 4,
            "kwargs": {
                "n_steps": 1024,
                "gae_lambda": 0.95,
                "gamma": 0.9,
                "n_epochs": 10,
                "ent_coef": 0.0,
                "learning_rate": 1e-3,
                "clip_range": 0.2,
                "use_sde": True,
                "sde_sample_freq": 4,
            },
        },
    },
    "inverted_pendulum": {
        "sac": {"source": "SB3 defaults", "n_envs": 1, "kwargs": {}},
        "td3": {"source": "SB3 defaults + zoo's N(0, 0.1) action noise", "n_envs": 1, "noise_std": 0.1, "kwargs": {}},
        "ppo": {"source": "SB3 defaults", "n_envs": 1, "kwargs": {}},
    },
}
SB3_CLASSES: dict[str, type[BaseAlgorithm]] = {"sac": SAC, "td3": TD3, "ppo": PPO}


@dataclass(frozen=True)
class RunRow:
    task: str
    algo: str
    library: str
    seed: int
    reached: bool
    env_steps: int
    """Env-steps at the first evaluation at or above the threshold (or at the cap)."""
    train_s: float
    """Training seconds at that moment (evaluations excluded)."""
    eval_return: float
    """Mean return of the last evaluation."""


class Evaluator:
    """Deterministic mean return over fixed-seed episodes of a Gymnasium env, shared by both libraries."""

    def __init__(self, gym_id: str) -> None:
        self.env = gymnasium.make(gym_id)

    def mean_return(self, predict: Predict) -> float:
        returns = []
        for seed in EVAL_SEEDS:
            obs, _ = self.env.reset(seed=seed)
            total, done = 0.0, False
            while not done:
                obs, reward, terminated, truncated, _ = self.env.step(predict(obs))
                total += float(reward)
                done = terminated or truncated
            returns.append(total)
        return sum(returns) / len(returns)


def robo_config(task_name: str, algo: str, seed: int) -> ExperimentConfig:
    task = TASKS[task_name]
    cfg = preset(f"pendulum_{algo}")
    cfg = apply_overrides(cfg, [f"task.name={task.robo_task}", f"seed={seed}", *ROBO_OVERRIDES[task_name][algo]])
    return apply_overrides(
        cfg, [f"{cfg.loop_section}.loop.target_return=null", f"{cfg.loop_section}.loop.eval_interval=0"]
    )


def robo_chunk(cfg: ExperimentConfig) -> int:
    """Iterations between evaluations: 1000 env-steps for SAC/TD3, one rollout for PPO."""
    if cfg.algo == "ppo":
        return 1
    return max(1, 1000 // cfg.task.num_envs)


def robo_predict(runner: Runner) -> Predict:
    if isinstance(getattr(runner, "policy", None), torch.nn.Module):
        actor = runner.policy.deterministic_actor().eval()  # type: ignore[union-attr]
    else:
        actor = runner.algorithm.actor.deterministic_actor().eval()  # type: ignore[union-attr]

    def predict(obs: np.ndarray) -> np.ndarray:
        with torch.no_grad():
            return actor(torch.as_tensor(obs, dtype=torch.float32).unsqueeze(0))[0].numpy()

    return predict


def run_robo(task_name: str, algo: str, seed: int) -> RunRow:
    task = TASKS[task_name]
    cfg = robo_config(task_name, algo, seed)
    cap = task.ppo_cap if algo == "ppo" else task.off_policy_cap
    runner = build_runner(cfg, make, evaluate=False)
    evaluator = Evaluator(task.gym_id)
    chunk, score = robo_chunk(cfg), -math.inf
    while runner.env_steps < cap:
        runner.cfg = replace(runner.cfg, loop=replace(runner.cfg.loop, max_iterations=runner.iteration + chunk))
        runner.learn()
        score = evaluator.mean_return(robo_predict(runner))
        if score >= task.threshold:
            break
    return RunRow(task_name, algo, "robo_rl", seed, score >= task.threshold, runner.env_steps, runner.wall_time, score)


def build_sb3(task_name: str, algo: str, seed: int) -> BaseAlgorithm:
    settings = SB3_SETTINGS[task_name][algo]
    env = make_vec_env(TASKS[task_name].gym_id, n_envs=settings["n_envs"], seed=seed)
    kwargs = dict(settings["kwargs"])
    if "noise_std" in settings:
        dim = env.action_space.shape[0]
        kwargs["action_noise"] = NormalActionNoise(np.zeros(dim), settings["noise_std"] * np.ones(dim))
    model = SB3_CLASSES[algo]("MlpPolicy", env, seed=seed, device="cpu", verbose=0, **kwargs)
    model.set_logger(Logger(folder=None, output_formats=[]))  # no /tmp/SB3-* folder per run
    return model


def sb3_chunk(model: BaseAlgorithm) -> int:
    if isinstance(model, PPO):
        return model.n_steps * model.n_envs
    return 1000


def run_sb3(task_name: str, algo: str, seed: int) -> RunRow:
    task = TASKS[task_name]
    cap = task.ppo_cap if algo == "ppo" else task.off_policy_cap
    model = build_sb3(task_name, algo, seed)
    evaluator = Evaluator(task.gym_id)
    chunk, train_s, score = sb3_chunk(model), 0.0, -math.inf

    def predict(obs: np.ndarray) -> np.ndarray:
        return model.predict(obs, deterministic=True)[0]

    while model.num_timesteps < cap:
        start = time.perf_counter()
        model.learn(chunk, reset_num_timesteps=False)
        train_s += time.perf_counter() - start
        score = evaluator.mean_return(predict)
        if score >= task.threshold:
            break
    return RunRow(task_name, algo, "sb3", seed, score >= task.threshold, model.num_timesteps, train_s, score)


def median_or_inf(rows: list[RunRow], field: str) -> float:
    return statistics.median(getattr(r, field) if r.reached else math.inf for r in rows)


def summarize(rows: list[RunRow], task: str, algo: str) -> dict[str, Any]:
    medians: dict[str, Any] = {}
    for library in ("robo_rl", "sb3"):
        mine = [r for r in rows if r.task == task and r.algo == algo and r.library == library]
        medians[library] = {
            "reached": f"{sum(r.reached for r in mine)}/{len(mine)}",
            "median_env_steps": finite_or_none(median_or_inf(mine, "env_steps")),
            "median_train_s": finite_or_none(median_or_inf(mine, "train_s")),
        }
    robo, sb3 = medians["robo_rl"], medians["sb3"]
    return {
        **medians,
        "step_ratio_sb3_over_robo": ratio(sb3["median_env_steps"], robo["median_env_steps"]),
        "time_ratio_sb3_over_robo": ratio(sb3["median_train_s"], robo["median_train_s"]),
    }


def ratio(theirs: float | None, ours: float | None) -> float | None:
    """theirs / ours; infinite when only ours reached the threshold, None when ours did not."""
    if ours is None:
        return None
    return math.inf if theirs is None else theirs / ours


def print_row(row: RunRow) -> None:
    status = "reached" if row.reached else "NOT reached"
    print(
        f"{row.task:<18}{row.algo:<5}{row.library:<9}{row.seed:>4}{status:>13}{row.env_steps:>10,}"
        f"{row.train_s:>9.1f}{row.eval_return:>9.1f}",
        flush=True,
    )


def fmt(value: float | None, spec: str) -> str:
    return "—" if value is None else format(value, spec)


def print_summary(summary: dict[str, dict[str, Any]]) -> None:
    header = f"{'robo steps':>11}{'sb3 steps':>11}{'step ×':>8}{'robo s':>9}{'sb3 s':>9}{'time ×':>8}"
    print(f"\n{'task / algo':<24}{header}")
    for key, s in summary.items():
        robo, sb3 = s["robo_rl"], s["sb3"]
        print(
            f"{key:<24}{fmt(robo['median_env_steps'], ',.0f'):>11}{fmt(sb3['median_env_steps'], ',.0f'):>11}"
            f"{fmt(s['step_ratio_sb3_over_robo'], '.2f'):>8}{fmt(robo['median_train_s'], '.1f'):>9}"
            f"{fmt(sb3['median_train_s'], '.1f'):>9}{fmt(s['time_ratio_sb3_over_robo'], '.1f'):>8}"
        )


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", type=int, default=3, help="seeds per method, 0..N-1 (default 3)")
    parser.add_argument("--task", action="append", choices=sorted(TASKS), help="only this task (repeatable)")
    parser.add_argument("--algo", action="append", choices=ALGOS, help="only this algorithm (repeatable)")
    parser.add_argument("--library", action="append", choices=("robo_rl", "sb3"), help="only this library")
    parser.add_argument("--threads", type=int, default=1, help="torch threads for every run (default 1)")
    parser.add_argument("--output", type=Path, default=RESULTS, help=f"JSON results (default {RESULTS})")
    args = parser.parse_args()
    if args.seeds < 1:
        parser.error("--seeds must be at least 1")
    return args


def hyperparameters(task: str, algo: str) -> dict[str, Any]:
    sb3 = SB3_SETTINGS[task][algo]
    return {
        "robo_rl": {"preset": f"pendulum_{algo}", "overrides": ROBO_OVERRIDES[task][algo]},
        "robo_rl_config": asdict(robo_config(task, algo, 0)),
        "sb3": {**sb3, "kwargs": {k: repr(v) if isinstance(v, dict) else v for k, v in sb3["kwargs"].items()}},
    }


def main() -> None:
    args = parse_args()
    torch.set_num_threads(args.threads)
    load_at_start = warn_if_busy()
    warm_up_torch()
    tasks = args.task or list(TASKS)
    algos = args.algo or list(ALGOS)
    libraries = args.library or ["robo_rl", "sb3"]
    print(f"{'task':<18}{'algo':<5}{'library':<9}{'seed':>4}{'status':>13}{'steps':>10}{'train s':>9}{'eval':>9}")
    rows: list[RunRow] = []
    for task in tasks:
        for algo in algos:
            for library in libraries:
                run = run_robo if library == "robo_rl" else run_sb3
                for seed in range(args.seeds):
                    rows.append(run(task, algo, seed))
                    print_row(rows[-1])
    summary = {f"{task}/{algo}": summarize(rows, task, algo) for task in tasks for algo in algos}
    print_summary(summary)
    report = {
        "command": " ".join([sys.executable, *sys.argv]),
        "machine": {**machine_info(), "stable_baselines3": stable_baselines3.__version__},
        "load_average_1min": {"start": load_at_start, "end": os.getloadavg()[0]},
        "protocol": {"eval_episodes": EVAL_EPISODES, "eval_seeds": list(EVAL_SEEDS), "eval_time": "excluded"},
        "tasks": {name: asdict(TASKS[name]) for name in tasks},
        "hyperparameters": {f"{t}/{a}": hyperparameters(t, a) for t in tasks for a in algos},
        "runs": [asdict(r) for r in rows],
        "summary": summary,
        "targets": {"step_ratio": TARGET_STEP_RATIO, "time_ratio": TARGET_TIME_RATIO},
    }
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(report, indent=2, default=str) + "\n")
    print(f"wrote {args.output}")


if __name__ == "__main__":
    main()
