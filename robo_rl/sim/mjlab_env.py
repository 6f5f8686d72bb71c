"""Any mjlab task as a robo_rl `BatchedEnv`, through the Isaac Lab adapter (`robo_rl.sim.manager_based`).

mjlab (Isaac Lab's manager-based API on MuJoCo Warp) pins mujoco 3.11 where robo_rl's main venv has mujoco 4, so it
lives in its own venv: `make mjlab-venv` builds `.venv-mjlab`, and code that builds mjlab tasks runs with
`.venv-mjlab/bin/python`. mjlab is imported only when a task is built, so `robo_rl.sim` imports without it.

On a machine without a GPU, mjlab runs on the CPU (`device="cpu"`); where a GPU exists but the CPU is wanted,
hide it from Warp before the process imports mjlab (`CUDA_VISIBLE_DEVICES=""`). The adapter sets the env's
`auto_reset` to False and resets finished envs itself, so `info["final_obs"]` is the true last observation.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from robo_rl.sim.manager_based import IsaacLabConfig, IsaacLabEnv

MJLAB_VENV_HINT = "mjlab is not installed here: build its venv (make mjlab-venv) and run with .venv-mjlab/bin/python"


def from_mjlab(
    task_id: str,
    num_envs: int,
    device: str = "cpu",
    seed: int | None = None,
    *,
    play: bool = False,
    episode_length_s: float | None = None,
    edit_cfg: Callable[[Any], None] | None = None,
    config: IsaacLabConfig | None = None,
) -> IsaacLabEnv:
    """`num_envs` copies of the registered mjlab task `task_id` (e.g. "Mjlab-Cartpole-Balance") on `device`.

    Args:
        task_id: an id of `mjlab.tasks.registry.list_tasks()`.
        num_envs: parallel copies.
        device: torch/Warp device, "cpu" or "cuda:0".
        seed: seeds mjlab's generators when the env is built (None: mjlab draws one).
        play: the task's play config (mjlab's evaluation variant: no observation noise, endless episodes).
        episode_length_s: time limit in seconds, replacing the task's (None keeps it).
        edit_cfg: called with the task's `ManagerBasedRlEnvCfg` before the env is built, to change anything else.
        config: how the env is mapped onto the batched contract (groups, action bound); None: the defaults.
    """
    if num_envs < 1:
        raise ValueError(f"num_envs must be at least 1, got {num_envs}")
    if episode_length_s is not None and not episode_length_s > 0:
        raise ValueError(f"episode_length_s must be positive, got {episode_length_s}")
    cfg = mjlab_env_cfg(task_id, play)
    cfg.scene.num_envs = num_envs
    if seed is not None:
        cfg.seed = seed
    if episode_length_s is not None:
        cfg.episode_length_s = episode_length_s
    if edit_cfg is not None:
        edit_cfg(cfg)
    from mjlab.envs import ManagerBasedRlEnv

    return IsaacLabEnv(ManagerBasedRlEnv(cfg, device=device), config or IsaacLabConfig())


def mjlab_env_cfg(task_id: str, play: bool = False) -> Any:
    """A copy of the registered env config of `task_id`; ValueError listing the known ids for an unknown one."""
    try:
        import mjlab.tasks  # noqa: F401  (registers the bundled tasks)
        from mjlab.tasks.registry import list_tasks, load_env_cfg
    except ImportError as err:
        raise ImportError(f"{MJLAB_VENV_HINT} ({err})") from None
    known = list_tasks()
    if task_id not in known:
        raise ValueError(f"unknown mjlab task {task_id!r}; registered tasks: {', '.join(known)}")
    return load_env_cfg(task_id, play=play)
