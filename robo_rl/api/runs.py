"""Rebuild a trained policy and its task from a run directory."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from torch import nn

from robo_rl.api.bad_file import BadFileError
from robo_rl.api.checkpoint_file import checkpoint_errors, read_checkpoint
from robo_rl.api.configs import load_config_file
from robo_rl.api.envs import env_factory
from robo_rl.build import build_deployable_actor, chunked
from robo_rl.envs import BatchedEnv
from robo_rl.experiment import ExperimentConfig
from robo_rl.runners.best_policy import BEST_CHECKPOINT
from robo_rl.runners.run_dir import RunDirectory
from robo_rl.storage import checkpoint
from robo_rl.task_record import TASK_FILE, TaskRecord, read_task_record


@dataclass
class TrainedPolicy:
    run: RunDirectory
    cfg: ExperimentConfig
    actor: nn.Module
    """Deterministic raw obs → env action module (what eval runs and export writes)."""
    checkpoint: Path
    iteration: int
    task: TaskRecord
    """What the run's task resolved to at training time (RUN/task.yaml; rebuilt from the simulator for runs made
    before it was recorded)."""


def load_trained(run_path: Path, checkpoint_path: Path | None = None, device: str = "cpu") -> TrainedPolicy:
    """Config from RUN/config.yaml and weights from `checkpoint_path`; by default the run's best policy
    (RUN/checkpoints/best.pt, written at its best evaluation), else RUN/checkpoints/latest.pt (or the previous.pt
    beside it, with a warning on stderr, when latest.pt is damaged)."""
    run = RunDirectory.open(run_path)
    cfg = read_run_config(run)
    best = run.checkpoints / BEST_CHECKPOINT
    if checkpoint_path is None and best.is_file():
        checkpoint_path = best
    path = checkpoint_path or run.latest_checkpoint
    if not path.is_file() and (checkpoint_path is not None or not checkpoint.previous_of(path).is_file()):
        raise FileNotFoundError(f"{path}: no checkpoint (train first, or pass --checkpoint)")
    task = run_task(run, cfg)
    if checkpoint_path is None:
        path, state = checkpoint.load_latest(path, device)
    else:
        state = read_checkpoint(path, device)
    with checkpoint_errors(path):
        actor = build_deployable_actor(cfg, task.specs, state, device)
        return TrainedPolicy(run, cfg, actor, path, int(state["iteration"]), task)


def load_teacher(run: str) -> tuple[nn.Module, tuple[str, ...]]:
    """`off_policy.teacher`: the run's deterministic policy (best.pt, else latest.pt) and its observation names."""
    trained = load_trained(Path(run))
    return trained.actor, trained.task.specs.obs.names


def run_task(run: RunDirectory, cfg: ExperimentConfig) -> TaskRecord:
    """The run's recorded task (RUN/task.yaml, no simulator needed); a run made before it was recorded rebuilds
    its task to find out. BadFileError naming the file when the record is damaged."""
    try:
        recorded = read_task_record(run.path)
    except ValueError as err:
        raise BadFileError(run.path / TASK_FILE, str(err)) from None
    if recorded is not None:
        return recorded
    from robo_rl.api.envs import task_record

    return task_record(cfg, make_env(cfg, num_envs=1, device="cpu"))


def read_run_config(run: RunDirectory) -> ExperimentConfig:
    """The run's resolved config (RUN/config.yaml); ConfigError naming the file when it is empty or bad."""
    return load_config_file(run.config_file)


def make_env(
    cfg: ExperimentConfig,
    num_envs: int,
    device: str,
    seed: int | None = None,
    extra_params: Sequence[str] = (),
    evaluation: bool = False,
) -> BatchedEnv:
    """The run's task with its `task.config` (with `evaluation`: its `task.eval_config`), then `extra_params`
    (`"key=value"` text, e.g. held-out evaluation ranges); in chunks of `task.action_chunk` actions where H > 1."""
    config = cfg.task.evaluation_config if evaluation else cfg.task.config
    make = env_factory()
    return chunked(
        cfg, make(cfg.task.name, num_envs=num_envs, device=device, seed=seed, params=extra_params, config=config)
    )
