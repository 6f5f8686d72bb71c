"""Wall-clock to the quadrotor hover gate, side by side: robo_rl's presets, the preset before issue 46, SB3 PPO and
RLtools' Learning to Fly TD3, one process at a time, interleaved seed by seed.

The hover gate (issue 4): >= 95 % of 1000 evaluation episodes of 5 s from random initial states (position
+-0.5 m, attitude +-30 deg, velocity +-1 m/s, body rates +-2 rad/s) end without a crash and with a mean position
error below 0.10 m over the last second, on the identified Crazyflie 2.1 (L2F's). `quadrotor_hover_ppo` trains on
past it to 97 % (its own target: the gate with margin); each row says which target its run stopped at.

What runs (`--kinds`):
- `ppo`, `sac`, `td3`: the presets `quadrotor_hover_<kind>` exactly as `robo-rl train` runs them;
- `ppo_c75d814`: the PPO preset as it was at c75d814, before issue 46 (`C75D814_PPO`: the same code with that
  preset's settings, which reproduces its runs step for step: seed 0 passes at iteration 109 there and here);
- `sb3_ppo`: Stable-Baselines3 PPO on the same batched env through robo_rl's Gymnasium vector adapter, with the
  c75d814 PPO preset's hyperparameters where SB3 has them, gated by robo_rl's 1000-episode evaluation whenever half
  of its training episodes since the last check passed;
- `rltools_td3`: RLtools' own "Learning to Fly in Seconds" TD3 (C++, 1 env, 300k steps, built from source outside
  this repository as bench/rltools_l2f.py says; `--rltools-build DIR`): its wall-clock to its own 300k steps (it
  has no success gate of ours; seed fixed inside the program, so its seeds only repeat the timing).

Every run is its own process, started one at a time with the same torch thread count, seed by seed across the
kinds (seed 0 of every kind, then seed 1, ...), so a drift of the shared VM's speed spreads over all kinds.
"Training seconds" are the runner's training wall-clock (collection, updates, evaluations); "from process start"
adds interpreter start-up, imports and building the envs. With `--fresh N` each robo_rl run also evaluates its
best policy on N fresh flights (the demo's seed 12345); with `--l2f N` it flies it N times in L2F's own Crazyflie
(`robo-rl eval --sim l2f`). Runs that miss their target within `--budget` training seconds count as infinite in the
median (the JSON keeps how far they got).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from machine import finite_or_none, machine_info, warn_if_busy

from robo_rl.api.threads import choose_threads, prefer_passive_waiting, usable_cpus

RESULTS = Path(__file__).parent / "results" / "hover_gate.json"
ROBO_KINDS = ("ppo", "ppo_c75d814", "sac", "td3")
KINDS = (*ROBO_KINDS, "sb3_ppo", "rltools_td3")
TARGET_SECONDS = 10.0
GATE = 0.95
GATE_EPISODES = 1000
GATE_SEED_OFFSET = 1_000_003
FRESH_SEED = 12345
C75D814_PPO = (
    "task.config.integral_weight=4.0",
    "task.config.crash_penalty=5.0",
    "task.config.reward_floor=null",
    "task.config.backend=torch",
    "policy.init_log_std=-1.0",
    "policy.init_mean=zero",
    "ppo.lam=0.95",
    "ppo.num_minibatches=4",
    "ppo.desired_kl=0.01",
    "runner.loop.target_success_rate=0.95",
    "runner.loop.eval_interval=1",
    "runner.loop.eval_min_train_success=0.5",
    "runner.loop.eval_precheck_episodes=0",
)
"""`quadrotor_hover_ppo` as it was at c75d814 (robo_rl/configs/quadrotor_hover_ppo.yaml there): what issue 46
changed, set back."""


def worker_robo(kind: str, seed: int, budget: float, fresh: int, l2f: int) -> dict[str, Any]:
    """Train `kind` until its target (or `budget` s of training); report timings and what the policy flies."""
    from robo_rl.api.configs import override, preset
    from robo_rl.api.process_time import seconds_since_process_start
    from robo_rl.build import build_runner
    from robo_rl.sim import make

    name = "quadrotor_hover_ppo" if kind == "ppo_c75d814" else f"quadrotor_hover_{kind}"
    overrides = [f"seed={seed}", *(C75D814_PPO if kind == "ppo_c75d814" else ())]
    cfg = override(preset(name), overrides)
    runner = build_runner(cfg, make)
    evaluations: list[dict[str, Any]] = []

    def stop_at_budget(metrics: dict[str, Any]) -> None:
        if metrics.get("eval_success_rate") is not None:
            evaluations.append(
                {key: metrics[key] for key in ("iteration", "env_steps", "wall_time", "eval_success_rate")}
            )
        if metrics["wall_time"] > budget:
            raise TimeoutError

    try:
        result = runner.learn(stop_at_budget)
        reached, steps, train_s = result.reached_target, result.env_steps, result.wall_time
    except TimeoutError:
        reached, steps, train_s = False, runner.env_steps, runner.wall_time
    since_start = seconds_since_process_start()
    gate = next((row for row in evaluations if row["eval_success_rate"] >= GATE), None)
    row: dict[str, Any] = {
        "reached": reached,
        "target": cfg.loop.target_success_rate,
        "seconds_from_process_start": since_start,
        "training_seconds": train_s,
        "iterations": runner.iteration,
        "env_steps": steps,
        "at_stop_success_rate": evaluations[-1]["eval_success_rate"] if evaluations else None,
        "first_gate_pass_training_seconds": None if gate is None else gate["wall_time"],
        "evaluations": evaluations,
    }
    if reached and (fresh or l2f):
        row |= _fly_the_policy(runner, cfg, fresh, l2f)
    return row


def _fly_the_policy(runner: Any, cfg: Any, fresh: int, l2f: int) -> dict[str, Any]:
    """The deterministic policy on `fresh` new flights of robo_rl's evaluation env, and in L2F native."""
    from robo_rl.runners.evaluate import evaluate
    from robo_rl.sim import make

    out: dict[str, Any] = {}
    actor = runner._deterministic_actor().eval()
    if fresh:
        env = make(cfg.task.name, fresh, config=cfg.task.evaluation_config)
        out["fresh_success_rate"] = evaluate(env, actor, seed=FRESH_SEED).success_rate
    if l2f:
        import contextlib
        import io

        import yaml

        from robo_rl.api.envs import task_record
        from robo_rl.api.l2f_transfer import evaluate_in_l2f
        from robo_rl.cli.main import main as robo_rl
        from robo_rl.config import to_dict
        from robo_rl.runners.run_dir import RunDirectory
        from robo_rl.task_record import write_task_record

        with tempfile.TemporaryDirectory() as folder:  # the run as robo-rl train leaves it, then robo-rl export
            saved = yaml.safe_dump(to_dict(cfg), sort_keys=False)
            run = RunDirectory.create(Path(folder), cfg.name, cfg.seed, saved, "bench/hover_gate.py")
            write_task_record(run.path, task_record(cfg, runner.env))
            runner.save(run.latest_checkpoint)
            with contextlib.redirect_stdout(io.StringIO()):  # this worker's stdout is its JSON row
                exported = robo_rl(["export", str(run.path), "--checkpoint", str(run.latest_checkpoint)])
            if exported != 0:
                raise RuntimeError(f"robo-rl export {run.path} exited {exported}")
            result, _ = evaluate_in_l2f(run.path / "policy.onnx", "native", l2f, seed=FRESH_SEED)
        out["l2f_success_rate"] = result.success_rate
        out["l2f_crash_rate"] = result.crash_rate
        out["l2f_steady_state_error_m"] = result.steady_state_error
    return out


def worker_sb3(seed: int, budget: float) -> dict[str, Any]:
    """SB3 PPO with the c75d814 hover PPO preset's settings, through the Gymnasium vector adapter."""
    import torch
    from sb3_vec_env import GymnasiumVectorToSB3
    from stable_baselines3 import PPO
    from stable_baselines3.common.callbacks import BaseCallback
    from stable_baselines3.common.logger import Logger

    from robo_rl.api.configs import override, preset
    from robo_rl.api.process_time import seconds_since_process_start
    from robo_rl.runners.evaluate import evaluate
    from robo_rl.sim import make
    from robo_rl.sim.gymnasium_adapter import GymnasiumVectorEnv

    cfg = override(preset("quadrotor_hover_ppo"), list(C75D814_PPO))
    ppo = cfg.ppo
    train_env = make(cfg.task.name, cfg.task.num_envs, seed=seed, config=cfg.task.config)
    env = GymnasiumVectorToSB3(GymnasiumVectorEnv(train_env))
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
        "target": GATE,
        "seconds_from_process_start": seconds_since_process_start(),
        "training_seconds": time.perf_counter() - gate.start,
        "env_steps": model.num_timesteps,
        "at_stop_success_rate": gate.last_rate,
    }


def run_rltools(build: Path | None) -> dict[str, Any]:
    """RLtools' Learning to Fly TD3 once (bench/rltools_l2f.py's timing of it): seconds to its 300k steps."""
    from rltools_l2f import TARGET_STEPS, run_once

    if build is None:
        raise SystemExit("--kinds rltools_td3 needs --rltools-build DIR (see bench/rltools_l2f.py)")
    exe = (build / "training_benchmark").resolve()
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    with tempfile.TemporaryDirectory(prefix="rltools_l2f_") as folder:
        result = run_once([str(exe)], Path(folder), env, echo=False)
    if result["returncode"] != 0:
        raise RuntimeError(f"{exe} failed:\n" + "\n".join(result["output_tail"]))
    return {
        "reached": result["wall_at_300k_steps_s"] is not None,
        "target": f"{TARGET_STEPS} env steps (its own budget; it reports no success rate)",
        "seconds_from_process_start": result["wall_at_300k_steps_s"],
        "training_seconds": result["program_reported_s"],
        "env_steps": TARGET_STEPS,
        "executable": str(exe),
    }


def run_worker(kind: str, seed: int, args: argparse.Namespace) -> dict[str, Any]:
    if kind == "rltools_td3":
        return run_rltools(args.rltools_build)
    command = [sys.executable, __file__, "--worker", kind, "--seed", str(seed), "--budget", str(args.budget)]
    command += ["--fresh", str(args.fresh), "--l2f", str(args.l2f)]
    env = {**os.environ, "OMP_NUM_THREADS": str(args.threads), "MKL_NUM_THREADS": str(args.threads)}
    prefer_passive_waiting(env)  # as robo-rl does: idle OpenMP threads sleep (robo_rl.api.threads)
    done = subprocess.run(command, capture_output=True, text=True, env=env, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"{kind} seed {seed} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def summarize(rows: list[dict[str, Any]]) -> dict[str, Any]:
    def median_of(key: str) -> float | None:
        return finite_or_none(statistics.median(r[key] if r["reached"] else math.inf for r in rows))

    summary: dict[str, Any] = {
        "median_seconds_from_process_start": median_of("seconds_from_process_start"),
        "median_training_seconds": median_of("training_seconds"),
        "max_training_seconds": finite_or_none(max(r["training_seconds"] if r["reached"] else math.inf for r in rows)),
        "reached": sum(r["reached"] for r in rows),
        "runs": len(rows),
        "median_env_steps": statistics.median(r["env_steps"] for r in rows),
    }
    for key in ("iterations", "at_stop_success_rate", "fresh_success_rate", "l2f_success_rate"):
        values = [r[key] for r in rows if r.get(key) is not None]
        if values:
            summary[f"median_{key}"] = statistics.median(values)
            summary[f"min_{key}"] = min(values)
    return summary


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--kinds", "--algos", nargs="+", default=["ppo", "ppo_c75d814"], choices=KINDS)
    parser.add_argument("--seeds", type=int, default=5, help="seeds per kind (0 .. N-1)")
    default_threads = choose_threads(None, usable_cpus())
    help_threads = f"torch threads per run (default: robo-rl's choice, {default_threads} here)"
    parser.add_argument("--threads", type=int, default=default_threads, help=help_threads)
    parser.add_argument("--budget", type=float, default=120.0, help="training seconds before a run gives up")
    parser.add_argument("--fresh", type=int, default=0, help="robo_rl runs: fresh flights of the policy at the end")
    parser.add_argument("--l2f", type=int, default=0, help="robo_rl runs: flights in L2F native at the end")
    parser.add_argument("--rltools-build", type=Path, help="folder of RLtools' training_benchmark (rltools_td3)")
    parser.add_argument("--output", type=Path, default=RESULTS, help="JSON results path")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--seed", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker is not None:
        if args.worker == "sb3_ppo":
            row = worker_sb3(args.seed, args.budget)
        else:
            row = worker_robo(args.worker, args.seed, args.budget, args.fresh, args.l2f)
        print(json.dumps(row))
        return
    results: dict[str, Any] = {"runs": {kind: [] for kind in args.kinds}, "summary": {}, "load_before": []}
    for seed in range(args.seeds):
        for kind in args.kinds:
            results["load_before"].append([kind, seed, warn_if_busy()])
            row = {"seed": seed, **run_worker(kind, seed, args)}
            results["runs"][kind].append(row)
            status = "target" if row["reached"] else "MISSED"
            extra = "".join(
                f", {key} {row[key]:.3f}" for key in ("at_stop_success_rate", "fresh_success_rate") if row.get(key)
            )
            print(
                f"{kind:<12} seed {seed}: {status} {row['training_seconds'] or math.nan:6.1f} s training, "
                f"{row['seconds_from_process_start'] or math.nan:6.1f} s from process start, "
                f"{row['env_steps']:>10,} env steps{extra}",
                flush=True,
            )
            save(results, args)  # after every run: an interrupted benchmark keeps the runs it made
    for kind in args.kinds:
        print(f"{kind:<12} {results['summary'][kind]}", flush=True)
    print(f"wrote {args.output}")


def save(results: dict[str, Any], args: argparse.Namespace) -> None:
    """The results so far, with each kind's summary of its finished runs, written to `args.output`."""
    results["summary"] = {kind: summarize(rows) for kind, rows in results["runs"].items() if rows}
    new, old = (results["summary"].get(k, {}).get("median_training_seconds") for k in ("ppo", "ppo_c75d814"))
    results["c75d814_over_ppo_training_time_ratio"] = old / new if old and new else None
    results["target_seconds"] = TARGET_SECONDS
    results["settings"] = {key: str(value) for key, value in vars(args).items() if key not in ("worker", "seed")}
    results.setdefault("machine", machine_info())
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
