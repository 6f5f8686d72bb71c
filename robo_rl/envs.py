"""The batched environment contract shared by simulators and real robots.

Every environment holds `num_envs` independent copies of a task on one torch device and steps them together.
Tensors are shaped `(num_envs, ...)`. Episodes reset automatically: when an env finishes, the observation
returned by `step` is already the first observation of its next episode, and the last observation of the
finished episode is in `info["final_obs"]` (needed to bootstrap values on time-outs).

Envs with cameras (`CameraEnv`) return a dict of named observations instead of one tensor: the state vector under
`STATE_KEY` (`(N, obs_dim)` float32, described by `obs_spec`) and each camera's frames under its name
(`(N, height, width, channels)` uint8, HWC, described by one `robo_rl.image_spec.ImageSpec` of `image_specs`).
`info["final_obs"]` is then a dict with the same keys. `check_step_result` checks both forms.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

import numpy as np
import torch

from robo_rl.actuator import actuator_of
from robo_rl.cost_spec import cost_spec_of
from robo_rl.image_spec import STATE_KEY, ImageSpec, check_camera_names
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
INFO_COST = "cost"
"""info key, only from tasks with a constraint (`robo_rl.cost_spec.CostSpec`, the env's `cost_spec`): `(num_envs,)`
float >= 0, the step's cost (what the constraint bounds, in the spec's unit), at every step; an episode's cost is
their sum, and a constrained algorithm keeps its expected value under a budget."""
INFO_TRACKING_ERROR = "tracking_error"
"""info key, only from tasks with a reference to follow: `(num_envs,)` distance to the reference after the step
(in the task's unit, m for the quadrotor), at every step; evaluation reports its RMS."""


StepResult = tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, dict[str, torch.Tensor]]
"""`(obs, reward, terminated, truncated, info)`; obs `(N, obs_dim)`, the rest `(N,)` (bool flags)."""
ImageObs = dict[str, torch.Tensor]
"""A camera env's observation: `STATE_KEY` -> `(N, obs_dim)` float32, camera name -> `(N, H, W, C)` uint8."""
ImageStepResult = tuple[ImageObs, torch.Tensor, torch.Tensor, torch.Tensor, dict[str, Any]]
"""A camera env's step: like `StepResult`, with dict observations (also in `info["final_obs"]`)."""


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
class CameraEnv(Protocol):
    """A batched env whose observation includes camera images: `BatchedEnv`'s attributes, plus `image_specs`, one
    `ImageSpec` per camera (in a fixed order: the order of the exported policy's image inputs). `reset` and `step`
    return `ImageObs` dicts (module docstring)."""

    num_envs: int
    device: torch.device
    dt: float
    obs_spec: SpaceSpec
    action_spec: SpaceSpec
    privileged_obs_spec: SpaceSpec | None
    max_episode_steps: int
    image_specs: tuple[ImageSpec, ...]

    def reset(self, seed: int | None = None) -> ImageObs:
        """Reset every env; returns the observation dict."""
        ...

    def step(self, action: torch.Tensor) -> ImageStepResult:
        """Apply `(N, action_dim)` actions for one control period; auto-resets finished envs."""
        ...


def image_specs_of(env: object) -> tuple[ImageSpec, ...]:
    """The env's cameras (`CameraEnv.image_specs`), or () for an env that observes vectors only."""
    specs = tuple(getattr(env, "image_specs", ()) or ())
    check_camera_names(specs)
    return specs


def state_of(obs: torch.Tensor | ImageObs) -> torch.Tensor:
    """The state vector of an observation, whichever form it has."""
    return obs[STATE_KEY] if isinstance(obs, dict) else obs


@runtime_checkable
class CapturableEnv(Protocol):
    """A `BatchedEnv` whose `step` splits into a random part and a capturable part, so that a rollout of many steps
    can run as one captured graph (`robo_rl.capture`, `robo_rl.runners.device_rollout`):
    `env.step(action)` is `env.transition(action, env.draw())`.

    `draw()` runs eagerly before the graph: it takes the step's random numbers from the env's generator and does
    the step's Python bookkeeping (counters); it returns tensors, or Python values that stay the same from step to
    step (a replay reads the tensors' new contents, but Python values are frozen at capture). `transition` does
    the rest with no random call and no host sync."""

    def draw(self) -> Any:
        """The random numbers (and step-dependent values, as tensors) of one `step`; counts the step."""
        ...

    def transition(self, action: torch.Tensor, draws: Any) -> StepResult:
        """`step` after `draw`: no random call, no host sync."""
        ...


def capturable(env: object) -> bool:
    """Whether `env` offers the split step of `CapturableEnv` (a task may offer it for some settings only: its
    `capturable` attribute, when it has one, says whether these settings do)."""
    return isinstance(env, CapturableEnv) and bool(getattr(env, "capturable", True))


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
    """The env's observation and action specs, control period, critic input width, actuator model, if it has one
    (`robo_rl.actuator.actuator_of`: its `actuator` attribute, with its hover action), and cameras, as a run records
    them, with the cost it declares (`robo_rl.cost_spec`) where it has a constraint."""
    dims = float(env.dt), critic_obs_dim(env)
    cameras, cost = image_specs_of(env), cost_spec_of(env)
    return TaskSpecs(env.obs_spec, env.action_spec, *dims, actuator_of(env), cameras=cameras, cost=cost)


def check_step_result(env: BatchedEnv | CameraEnv, result: StepResult | ImageStepResult) -> None:
    """Raise ValueError if a step result breaks the contract (shapes, dtypes, devices, info keys); with cameras,
    also the observation dicts' keys, and each image's shape and dtype (uint8) against its `ImageSpec`."""
    obs, reward, terminated, truncated, info = result
    n = env.num_envs
    expected: dict[str, tuple[object, tuple[int, ...]]] = {
        "reward": (reward, (n,)),
        "terminated": (terminated, (n,)),
        "truncated": (truncated, (n,)),
    }
    for name, value in (("obs", obs), (INFO_FINAL_OBS, info.get(INFO_FINAL_OBS))):
        expected.update(_observation_shapes(env, name, value))
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
    for name, value in (("obs", obs), (INFO_FINAL_OBS, info.get(INFO_FINAL_OBS))):
        if isinstance(value, dict):
            _check_image_dtypes(env, value, name)


def _observation_shapes(
    env: BatchedEnv | CameraEnv, name: str, obs: object
) -> dict[str, tuple[object, tuple[int, ...]]]:
    """`{label: (tensor, expected shape)}` of one observation, a tensor or (with cameras) a dict of them."""
    n, state_shape = env.num_envs, (env.num_envs, env.obs_spec.dim)
    specs = image_specs_of(env)
    if not specs:
        return {name: (obs, state_shape)}
    if not isinstance(obs, dict):
        raise ValueError(f"{name}: an env with cameras returns a dict of observations, got {type(obs).__name__}")
    keys = {STATE_KEY, *(spec.name for spec in specs)}
    if set(obs) != keys:
        raise ValueError(f"{name}: expected keys {sorted(keys)}, got {sorted(obs)}")
    shapes: dict[str, tuple[object, tuple[int, ...]]] = {f"{name}[{STATE_KEY}]": (obs[STATE_KEY], state_shape)}
    shapes.update({f"{name}[{spec.name}]": (obs[spec.name], (n, *spec.shape)) for spec in specs})
    return shapes


def _check_image_dtypes(env: BatchedEnv | CameraEnv, obs: ImageObs, name: str) -> None:
    for spec in image_specs_of(env):
        if obs[spec.name].dtype != torch.uint8:
            raise ValueError(f"{name}[{spec.name}]: expected dtype torch.uint8, got {obs[spec.name].dtype}")
