"""Safety-Gymnasium's SafetyPointGoal1-v0 through robo_rl's adapter, and robo_rl's PPO-Lagrangian beside OmniSafe's
PPOLag on it: env-steps per second. Run with .venv-safety's Python (`make safety-venv`), one thread:

    OMP_NUM_THREADS=1 .venv-safety/bin/python bench/safety_gym.py [--out bench/results/safety_gym.json]

- raw: one `safety_gymnasium.make` env: steps/s within an episode, and the seconds of one reset (Safety-Gymnasium
  rebuilds and recompiles its MuJoCo model at every reset);
- adapter: `from_safety_gymnasium(..., 8)`, steps/s within an episode and over whole 1000-step episodes (one reset
  per env each);
- training, each library with its own defaults for the algorithm, on 4000 env steps that end 4 episodes of 1000
  steps (so both pay the same resets): robo_rl's `ppo_lag` with 4 envs x 1000 steps, one iteration (its update
  included, no evaluation: the runner's wall time), and OmniSafe's `PPOLag` (one env, one epoch of 4000 steps: the
  wall time of `Agent.learn`). OmniSafe is skipped where it is not installed.
- with `--compare STEPS`: both PPO-Lagrangians trained for the same STEPS env steps at cost limit 25, each with its
  own defaults but for the data per update (robo_rl: `--envs` envs x 1000 steps per iteration; OmniSafe: its one env,
  epochs of the same size), and the mean return and cost of the training episodes of the last iteration/epoch
  (stochastic policies, the measure OmniSafe's logs and benchmark tables give), plus robo_rl's deterministic
  evaluation on 10 episodes. OmniSafe's published PPOLag on SafetyPointGoal1-v0 after 1e7 steps (its
  benchmarks/on-policy/README.md, Table 2): return 12.96 +- 6.95, cost 25.80 +- 34.99.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import safety_gymnasium
import torch
import yaml
from machine import machine_info, warn_if_busy

from robo_rl.api.configs import resolve_config
from robo_rl.build import build_runner
from robo_rl.sim import make
from robo_rl.sim.safety_gym import from_safety_gymnasium

ROOT = Path(__file__).resolve().parents[1]
TASK = "SafetyPointGoal1-v0"
EPISODE = 1000
TRAIN_STEPS = 4000


def raw_env() -> dict[str, float]:
    env = safety_gymnasium.make(TASK)
    start = time.perf_counter()
    for seed in range(3):
        env.reset(seed=seed)
    reset_s = (time.perf_counter() - start) / 3
    actions = np.random.default_rng(0).uniform(-1, 1, (500, 2)).astype(np.float32)
    start = time.perf_counter()
    for action in actions:
        env.step(action)
    return {"steps_per_s": len(actions) / (time.perf_counter() - start), "reset_s": reset_s}


def adapter(num_envs: int = 8) -> dict[str, float]:
    env = from_safety_gymnasium(TASK, num_envs, seed=0)
    actions = torch.rand(EPISODE, num_envs, 2, generator=torch.Generator().manual_seed(0)) * 2 - 1
    start = time.perf_counter()
    for action in actions[:500]:
        env.step(action)
    within = num_envs * 500 / (time.perf_counter() - start)
    env.reset(seed=0)
    start = time.perf_counter()
    for action in actions:  # the last step ends every episode: each env resets once
        env.step(action)
    whole = num_envs * EPISODE / (time.perf_counter() - start)
    env.close()
    return {"num_envs": num_envs, "steps_per_s_within_episode": within, "steps_per_s_whole_episodes": whole}


def robo_rl_ppo_lag(root: Path) -> dict[str, Any]:
    """One iteration of robo_rl's PPO-Lagrangian (the `ppo_lag` defaults), its update included, no evaluation."""
    config = {
        "name": "safety_point_goal_ppo_lag_bench",
        "algo": "ppo_lag",
        "task": {"name": f"safety_gym/{TASK}", "num_envs": TRAIN_STEPS // EPISODE},
        "ppo_lag": {"ppo": {"num_steps": EPISODE}, "lagrange": {"cost_budget": 25.0}},
        "runner": {"loop": {"max_iterations": 1, "eval_interval": 0}},
    }
    path = root / "bench.yaml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    result = build_runner(resolve_config(str(path)), make, evaluate=False).learn()
    return {
        "env_steps": result.env_steps,
        "seconds": result.wall_time,
        "steps_per_s": result.env_steps / result.wall_time,
    }


def omnisafe_ppo_lag(root: Path) -> dict[str, Any] | None:
    try:
        import omnisafe
    except ImportError as err:
        return {"skipped": str(err)}
    config = {
        "train_cfgs": {"total_steps": TRAIN_STEPS, "vector_env_nums": 1, "device": "cpu", "torch_threads": 1},
        "algo_cfgs": {"steps_per_epoch": TRAIN_STEPS},
        "logger_cfgs": {"use_wandb": False, "use_tensorboard": False, "log_dir": str(root / "omnisafe")},
    }
    agent = omnisafe.Agent("PPOLag", TASK, custom_cfgs=config)
    start = time.perf_counter()
    agent.learn()
    seconds = time.perf_counter() - start
    return {
        "version": omnisafe.__version__,
        "env_steps": TRAIN_STEPS,
        "seconds": seconds,
        "steps_per_s": TRAIN_STEPS / seconds,
    }


def robo_rl_compare(root: Path, steps: int, envs: int, seed: int) -> dict[str, Any]:
    """robo_rl's `ppo_lag` for `steps` env steps, `envs` x 1000 steps per iteration: the last iteration's training
    episodes (return, cost) and a deterministic evaluation on 10 episodes."""
    config = {
        "name": "safety_point_goal_ppo_lag_compare",
        "algo": "ppo_lag",
        "seed": seed,
        "task": {"name": f"safety_gym/{TASK}", "num_envs": envs},
        "ppo_lag": {"ppo": {"num_steps": EPISODE}, "lagrange": {"cost_budget": 25.0}},
        "runner": {
            "loop": {"max_iterations": max(1, steps // (envs * EPISODE)), "eval_interval": 0, "eval_episodes": 10}
        },
    }
    path = root / "compare.yaml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    rows: list[dict[str, Any]] = []
    result = build_runner(resolve_config(str(path)), make).learn(rows.append)
    last = rows[-1]
    return {
        "env_steps": result.env_steps,
        "seconds": result.wall_time,
        "last_train_return": last["mean_return"],
        "last_train_cost": last["train_cost"],
        "eval_return": last["eval_return"],
        "eval_cost": last["eval_cost"],
        "lagrange_multiplier": last["lagrange_multiplier"],
        "curve": [
            {"env_steps": row["env_steps"], "return": row["mean_return"], "cost": row["train_cost"]} for row in rows
        ],
    }


def omnisafe_compare(root: Path, steps: int, epoch: int, seed: int) -> dict[str, Any]:
    """OmniSafe's PPOLag (its defaults, cost limit 25) for `steps` env steps in epochs of `epoch`: the last epoch's
    training episodes (`Agent.learn`'s return, cost, length)."""
    try:
        import omnisafe
    except ImportError as err:
        return {"skipped": str(err)}
    config = {
        "seed": seed,
        "train_cfgs": {"total_steps": steps, "vector_env_nums": 1, "device": "cpu", "torch_threads": 1},
        "algo_cfgs": {"steps_per_epoch": epoch},
        "lagrange_cfgs": {"cost_limit": 25.0},
        "logger_cfgs": {"use_wandb": False, "use_tensorboard": False, "log_dir": str(root / "omnisafe")},
    }
    agent = omnisafe.Agent("PPOLag", TASK, custom_cfgs=config)
    start = time.perf_counter()
    episode_return, episode_cost, episode_length = agent.learn()
    return {
        "version": omnisafe.__version__,
        "env_steps": steps,
        "seconds": time.perf_counter() - start,
        "last_train_return": float(episode_return),
        "last_train_cost": float(episode_cost),
        "last_episode_length": float(episode_length),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=None, help="also write the JSON here")
    parser.add_argument("--compare", type=int, default=0, metavar="STEPS", help="train both for STEPS env steps")
    parser.add_argument("--envs", type=int, default=8, help="--compare: robo_rl's envs (x 1000 steps per iteration)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    torch.set_num_threads(1)
    load = warn_if_busy()
    if args.compare:
        with tempfile.TemporaryDirectory(prefix="safety_gym_compare_") as tmp:
            epoch = args.envs * EPISODE
            result = {
                "machine": machine_info(),
                "load_average": load,
                "task": TASK,
                "env_steps": args.compare,
                "seed": args.seed,
                "robo_rl_ppo_lag": robo_rl_compare(Path(tmp), args.compare, args.envs, args.seed),
                "omnisafe_ppo_lag": omnisafe_compare(Path(tmp), args.compare, epoch, args.seed),
            }
        text = json.dumps(result, indent=2)
        print(text)
        if args.out is not None:
            args.out.write_text(text + "\n", encoding="utf-8")
        return
    with tempfile.TemporaryDirectory(prefix="safety_gym_bench_") as tmp:
        result = {
            "machine": machine_info(),
            "load_average": load,
            "task": TASK,
            "safety_gymnasium": safety_gymnasium.__version__,
            "raw_one_env": raw_env(),
            "adapter": adapter(),
            "robo_rl_ppo_lag": robo_rl_ppo_lag(Path(tmp)),
            "omnisafe_ppo_lag": omnisafe_ppo_lag(Path(tmp)),
        }
    text = json.dumps(result, indent=2)
    print(text)
    if args.out is not None:
        args.out.write_text(text + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
