"""`robo-rl train --algo ppo_lag` on safety_gym/SafetyPointGoal1-v0 in .venv-safety: two iterations run, the run
records the task's cost spec, and metrics.jsonl has the cost columns with a cost measured on the task."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[3]

CONFIG = {
    "name": "safety_point_goal_ppo_lag_smoke",
    "algo": "ppo_lag",
    "task": {"name": "safety_gym/SafetyPointGoal1-v0", "num_envs": 4, "config": {"max_episode_steps": 60}},
    "ppo_lag": {"ppo": {"num_steps": 64}, "lagrange": {"cost_budget": 25.0}},
    "runner": {"loop": {"max_iterations": 2, "eval_interval": 2, "eval_episodes": 1}},
}


def test_ppo_lag_trains_on_safety_point_goal(safety_bin: Path, tmp_path: Path) -> None:
    config = tmp_path / "smoke.yaml"
    config.write_text(yaml.safe_dump(CONFIG), encoding="utf-8")
    argv = [str(safety_bin / "robo-rl"), "train", str(config), "--runs-root", str(tmp_path / "runs")]
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    done = subprocess.run(argv, capture_output=True, text=True, timeout=300, cwd=ROOT, env=env)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    (run,) = (tmp_path / "runs" / CONFIG["name"]).iterdir()
    rows = [json.loads(line) for line in (run / "metrics.jsonl").read_text(encoding="utf-8").splitlines()]
    assert [row["iteration"] for row in rows] == [1, 2]
    assert rows[-1]["env_steps"] == 2 * 64 * 4
    assert {"train_cost", "eval_cost", "lagrange_multiplier", "rollout_episode_cost"} <= set(rows[-1])
    assert rows[-1]["train_cost"] is not None and rows[-1]["eval_cost"] is not None  # episodes of 60 steps ended
    task = yaml.safe_load((run / "task.yaml").read_text(encoding="utf-8"))
    assert task["specs"]["cost"]["name"] == "safety_gymnasium" and task["config"]["env_id"] == "SafetyPointGoal1-v0"
