"""The batched environment contract shared by simulators and real robots.

Every environment holds `num_envs` independent copies of a task on one torch device and steps them together.
Tensors are shaped `(num_envs, ...)`. Episodes reset automatically: when an env finishes, the observation
returned by `step` is already the first observation of its next episode, and the last observation of the
finished episode is in `info["final_obs"]` (needed to bootstrap values on time-outs).
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

import numpy as np
import torch

from robo_rl.actuator import actuator_of
from robo_rl.spaces import SpaceSpec
from robo_rl.task_record import TaskSpecs

INFO_FINAL_OBS = "final_obs"
"""info key: `(num_envs, obs_dim)` last observation of each env; equals the returned obs where not done."""
INFO_PRIVILEGED_OBS = "privileged_obs"
"""info key: `(num_envs, privileged_dim)` critic-only observation matching the returned obs."""
INFO_FINAL_PRIVILEGED_OBS = "final_privileged_obs"
"""info key: `(num_envs, privileged_dim)` privileged counterpart of `final_obs`."""
INFO_SUCCESS = "success"
"""info key, only from tasks that define success: `(num_envs,)` bool, whether the episode that ended at this step
succeeded; read it where `terminated | truncated`, its value elsewhere means nothing."""
INFO_VALID = "valid"
"""info key, only from envs on real hardware: `(num_envs,)` bool, whether the step is a valid transition. A step whose
inputs were stale or missing (or whose command was the safe one) is not: runners count it and do not store it."""
INFO_TRACKING_ERROR = "tracking_error"
"""info key, only from tasks with a reference to follow: `(num_envs,)` distance to the reference after the step
(in the task's unit, m for the quadrotor), at every step; evaluation reports its RMS."""


StepResult = tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, dict[str, torch.Tensor]]
"""`(obs, reward, terminated, truncated, info)`; obs `(N, obs_dim)`, the rest `(N,)` (bool flags)."""


@runtime_checkable
class BatchedEnv(Protocol):
    """What a runner needs from an environment. Simulators and real-robot bridges implement it.

    Attributes:
        num_envs: number of parallel copies N.
        device: torch device holding every tensor the env returns and accepts.
        dt: control period in seconds (time between two `step` calls in the modelled world).
        obs_spec: observation vector the policy sees.
        action_spec: action vector the env accepts; values are clipped to its bounds.
        privileged_obs_spec: extra critic-only observation (asymmetric actor-critic), or None.
        max_episode_steps: time limit after which an episode is truncated.

    Envs with a `privileged_obs_spec` also expose `privileged_obs` `(N, privileged_dim)`, the critic-only
    observation matching the last returned obs (so it is available right after `reset`).
    """

    num_envs: int
    device: torch.device
    dt: float
    obs_spec: SpaceSpec
    action_spec: SpaceSpec
    privileged_obs_spec: SpaceSpec | None
    max_episode_steps: int

    def reset(self, seed: int | None = None) -> torch.Tensor:
        """Reset every env; returns obs `(N, obs_dim)`. A seed makes the whole env stream reproducible."""
        ...

    def step(self, action: torch.Tensor) -> StepResult:
        """Apply `(N, action_dim)` actions for one control period; auto-resets finished envs."""
        ...


@runtime_checkable
class RenderableEnv(Protocol):
    """An env that can draw one of its copies (`robo-rl play` writes videos from it).

    `render(index)` returns the current frame of env `index` as an RGB image `(height, width, 3)` uint8 numpy
    array, on a headless machine: MuJoCo tasks render offscreen (EGL, or OSMesa), 2-D and 3-D tasks without a
    physics renderer draw with matplotlib's Agg backend. Frames of one env have a constant size.
    """

    def render(self, index: int = 0) -> np.ndarray:
        """RGB frame `(height, width, 3)` uint8 of env `index` in its current state."""
        ...


def critic_obs_dim(env: BatchedEnv) -> int:
    """Size of the critic's input: the observation plus the privileged part, if the env has one."""
    privileged = env.privileged_obs_spec.dim if env.privileged_obs_spec is not None else 0
    return env.obs_spec.dim + privileged


def task_specs(env: BatchedEnv) -> TaskSpecs:
    """The env's observation and action specs, control period, critic input width and actuator model, if it has one
    (`robo_rl.actuator.actuator_of`: its `actuator` attribute, with its hover action), as a run records them."""
    return TaskSpecs(env.obs_spec, env.action_spec, float(env.dt), critic_obs_dim(env), actuator_of(env))


def check_step_result(env: BatchedEnv, result: StepResult) -> None:
    """Raise ValueError if a step result breaks the contract (shapes, dtypes, devices, info keys)."""
    obs, reward, terminated, truncated, info = result
    n = env.num_envs
    expected = {
        "obs": (obs, (n, env.obs_spec.dim)),
        "reward": (reward, (n,)),
        "terminated": (terminated, (n,)),
        "truncated": (truncated, (n,)),
        INFO_FINAL_OBS: (info.get(INFO_FINAL_OBS), (n, env.obs_spec.dim)),
    }
    if env.privileged_obs_spec is not None:
        dim = env.privileged_obs_spec.dim
        expected[INFO_PRIVILEGED_OBS] = (info.get(INFO_PRIVILEGED_OBS), (n, dim))
        expected[INFO_FINAL_PRIVILEGED_OBS] = (info.get(INFO_FINAL_PRIVILEGED_OBS), (n, dim))
    for name, (tensor, shape) in expected.items():
        if not isinstance(tensor, torch.Tensor):
            raise ValueError(f"{name}: expected a tensor, got {type(tensor).__name__}")
        if tuple(tensor.shape) != shape:
            raise ValueError(f"{name}: expected shape {shape}, got {tuple(tensor.shape)}")
        if tensor.device.type != torch.device(env.device).type:
            raise ValueError(f"{name}: on {tensor.device}, env is on {env.device}")
    for name, flag in (("terminated", terminated), ("truncated", truncated)):
        if flag.dtype != torch.bool:
            raise ValueError(f"{name}: expected dtype torch.bool, got {flag.dtype}")
