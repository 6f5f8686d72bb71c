"""Evaluating a trained run (its checkpoint or its policy.onnx) or any policy file on a registered task."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from robo_rl.api.onnx_policy import onnx_actor, policy_artifact
from robo_rl.api.runs import load_trained, make_env
from robo_rl.envs import BatchedEnv
from robo_rl.runners.evaluate import EvalResult, evaluate
from robo_rl.runners.flight_plot import plot_flights, record_positions
from robo_rl.runners.policy_stepper import Actor


def evaluate_run(
    run_dir: Path,
    episodes: int,
    seed: int,
    checkpoint: Path | None = None,
    use_onnx: bool = False,
    device: str = "cpu",
    task_params: Sequence[str] = (),
) -> EvalResult:
    """Evaluate the run's deterministic policy; `task_params` change the task (after the run's own params)."""
    if episodes < 1:
        raise ValueError(f"--episodes must be at least 1, got {episodes}")
    trained = load_trained(run_dir, checkpoint, device)
    env = make_env(trained.cfg, num_envs=episodes, device=device, extra_params=task_params, evaluation=True)
    actor = run_onnx_actor(run_dir, env) if use_onnx else trained.actor
    return evaluate(env, actor, seed=seed)


def run_onnx_actor(run_dir: Path, env: BatchedEnv) -> Actor:
    """RUN_DIR/policy.onnx in onnxruntime, checked to fit `env`'s observation and action sizes (a policy with
    memory: `(obs, h_in) -> (action, h_out)`, which `evaluate` carries)."""
    return onnx_actor(run_dir / "policy.onnx", env.obs_spec.dim, env.action_spec.dim)


def plot_run_flights(run_dir: Path, episodes: int, seed: int) -> Path | None:
    """RUN_DIR/flights.png: 3-D position-error paths of `episodes` deterministic flights; None if the task has
    no position error in its observation."""
    trained = load_trained(run_dir)
    env = make_env(trained.cfg, num_envs=episodes, device="cpu", evaluation=True)
    try:
        positions = record_positions(env, trained.actor, seed)
    except ValueError:
        return None
    out = run_dir / "flights.png"
    plot_flights(positions, out, f"{trained.cfg.task.name}: {episodes} evaluation flights")
    return out


def evaluate_policy_file(
    path: Path,
    episodes: int,
    seed: int,
    task: str | None = None,
    device: str = "cpu",
    task_params: Sequence[str] = (),
) -> EvalResult:
    """Evaluate a policy artifact (any robo_rl policy.onnx, imported ones included) on a registered task: the
    policy's own unless `task` is given, built with the task settings the file recorded at training time
    (`robo_rl.task_config`: the observation it was trained with, its frame, its randomization) and then
    `task_params`. The policy's observation and action names must be the task's. A policy with memory has its
    state carried from step to step and set to the file's reset value at each env's episode start."""
    from robo_rl.sim import make, names

    if episodes < 1:
        raise ValueError(f"--episodes must be at least 1, got {episodes}")
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such policy file")
    artifact = policy_artifact(path)
    task = task or artifact.task
    if task not in names():
        raise ValueError(f"{path}: its task {task!r} is not a registered task: supply --task (robo-rl tasks)")
    recorded = recorded_task_config(artifact.task_config) if task == artifact.task else None
    env = make(task, num_envs=episodes, device=device, params=task_params, config=recorded)
    for role, policy_spec, env_spec in (
        ("observation", artifact.obs, env.obs_spec),
        ("action", artifact.action, env.action_spec),
    ):
        if policy_spec.names != env_spec.names:
            raise ValueError(
                f"{path}: its {role} names differ from task {task!r}'s: policy {list(policy_spec.names)[:6]}..., "
                f"task {list(env_spec.names)[:6]}... (import it with the task's names, in order)"
            )
    return evaluate(env, onnx_actor(path, env.obs_spec.dim, env.action_spec.dim), seed=seed)


SPEED_ONLY_SETTINGS = ("backend", "compile")
"""Task settings that change how fast a task steps, not what it computes: not taken from a recorded config."""


def recorded_task_config(task_config: str | None) -> dict[str, Any] | None:
    """A recorded task config (canonical JSON, `robo_rl.task_config`) as a mapping of task settings, less the
    settings that only change speed; None when the file recorded none (or an import's notes)."""
    import json

    if not task_config:
        return None
    data = json.loads(task_config)
    if not isinstance(data, dict) or "imported" in data:  # an imported policy records what the import folded in
        return None
    return {key: value for key, value in data.items() if key not in SPEED_ONLY_SETTINGS}
