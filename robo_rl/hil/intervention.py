"""InterventionEnv: a batched env whose actions a teleoperation device overrides, per env, while it is active.

Composition, not inheritance: it wraps any `BatchedEnv` and forwards everything else to it. Each `step(action)`
polls the device with the observation the policy acted on; where the device is active, its action is executed
instead of the policy's. The step's info then carries `intervened` `(N,)` and `executed_action` `(N, action_dim)`
(env units), so the runner stores what the robot really did, flagged. Intervention statistics accumulate per
episode and overall. The device's `estop` button latches `estop`, on which the runners stop training (with a
checkpoint, as at the end of a run).
"""

from __future__ import annotations

from typing import Any

import torch

from robo_rl.envs import BatchedEnv, StepResult, state_of
from robo_rl.hil.device import TeleopDevice

INFO_INTERVENED = "intervened"
INFO_EXECUTED_ACTION = "executed_action"


class InterventionEnv:
    """`env` with `device` able to take over any of its envs (see the module docstring)."""

    def __init__(self, env: BatchedEnv, device: TeleopDevice) -> None:
        self.env = env
        self.teleop = device
        self.obs: torch.Tensor | None = None
        self.episode_interventions = torch.zeros(env.num_envs, dtype=torch.long, device=env.device)
        self.episode_steps = torch.zeros(env.num_envs, dtype=torch.long, device=env.device)
        self.intervened_steps = 0
        self.total_steps = 0
        self.finished_episodes = 0
        self.finished_with_intervention = 0
        self.finished_intervention_steps = 0
        self.finished_steps = 0
        self._last_stats = (0, 0, 0, 0, 0, 0)
        self.estop = False

    def __getattr__(self, name: str) -> Any:  # num_envs, device, dt, obs_spec, action_spec, ... of the env
        return getattr(self.env, name)

    def reset(self, seed: int | None = None) -> torch.Tensor:
        self.obs = self.env.reset(seed)
        self.teleop.episode_reset(torch.ones(self.env.num_envs, dtype=torch.bool, device=self.env.device))
        self.episode_interventions.zero_()
        self.episode_steps.zero_()
        return self.obs

    def step(self, action: torch.Tensor) -> StepResult:
        if self.obs is None:
            raise RuntimeError("InterventionEnv.step before reset")
        command = self.teleop.poll(state_of(self.obs))  # devices see the state vector, also beside cameras
        self.estop = self.estop or bool(command.buttons.get("estop"))
        active = command.active.to(torch.bool)
        executed = torch.where(active.unsqueeze(-1), command.action.to(action.dtype), action)
        obs, reward, terminated, truncated, info = self.env.step(executed)
        info = {**info, INFO_INTERVENED: active, INFO_EXECUTED_ACTION: executed}
        self._count(active, terminated | truncated)
        self.teleop.episode_reset(terminated | truncated)
        self.obs = obs
        return obs, reward, terminated, truncated, info

    def _count(self, active: torch.Tensor, done: torch.Tensor) -> None:
        self.episode_interventions += active
        self.episode_steps += 1
        self.intervened_steps += int(active.sum())
        self.total_steps += active.numel()
        if done.any():
            interventions, steps = self.episode_interventions[done], self.episode_steps[done]
            self.finished_episodes += int(done.sum())
            self.finished_with_intervention += int((interventions > 0).sum())
            self.finished_intervention_steps += int(interventions.sum())
            self.finished_steps += int(steps.sum())
            self.episode_interventions[done] = 0
            self.episode_steps[done] = 0

    def intervention_stats(self) -> dict[str, float]:
        """Since the previous call (a log row): `intervention_rate`, the share of env steps the operator
        controlled; over the episodes that finished, `episodes_intervened` (share with any takeover) and
        `episode_intervention_rate` (share of their steps). Over the whole run: `intervention_rate_total`."""
        now = (
            self.intervened_steps,
            self.total_steps,
            self.finished_episodes,
            self.finished_with_intervention,
            self.finished_intervention_steps,
            self.finished_steps,
        )
        last, self._last_stats = self._last_stats, now
        steps, total, episodes, with_any, episode_steps, finished = (a - b for a, b in zip(now, last, strict=True))
        return {
            "intervention_rate": steps / total if total else 0.0,
            "intervention_rate_total": self.intervened_steps / self.total_steps if self.total_steps else 0.0,
            "episodes_intervened": with_any / episodes if episodes else 0.0,
            "episode_intervention_rate": episode_steps / finished if finished else 0.0,
        }


def intervention_metrics(env: object) -> dict[str, float]:
    """The intervention statistics of `env` when it is an InterventionEnv, else {} (for the runners' logs)."""
    stats = getattr(env, "intervention_stats", None)
    return stats() if callable(stats) else {}
