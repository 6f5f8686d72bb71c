"""Safety-Gymnasium's SafetyPointGoal1-v0 through `robo_rl.sim.safety_gym`, run by .venv-safety's Python
(tests/sim/safety_gym/conftest.py). Prints one JSON line:
- the specs (names, bounds, dt, time limit, cost spec) and what the registry builds;
- twin: the adapter and NUM_ENVS of Safety-Gymnasium's own envs (`safety_gymnasium.make`, seeded and stepped as the
  adapter's contract says: copy i seeded SEED + i, a finished one reset at once without a seed) driven by the same
  actions for STEPS steps across an episode boundary; the largest difference of each of obs, reward, cost,
  terminated, truncated and final_obs (the raw env's last observation of each episode), and counts of the steps
  that cost and of the episode ends, so that a comparison of zeros cannot pass unnoticed; `check_step_result` held;
  the steps whose cost is not "inside a hazard" as the task's geometry says (the cost spec's claim);
- the errors of an unknown id and of a bad num_envs.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import safety_gymnasium
import torch

from robo_rl.envs import INFO_COST, INFO_FINAL_OBS, check_step_result, task_specs
from robo_rl.sim import make, names
from robo_rl.sim.safety_gym import SafetyGymnasiumConfig, SafetyGymnasiumEnv, from_safety_gymnasium

TASK = "SafetyPointGoal1-v0"
NUM_ENVS = 3
SEED = 0
"""Copies 0 and 2 cross a hazard in their first episode under `driving_actions`."""
EPISODE = 100
STEPS = EPISODE + 60
"""Short episodes: Safety-Gymnasium rebuilds its MuJoCo model at every reset (about 1 s here)."""


def driving_actions(steps: int, num_envs: int) -> np.ndarray:
    """Mostly full speed ahead with some steering noise (the robot crosses hazards: steps that cost), and values
    past the bounds of ±1 that the adapter must clip."""
    rng = np.random.default_rng(7)
    actions = np.stack([1.2 * np.ones((steps, num_envs)), rng.uniform(-0.4, 0.4, (steps, num_envs))], axis=-1)
    actions[::7, :, 1] = -1.5
    return actions.astype(np.float32)


def in_hazard(task: Any) -> bool:
    """Whether the robot is inside one of the hazards (a cylinder of the hazards' radius), from the task's geometry:
    the cost the cost spec describes."""
    return any(task.agent.dist_xy(position) <= task.hazards.size for position in task.hazards.pos)


def twin(actions: np.ndarray) -> dict[str, Any]:
    env = SafetyGymnasiumEnv(NUM_ENVS, config=SafetyGymnasiumConfig(TASK, max_episode_steps=EPISODE), seed=SEED)
    raw = [safety_gymnasium.make(TASK, max_episode_steps=EPISODE) for _ in range(NUM_ENVS)]
    raw_obs = np.stack([r.reset(seed=SEED + i)[0] for i, r in enumerate(raw)])
    diffs = {"reset_obs": float(np.abs(env.reset(seed=SEED).numpy() - raw_obs.astype(np.float32)).max())}
    worst = dict.fromkeys(("obs", "reward", "cost", "terminated", "truncated", "final_obs"), 0.0)
    cost_steps, ends, end_steps, mismatches = 0, 0, [], 0
    for t, step_actions in enumerate(actions):
        result = env.step(torch.from_numpy(step_actions))
        check_step_result(env, result)
        obs, reward, terminated, truncated, info = result
        expected: dict[str, list[Any]] = {key: [] for key in worst}
        for i, r in enumerate(raw):
            o, rew, cost, term, trunc, _ = r.step(np.clip(step_actions[i], -1.0, 1.0))
            mismatches += int(cost != float(in_hazard(r.unwrapped.task)))
            expected["final_obs"].append(o)
            expected["obs"].append(r.reset()[0] if term or trunc else o)
            for key, value in (("reward", rew), ("cost", cost), ("terminated", term), ("truncated", trunc)):
                expected[key].append(value)
        got = {
            "obs": obs,
            "reward": reward,
            "cost": info[INFO_COST],
            "terminated": terminated,
            "truncated": truncated,
            "final_obs": info[INFO_FINAL_OBS],
        }
        for key, value in got.items():
            reference = np.asarray(expected[key], dtype=np.float32)
            worst[key] = max(worst[key], float(np.abs(value.numpy().astype(np.float32) - reference).max()))
        cost_steps += int((info[INFO_COST] > 0).sum())
        done = int((terminated | truncated).sum())
        ends += done
        if done:
            end_steps.append(t + 1)
    env.close()
    return {
        **diffs,
        "max_abs_diff": worst,
        "cost_steps": cost_steps,
        "episode_ends": ends,
        "end_steps": end_steps,
        "cost_not_hazard_steps": mismatches,
    }


def error_of(build: Any) -> str | None:
    try:
        build()
    except (ValueError, ImportError) as err:
        return str(err)
    return None


def main() -> None:
    env = make(f"safety_gym/{TASK}", 1, seed=SEED)
    specs = task_specs(env)
    report = {
        "registered": [name for name in names() if name.startswith("safety_gym/")],
        "obs_names": list(env.obs_spec.names),
        "obs_low": list(env.obs_spec.low),
        "obs_high": list(env.obs_spec.high),
        "action_names": list(env.action_spec.names),
        "action_low": list(env.action_spec.low),
        "action_high": list(env.action_spec.high),
        "dt": env.dt,
        "max_episode_steps": env.max_episode_steps,
        "cost_spec": None if specs.cost is None else specs.cost.to_dict(),
        "raw_max_episode_steps": safety_gymnasium.make(TASK).spec.max_episode_steps,
        "raw_obs_dim": int(safety_gymnasium.make(TASK).observation_space.shape[0]),
        "twin": twin(driving_actions(STEPS, NUM_ENVS)),
        "unknown_id_error": error_of(lambda: from_safety_gymnasium("SafetyNoSuchTask-v0", 1)),
        "num_envs_error": error_of(lambda: from_safety_gymnasium(TASK, 0)),
    }
    env.close()
    print(json.dumps(report))


if __name__ == "__main__":
    main()
