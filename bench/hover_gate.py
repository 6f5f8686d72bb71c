"""Wall-clock from process start to the quadrotor hover gate, per algorithm, median over seeds.

The hover gate (issue 4): >= 95 % of 1000 evaluation episodes of 5 s from random initial states (position
+-0.5 m, attitude +-30 deg, velocity +-1 m/s, body rates +-2 rad/s) end without a crash and with a mean position
error below 0.10 m over the last second. Target: <= 10 s from process start on a 2-core CPU.

Every run is its own Python process (so "from process start" includes interpreter start-up, imports, building
the envs and networks, training and the gate evaluations), started one at a time with the same torch thread
count. robo_rl runs train the presets `quadrotor_hover_<algo>` exactly as `robo-rl train` would. The
Stable-Baselines3 side trains SB3 PPO on the same batched env through robo_rl's Gymnasium vector adapter
(`GymnasiumVectorEnv`, bridged to SB3's VecEnv in `sb3_vec_env.py`) with the robo_rl PPO preset's
hyperparameters where SB3 has them; its gate check is the same 1000-episode evaluation (robo_rl's `evaluate`
on the batched env, SB3's deterministic policy), run whenever at least half of the training episodes since the
last check passed the gate, as robo_rl's preset does. Runs that miss the gate within `--budget` seconds count
as infinite in the median (the JSON keeps how far they got).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from machine import finite_or_none, machine_info, warn_if_busy

from robo_rl.api.threads import choose_threads, prefer_passive_waiting, usable_cpus

RESULTS = Path(__file__).parent / "results" / "hover_gate.json"
ROBO_ALGOS = ("ppo", "sac", "td3")
TARGET_SECONDS = 10.0
GATE = 0.95
GATE_EPISODES = 1000
GATE_SEED_OFFSET = 1_000_003


def worker_robo(algo: str, seed: int, budget: float) -> dict[str, Any]:
    """Train preset quadrotor_hover_<algo> until the gate (or `budget` s of training); report timings."""
    from robo_rl.api.configs import preset
    from robo_rl.api.process_time import seconds_since_process_start
    from robo_rl.build import build_runner
    from robo_rl.config import apply_overrides
    from robo_rl.sim import make

    cfg = apply_overrides(preset(f"quadrotor_hover_{algo}"), [f"seed={seed}"])
    runner = build_runner(cfg, make)
    last_rate: list[float | None] = [None]

    def stop_at_budget(metrics: dict[str, Any]) -> None:
        if metrics.get("eval_success_rate") is not None:
            last_rate[0] = metrics["eval_success_rate"]
        if metrics["wall_time"] > budget:
            raise TimeoutError

    try:
        result = runner.learn(stop_at_budget)
        reached, steps, train_s = result.reached_target, result.env_steps, result.wall_time
    except TimeoutError:
        reached, steps, train_s = False, runner.env_steps, runner.wall_time
    return {
        "reached": reached,
        "seconds_from_process_start": seconds_since_process_start(),
        "training_seconds": train_s,
        "env_steps": steps,
        "last_eval_success_rate": last_rate[0],
    }


def worker_sb3(seed: int, budget: float) -> dict[str, Any]:
    """SB3 PPO with the robo_rl hover PPO preset's settings, through the Gymnasium vector adapter."""
    import torch
    from sb3_vec_env import GymnasiumVectorToSB3
    from stable_baselines3 import PPO
    from stable_baselines3.common.callbacks import BaseCallback
    from stable_baselines3.common.logger import Logger

    from robo_rl.api.configs import preset
    from robo_rl.api.process_time import seconds_since_process_start
    from robo_rl.runners.evaluate import evaluate
    from robo_rl.sim import make
    from robo_rl.sim.gymnasium_adapter import GymnasiumVectorEnv

    cfg = preset("quadrotor_hover_ppo")
    ppo = cfg.ppo
    env = GymnasiumVectorToSB3(GymnasiumVectorEnv(make(cfg.task.name, cfg.task.num_envs, seed=seed)))
    env.seed(seed)
    eval_env = make(cfg.task.name, GATE_EPISODES, config=cfg.task.evaluation_config)  # robo_rl's own evaluator
    batch = cfg.task.num_envs * ppo.num_steps
    model = PPO(
        "MlpPolicy",
        env,
        n_steps=ppo.num_steps,
        batch_size=batch // ppo.num_minibatches,
        n_epochs=ppo.num_epochs,
        gamma=ppo.gamma,
        gae_lambda=ppo.lam,
        clip_range=ppo.clip_param,
        ent_coef=ppo.entropy_coef,
        vf_coef=ppo.value_loss_coef,
        max_grad_norm=ppo.max_grad_norm,
        learning_rate=3e-4,
        target_kl=None,
        policy_kwargs={
            "net_arch": {"pi": list(cfg.policy.actor_hidden), "vf": list(cfg.policy.critic_hidden)},
            "activation_fn": torch.nn.ELU,
            "log_std_init": cfg.policy.init_log_std,
        },
        seed=seed,
        device="cpu",
        verbose=0,
    )
    model.set_logger(Logger(folder=None, output_formats=[]))  # no /tmp/SB3-* folder per run

    def actor(obs: torch.Tensor) -> torch.Tensor:
        action, _ = model.predict(obs.numpy(), deterministic=True)
        return torch.as_tensor(action).clamp(-1.0, 1.0)

    class Gate(BaseCallback):
        def __init__(self) -> None:
            super().__init__()
            self.start = time.perf_counter()
            self.reached = False
            self.successes = self.episodes = 0
            self.last_rate: float | None = None

        def _on_step(self) -> bool:
            for info, done in zip(self.locals["infos"], self.locals["dones"], strict=True):
                if done:
                    self.episodes += 1
                    self.successes += bool(info.get("is_success", False))
            return time.perf_counter() - self.start < budget

        def _on_rollout_end(self) -> None:
            if self.episodes and self.successes / self.episodes >= 0.5:
                self.last_rate = evaluate(eval_env, actor, seed=seed + GATE_SEED_OFFSET).success_rate
                self.reached = self.last_rate is not None and self.last_rate >= GATE
            self.successes = self.episodes = 0

        def _on_rollout_start(self) -> None:
            if self.reached:
                raise StopIteration

    gate = Gate()
    try:
        model.learn(total_timesteps=10**9, callback=gate)
    except StopIteration:
        pass
    return {
        "reached": gate.reached,
        "seconds_from_process_start": seconds_since_process_start(),
        "training_seconds": time.perf_counter() - gate.start,
        "env_steps": model.num_timesteps,
        "last_eval_success_rate": gate.last_rate,
    }


def run_worker(kind: str, seed: int, threads: int, budget: float) -> dict[str, Any]:
    command = [sys.executable, __file__, "--worker", kind, "--seed", str(seed), "--budget", str(budget)]
    env = {**os.environ, "OMP_NUM_THREADS": str(threads), "MKL_NUM_THREADS": str(threads)}
    prefer_passive_waiting(env)  # as robo-rl does: idle OpenMP threads sleep (robo_rl.api.threads)
    done = subprocess.run(command, capture_output=True, text=True, env=env, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"{kind} seed {seed} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def summarize(rows: list[dict[str, Any]]) -> dict[str, Any]:
    seconds = [r["seconds_from_process_start"] if r["reached"] else math.inf for r in rows]
    median = statistics.median(seconds)
    return {
        "median_seconds_from_process_start": finite_or_none(median),
        "reached": sum(r["reached"] for r in rows),
        "runs": len(rows),
        "median_env_steps": statistics.median(r["env_steps"] for r in rows),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--algos", nargs="+", default=[*ROBO_ALGOS, "sb3_ppo"], help="what to run")
    parser.add_argument("--seeds", type=int, default=5, help="seeds per algorithm (0 .. N-1)")
    default_threads = choose_threads(None, usable_cpus())
    help_threads = f"torch threads per run (default: robo-rl's choice, {default_threads} here)"
    parser.add_argument("--threads", type=int, default=default_threads, help=help_threads)
    parser.add_argument("--budget", type=float, default=120.0, help="training seconds before a run gives up")
    parser.add_argument("--output", type=Path, default=RESULTS, help="JSON results path")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--seed", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker is not None:
        if args.worker == "sb3_ppo":
            row = worker_sb3(args.seed, args.budget)
        else:
            row = worker_robo(args.worker, args.seed, args.budget)
        print(json.dumps(row))
        return
    warn_if_busy()
    results: dict[str, Any] = {"runs": {}, "summary": {}}
    for kind in args.algos:
        rows = []
        for seed in range(args.seeds):
            row = {"seed": seed, **run_worker(kind, seed, args.threads, args.budget)}
            rows.append(row)
            status = "gate" if row["reached"] else "MISSED"
            print(
                f"{kind:<8} seed {seed}: {status} {row['seconds_from_process_start']:6.1f} s from process start, "
                f"{row['training_seconds']:6.1f} s training, {row['env_steps']:>10,} env steps",
                flush=True,
            )
        results["runs"][kind] = rows
        results["summary"][kind] = summarize(rows)
        print(f"{kind:<8} {results['summary'][kind]}", flush=True)
    ours = results["summary"].get("ppo", {}).get("median_seconds_from_process_start")
    theirs = results["summary"].get("sb3_ppo", {}).get("median_seconds_from_process_start")
    results["sb3_ppo_over_ppo_time_ratio"] = theirs / ours if ours and theirs else None
    results["target_seconds"] = TARGET_SECONDS
    results["settings"] = {"threads": args.threads, "budget": args.budget, "seeds": args.seeds}
    results["machine"] = machine_info()
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(results, indent=2))
    print(f"wrote {args.output}")


if __name__ == "__main__":
    main()
