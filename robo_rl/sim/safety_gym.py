"""Safety-Gymnasium's tasks (e.g. SafetyPointGoal1-v0) as robo_rl `BatchedEnv`s with a cost: safe RL's benchmark.

Safety-Gymnasium 1.0.0 pins gymnasium 0.28.1 and mujoco 2.3.3, where robo_rl's main venv has gymnasium 1.x and
mujoco 4, so it lives in its own venv: `make safety-venv` builds `.venv-safety` (with OmniSafe, its authors' safe-RL
library, for comparisons), and code that builds these tasks runs with `.venv-safety/bin/python`. safety_gymnasium is
imported only when a task is built, so `robo_rl.sim` imports without it; there the task
`safety_gym/SafetyPointGoal1-v0` is registered (`robo_rl.sim`), and any other id works through its `env_id` field.

The batched contract is `FromGymnasium`'s: `num_envs` copies stepped one after the other on the CPU, a finished copy
reset in the same step (its last observation in `info["final_obs"]`), `reset(seed)` seeding copy i with `seed + i`,
actions clipped to the task's bounds. `FromGymnasium` itself cannot be reused: it steps gymnasium 1.x's
`SyncVectorEnv(autoreset_mode=SAME_STEP)`, which gymnasium 0.28 lacks, and Safety-Gymnasium does not import under
gymnasium 1.x. Each copy is Safety-Gymnasium's own `safety_gymnasium.make(env_id)` (its time limit included), whose
step returns (obs, reward, cost, terminated, truncated, info): the cost becomes `info["cost"]`
(`robo_rl.envs.INFO_COST`), which robo_rl's constrained algorithms (`--algo ppo_lag`, `sac_lag`) keep under a budget.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from robo_rl.cost_spec import CostSpec
from robo_rl.envs import INFO_COST, INFO_FINAL_OBS, SpaceSpec
from robo_rl.sim.from_gymnasium import _box_spec

SAFETY_VENV_HINT = (
    "safety_gymnasium is not installed here: build its venv (make safety-venv) and run with .venv-safety/bin/python"
)
SAFETY_GYMNASIUM_COST = CostSpec(
    "safety_gymnasium",
    "1",
    "Safety-Gymnasium's cost of the step: 1 where any of the task's constraints is violated (its default "
    "constrain_indicator), e.g. the robot inside a hazard in SafetyPointGoal1, else 0",
)


@dataclass(frozen=True)
class SafetyGymnasiumConfig:
    env_id: str = "SafetyPointGoal1-v0"
    """Safety-Gymnasium id passed to `safety_gymnasium.make`, e.g. "SafetyCarButton2-v0"."""
    max_episode_steps: int | None = None
    """Time limit in steps; None keeps the one registered with the id (1000 for the navigation tasks)."""

    def __post_init__(self) -> None:
        if self.max_episode_steps is not None and self.max_episode_steps < 1:
            raise ValueError(f"max_episode_steps must be at least 1, got {self.max_episode_steps}")


def _safety_gymnasium() -> Any:
    try:
        import safety_gymnasium
    except ImportError as err:
        raise ImportError(f"{SAFETY_VENV_HINT} ({err})") from None
    return safety_gymnasium


def _observation_spec(env: Any) -> SpaceSpec:
    """The flat observation's spec, each element named after the sensor it comes from (`goal_lidar[3]`), in the
    order Safety-Gymnasium flattens its observation dict; `obs[i]` where the task does not say."""
    spec = _box_spec(env.observation_space, "obs")
    sensors = getattr(getattr(env.unwrapped.task, "obs_info", None), "obs_space_dict", None)
    if sensors is None:
        return spec
    names = tuple(f"{key}[{i}]" for key, space in sensors.items() for i in range(int(np.prod(space.shape))))
    if len(names) != spec.dim:
        return spec
    return SpaceSpec(names=names, low=spec.low, high=spec.high, units=spec.units)


class SafetyGymnasiumEnv:
    """`num_envs` copies of a Safety-Gymnasium task behind the `BatchedEnv` protocol, with its cost.

    Observations are float32 `(num_envs, obs_dim)` on `device`; rewards and `info["cost"]` float32 `(num_envs,)`;
    `info["final_obs"]` as in `FromGymnasium` (module docstring). `dt` is one control step in seconds (MuJoCo's
    timestep times Safety-Gymnasium's frame skip).
    """

    resumable = False
    """No `state_dict`: Safety-Gymnasium envs have no state to save: a resumed run restarts their episodes."""

    privileged_obs_spec: SpaceSpec | None = None
    cost_spec: CostSpec = SAFETY_GYMNASIUM_COST

    def __init__(
        self,
        num_envs: int,
        device: str | torch.device = "cpu",
        config: SafetyGymnasiumConfig = SafetyGymnasiumConfig(),
        seed: int | None = None,
    ) -> None:
        if num_envs < 1:
            raise ValueError(f"num_envs must be at least 1, got {num_envs}")
        safety_gymnasium = _safety_gymnasium()
        self.num_envs, self.device, self.config = num_envs, torch.device(device), config
        kwargs: dict[str, Any] = (
            {} if config.max_episode_steps is None else {"max_episode_steps": config.max_episode_steps}
        )
        from safety_gymnasium.utils.registration import safe_registry

        if config.env_id not in safe_registry:
            raise ValueError(f"{config.env_id!r} is not a Safety-Gymnasium id, e.g. SafetyPointGoal1-v0")
        self._envs = [safety_gymnasium.make(config.env_id, **kwargs) for _ in range(num_envs)]
        first = self._envs[0]
        self.action_spec = _box_spec(first.action_space, "action")
        self.max_episode_steps = int(first.spec.max_episode_steps)
        self._low = np.asarray(self.action_spec.low, dtype=np.float32)
        self._high = np.asarray(self.action_spec.high, dtype=np.float32)
        self.reset(seed)  # builds the MuJoCo worlds: the sensors and the timestep are known from here on
        self.obs_spec = _observation_spec(first)
        task = first.unwrapped.task
        self.dt = float(task.model.opt.timestep) * int(task.sim_conf.frameskip_binom_n)

    def _tensor(self, array: np.ndarray, dtype: torch.dtype = torch.float32) -> torch.Tensor:
        return torch.as_tensor(array, dtype=dtype).to(self.device)

    def reset(self, seed: int | None = None) -> torch.Tensor:
        rows = [env.reset(seed=None if seed is None else seed + i)[0] for i, env in enumerate(self._envs)]
        return self._tensor(np.stack(rows))

    def step(
        self, action: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, dict[str, Any]]:
        actions = np.clip(action.detach().to("cpu", torch.float32).numpy(), self._low, self._high)
        obs, final = [], []
        reward, cost = np.zeros(self.num_envs, np.float32), np.zeros(self.num_envs, np.float32)
        terminated, truncated = np.zeros(self.num_envs, bool), np.zeros(self.num_envs, bool)
        for i, env in enumerate(self._envs):
            last, reward[i], cost[i], terminated[i], truncated[i], _ = env.step(actions[i])
            final.append(last)
            obs.append(env.reset()[0] if terminated[i] or truncated[i] else last)
        return (
            self._tensor(np.stack(obs)),
            self._tensor(reward),
            self._tensor(terminated, torch.bool),
            self._tensor(truncated, torch.bool),
            {INFO_FINAL_OBS: self._tensor(np.stack(final)), INFO_COST: self._tensor(cost)},
        )

    def close(self) -> None:
        for env in self._envs:
            env.close()


def from_safety_gymnasium(
    env_id: str, num_envs: int, device: str | torch.device = "cpu", seed: int | None = None
) -> SafetyGymnasiumEnv:
    """`num_envs` copies of the Safety-Gymnasium task `env_id` (e.g. "SafetyPointGoal1-v0") on `device`, seeded
    `seed + i` (None: unseeded); ImportError naming `make safety-venv` where safety_gymnasium is not installed."""
    return SafetyGymnasiumEnv(num_envs, device, SafetyGymnasiumConfig(env_id=env_id), seed)
