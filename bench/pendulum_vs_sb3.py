"""Wall-clock to a mean return of -200 on Pendulum: robo_rl PPO vs Stable-Baselines3 SAC and PPO.

Every method trains from scratch once per seed, one run at a time (never two at once), on the same machine
with the same torch thread count, and the clock measures training until the policy first reaches a
deterministic evaluation mean return >= -200 (Pendulum-v1's reward; its dynamics, reward and reset are the
same as robo_rl's batched `pendulum`). The table and `bench/results/pendulum_vs_sb3.json` give per-run rows
and, per method, median wall-clock, median env-steps and successes; ratio = median of the fastest SB3 method
/ median of robo_rl (target: ≥ 10).

Contenders:
- robo_rl: the `preset("pendulum_ppo")` preset (batched torch envs on the CPU; the JSON records its whole config).
  Its time is the runner's `TrainResult.wall_time`, which INCLUDES its periodic 100-episode evaluations.
- SB3 SAC and SB3 PPO with rl-baselines3-zoo's tuned Pendulum-v1 hyperparameters (`SAC_ZOO`, `PPO_ZOO`;
  the JSON records them and the effective values SB3 used), on `make_vec_env("Pendulum-v1")`, device cpu.
  A callback evaluates the deterministic policy on 10 episodes of a separate Pendulum-v1 env (fixed reset
  seeds) every `eval_freq` env-steps (SAC 1000, PPO one 4096-step rollout), at the start of a rollout, i.e.
  right after the previous update, and stops training once the mean reaches the target. Its clock starts
  when training starts and stops when the successful evaluation begins; time spent evaluating is EXCLUDED.

Fairness: where the two sides differ, the choice favours SB3. SB3's evaluation time is not counted
(robo_rl's is); SB3 passes on a 10-episode mean (robo_rl needs a 100-episode one, harder to pass on a lucky
draw); robo_rl only checks every `runner.loop.eval_interval` iterations, so it can train a few iterations past its
first passing policy. Model construction is untimed on both sides. Every method runs with the same
torch thread count (`--threads`, default 2). A run that never reaches the target is recorded as not
reached, with the time and steps at its cap; medians treat it as infinite, so a method that misses in
most runs has no median and no ratio is computed from it.
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
import stable_baselines3
import torch
from machine import finite_or_none, machine_info, warm_up_torch, warn_if_busy
from stable_baselines3 import PPO, SAC
from stable_baselines3.common.base_class import BaseAlgorithm
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.logger import Logger

from robo_rl.api.configs import preset
from robo_rl.build import build_runner
from robo_rl.experiment import with_seed
from robo_rl.sim import make

RESULTS = Path(__file__).parent / "results" / "pendulum_vs_sb3.json"
TARGET_RETURN = -200.0
TARGET_RATIO = 10.0
GYM_ID = "Pendulum-v1"
EVAL_EPISODES = 10
EVAL_SEEDS = tuple(range(10_000, 10_000 + EVAL_EPISODES))
METHODS = ("robo", "sb3_sac", "sb3_ppo")
LABELS = {"robo": "robo_rl PPO", "sb3_sac": "SB3 SAC (zoo)", "sb3_ppo": "SB3 PPO (zoo)"}

ZOO = "https://github.com/DLR-RM/rl-baselines3-zoo/blob"
ZOO_SOURCES = {
    "sb3_sac": f"{ZOO}/c94924e5b31bce36920f29d3eb18b975231bdec4/hyperparams/sac.yml (Pendulum-v1)",
    "sb3_ppo": f"{ZOO}/208b6fdf3a9aa24de44b2e068c6e5f6a07d97fcc/hyperparams/ppo.yml (Pendulum-v1)",
}
SAC_ZOO: dict[str, Any] = {"policy": "MlpPolicy", "learning_rate": 1e-3}
"""Zoo's n_timesteps 2e4 is replaced by our step cap; every other field is SB3's default."""
PPO_ZOO: dict[str, Any] = {
    "policy": "MlpPolicy",
    "n_steps": 1024,
    "gae_lambda": 0.95,
    "gamma": 0.9,
    "n_epochs": 10,
    "ent_coef": 0.0,
    "learning_rate": 1e-3,
    "clip_range": 0.2,
    "use_sde": True,
    "sde_sample_freq": 4,
}
"""Zoo's n_timesteps 1e5 is replaced by our step cap; every other field is SB3's default."""
PPO_ZOO_ENVS = 4
"""Zoo's n_envs for PPO on Pendulum-v1 (a DummyVecEnv); SAC uses the zoo default of 1."""


@dataclass(frozen=True)
class SB3Spec:
    """How to train one SB3 contender."""

    algorithm: type[BaseAlgorithm]
    kwargs: dict[str, Any]
    """Constructor arguments other than env, seed and device."""
    n_envs: int
    eval_freq: int
    """Env-steps (summed over envs) between evaluations."""
    effective: tuple[str, ...]
    """Model attributes recorded in the JSON, to show the values SB3 actually used."""


SAC_RECORDED = ("learning_rate", "buffer_size", "learning_starts", "batch_size", "tau", "gamma", "train_freq")
PPO_RECORDED = ("learning_rate", "n_steps", "batch_size", "n_epochs", "gamma", "gae_lambda", "clip_range", "vf_coef")
SB3_SPECS = {
    "sb3_sac": SB3Spec(SAC, SAC_ZOO, n_envs=1, eval_freq=1000, effective=(*SAC_RECORDED, "gradient_steps", "ent_coef")),
    "sb3_ppo": SB3Spec(
        PPO,
        PPO_ZOO,
        n_envs=PPO_ZOO_ENVS,
        eval_freq=PPO_ZOO_ENVS * PPO_ZOO["n_steps"],
        effective=(*PPO_RECORDED, "ent_coef", "max_grad_norm", "use_sde", "sde_sample_freq"),
    ),
}


@dataclass(frozen=True)
class RunRow:
    """One training run of one method with one seed."""

    method: str
    seed: int
    reached: bool
    """Whether an evaluation reached the target before the step cap."""
    wall_time_s: float
    """Training seconds until the target was reached, or until the cap when it was not."""
    env_steps: int
    """Env-steps (summed over envs) at the same moment."""
    eval_return: float | None
    """Mean return of the last evaluation."""
    excluded_eval_s: float
    """Evaluation seconds left out of `wall_time_s` (SB3 only; robo_rl's are included)."""


def run_robo(seed: int, max_iterations: int) -> RunRow:
    """Train the `preset("pendulum_ppo")` preset; time is the runner's own, evaluations included."""
    cfg = with_seed(preset("pendulum_ppo"), seed)
    cfg = replace(
        cfg,
        runner=replace(
            cfg.runner, loop=replace(cfg.runner.loop, max_iterations=max_iterations, target_return=TARGET_RETURN)
        ),
    )
    result = build_runner(cfg, make).learn()
    final = None if result.final_eval is None else result.final_eval.mean_return
    return RunRow("robo", seed, result.reached_target, result.wall_time, result.env_steps, final, 0.0)


def mean_eval_return(model: BaseAlgorithm, env: gymnasium.Env, seeds: tuple[int, ...]) -> float:
    """Mean undiscounted return of the deterministic policy, one episode per reset seed."""
    returns = []
    for seed in seeds:
        obs, _ = env.reset(seed=seed)
        total, done = 0.0, False
        while not done:
            action, _ = model.predict(obs, deterministic=True)
            obs, reward, terminated, truncated, _ = env.step(action)
            total += float(reward)
            done = terminated or truncated
        returns.append(total)
    return sum(returns) / len(returns)


class StopAtTarget(BaseCallback):
    """Evaluates every `eval_freq` env-steps with the clock paused; stops training at the target return.

    Evaluation happens at a rollout's start, i.e. right after the previous update, so the policy evaluated
    is the newest one; `_on_step` then ends training before the next env step.
    """

    def __init__(self, eval_freq: int) -> None:
        super().__init__()
        self.eval_freq = eval_freq
        self.eval_env = gymnasium.make(GYM_ID)
        self.next_eval = eval_freq
        self.start = 0.0
        self.excluded = 0.0
        self.reached = False
        self.train_time = 0.0
        self.steps = 0
        self.last_return: float | None = None

    def _on_training_start(self) -> None:
        self.start = time.perf_counter()

    def _on_rollout_start(self) -> None:
        if not self.reached and self.num_timesteps >= self.next_eval:
            self._evaluate()

    def _on_step(self) -> bool:
        return not self.reached

    def _on_training_end(self) -> None:
        # The cap can fall between evaluations: judge the final policy too.
        if not self.reached and self.steps != self.num_timesteps:
            self._evaluate()
        self.eval_env.close()

    def _evaluate(self) -> None:
        begin = time.perf_counter()
        self.train_time = begin - self.start - self.excluded
        self.steps = self.num_timesteps
        self.last_return = mean_eval_return(self.model, self.eval_env, EVAL_SEEDS)
        self.reached = self.last_return >= TARGET_RETURN
        self.next_eval = self.num_timesteps + self.eval_freq
        self.excluded += time.perf_counter() - begin


def build_sb3(spec: SB3Spec, seed: int) -> BaseAlgorithm:
    env = make_vec_env(GYM_ID, n_envs=spec.n_envs, seed=seed)
    model = spec.algorithm(env=env, seed=seed, device="cpu", verbose=0, **spec.kwargs)
    model.set_logger(Logger(folder=None, output_formats=[]))  # no /tmp/SB3-* folder per run
    return model


def run_sb3(method: str, seed: int, max_steps: int) -> RunRow:
    """Train one SB3 contender up to `max_steps` env-steps, stopping at the target."""
    spec = SB3_SPECS[method]
    model = build_sb3(spec, seed)
    callback = StopAtTarget(spec.eval_freq)
    model.learn(total_timesteps=max_steps, callback=callback)
    return RunRow(
        method, seed, callback.reached, callback.train_time, callback.steps, callback.last_return, callback.excluded
    )


def effective_hyperparameters(spec: SB3Spec) -> dict[str, Any]:
    """The listed attributes of a freshly built model, i.e. zoo values merged with SB3's defaults."""
    model = build_sb3(spec, seed=0)
    values = {name: getattr(model, name) for name in spec.effective}
    return {
        name: value if isinstance(value, (bool, int, float, str)) else repr(value) for name, value in values.items()
    }


def summarize(rows: list[RunRow]) -> dict[str, Any]:
    """Median time and steps to the target (a run that missed it counts as infinite) and successes."""
    times = [r.wall_time_s if r.reached else math.inf for r in rows]
    steps = [r.env_steps if r.reached else math.inf for r in rows]
    return {
        "runs": len(rows),
        "reached": sum(r.reached for r in rows),
        "median_wall_time_s": finite_or_none(statistics.median(times)),
        "median_env_steps": finite_or_none(statistics.median(steps)),
    }


def speed_ratio(summary: dict[str, dict[str, Any]]) -> tuple[str | None, float | None]:
    """(fastest SB3 method, its median time / robo_rl's); None where a median is missing."""
    sb3 = {m: s["median_wall_time_s"] for m, s in summary.items() if m != "robo" and s["median_wall_time_s"]}
    robo = summary.get("robo", {}).get("median_wall_time_s")
    if not sb3:
        return None, None
    best = min(sb3, key=sb3.__getitem__)
    return best, (sb3[best] / robo if robo else None)


def format_optional(value: float | None, spec: str) -> str:
    return "not reached" if value is None else format(value, spec)


def print_row(row: RunRow) -> None:
    status = "reached" if row.reached else "NOT reached"
    ret = format_optional(row.eval_return, ".1f")
    print(
        f"{LABELS[row.method]:<16}{row.seed:>5}{status:>13}{row.wall_time_s:>11.1f}{row.env_steps:>12,}{ret:>10}",
        flush=True,
    )


def print_summary(summary: dict[str, dict[str, Any]], best: str | None, ratio: float | None) -> None:
    print(f"\n{'method':<16}{'reached':>9}{'median s':>14}{'median steps':>16}")
    for method, s in summary.items():
        time_s = format_optional(s["median_wall_time_s"], ".1f")
        steps = format_optional(s["median_env_steps"], ",.0f")
        print(f"{LABELS[method]:<16}{s['reached']:>5}/{s['runs']:<3}{time_s:>14}{steps:>16}")
    if ratio is None:
        print("\nratio: n/a (a median is missing: some method reached the target in too few runs)")
    else:
        verdict = "met" if ratio >= TARGET_RATIO else "NOT met"
        print(f"\nratio {LABELS[best]} / robo_rl PPO = {ratio:.1f}x (target ≥ {TARGET_RATIO:.0f}x: {verdict})")


def hyperparameters(methods: list[str], robo_max_iterations: int) -> dict[str, Any]:
    used: dict[str, Any] = {}
    if "robo" in methods:
        cfg = preset("pendulum_ppo")
        used["robo"] = {"preset": "pendulum_ppo", "config": asdict(cfg), "max_iterations": robo_max_iterations}
    for method in methods:
        if method in SB3_SPECS:
            spec = SB3_SPECS[method]
            used[method] = {
                "source": ZOO_SOURCES[method],
                "zoo": spec.kwargs,
                "n_envs": spec.n_envs,
                "eval_freq": spec.eval_freq,
                "effective": effective_hyperparameters(spec),
            }
    return used


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", type=int, default=3, help="seeds per method, 0..N-1 (default 3; use ≥ 3)")
    parser.add_argument(
        "--sb3-max-steps-sac", type=int, default=50_000, help="env-step cap of each SB3 SAC run (default 50000)"
    )
    parser.add_argument(
        "--sb3-max-steps-ppo", type=int, default=300_000, help="env-step cap of each SB3 PPO run (default 300000)"
    )
    parser.add_argument(
        "--robo-max-iterations",
        type=int,
        default=preset("pendulum_ppo").runner.loop.max_iterations,
        help="iteration cap of each robo_rl run (default: the preset's)",
    )
    parser.add_argument(
        "--only",
        action="append",
        choices=METHODS,
        help="run only this method; repeat for several (default: all three)",
    )
    parser.add_argument("--threads", type=int, default=2, help="torch threads for every method (default 2)")
    parser.add_argument("--output", type=Path, default=RESULTS, help=f"JSON results path (default {RESULTS})")
    args = parser.parse_args()
    if args.seeds < 1:
        parser.error("--seeds must be at least 1")
    return args


def runner_for(method: str, args: argparse.Namespace) -> Callable[[int], RunRow]:
    if method == "robo":
        return lambda seed: run_robo(seed, args.robo_max_iterations)
    cap = args.sb3_max_steps_sac if method == "sb3_sac" else args.sb3_max_steps_ppo
    return lambda seed: run_sb3(method, seed, cap)


def main() -> None:
    args = parse_args()
    methods = [m for m in METHODS if args.only is None or m in args.only]
    torch.set_num_threads(args.threads)
    load_at_start = warn_if_busy()
    warm_up_torch()

    print(f"{'method':<16}{'seed':>5}{'status':>13}{'train s':>11}{'env-steps':>12}{'eval ret':>10}")
    rows: list[RunRow] = []
    for method in methods:
        run = runner_for(method, args)
        for seed in range(args.seeds):
            rows.append(run(seed))
            print_row(rows[-1])

    summary = {m: summarize([r for r in rows if r.method == m]) for m in methods}
    best, ratio = speed_ratio(summary)
    print_summary(summary, best, ratio)

    report = {
        "command": " ".join([sys.executable, *sys.argv]),
        "machine": {**machine_info(), "stable_baselines3": stable_baselines3.__version__},
        "load_average_1min": {"start": load_at_start, "end": os.getloadavg()[0]},
        "target_return": TARGET_RETURN,
        "sb3_eval": {"episodes": EVAL_EPISODES, "seeds": list(EVAL_SEEDS), "eval_time": "excluded"},
        "robo_eval": {"episodes": preset("pendulum_ppo").runner.loop.eval_episodes, "eval_time": "included"},
        "hyperparameters": hyperparameters(methods, args.robo_max_iterations),
        "runs": [asdict(r) for r in rows],
        "summary": summary,
        "fastest_sb3": best,
        "ratio_fastest_sb3_over_robo": ratio,
        "target_ratio": TARGET_RATIO,
    }
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(report, indent=2) + "\n")
    print(f"wrote {args.output}")


if __name__ == "__main__":
    main()
