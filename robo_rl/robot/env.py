"""`RobotEnv`: a robot as one more `BatchedEnv` (num_envs 1), built from its profile, on a fixed real-time grid.

Its observation and action specs are the profile's, so a policy trained in simulation fine-tunes here and a policy
trained here deploys with policy_node unchanged. Each `step(action)`:
1. the operator's action replaces the policy's while teleop_node sends one (flagged `intervened`, stored as the
   executed action); the action goes through the profile's `SafetyFilter` (clip, rate limit, non-finite → safe),
   as in policy_node;
2. the command is sent, and the env waits for the next tick of its `dt` grid while messages arrive;
3. the observation is assembled from the latest fields. A step whose inputs are stale or missing, or whose command
   was the safe one, is not a valid transition: `info["valid"]` is False, it is counted (`invalid_steps`), and the
   runners do not store it;
4. reward from the profile's reward function (`robo_rl.robot.rewards`); the episode ends on the e-stop (which also
   stops the robot until released), on a safety-box violation (`violations(fields)`, when given) or after
   `max_steps` (truncation), or on the operator's success/failure/reset buttons.
Between episodes `reset` holds the safe command until every input is fresh again (or `reset_steps` of a scripted
reset, when given). ROS stays behind the `RobotLink` (`robo_rl.robot.link.RosLink`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import numpy as np
import torch

from robo_rl.envs import INFO_FINAL_OBS, INFO_SUCCESS, INFO_VALID
from robo_rl.hil.intervention import INFO_EXECUTED_ACTION, INFO_INTERVENED
from robo_rl.real.assembler import MissingFieldError, ObservationAssembler
from robo_rl.real.command import command_fields
from robo_rl.real.profile import RobotProfile
from robo_rl.real.safety import SafetyFilter
from robo_rl.robot.link import RobotLink
from robo_rl.spaces import SpaceSpec

Reward = Callable[[Mapping[str, float], float], float]
"""(observation fields after the step, dt) → reward."""


@dataclass(frozen=True)
class RobotEnvConfig:
    max_steps: int = 1500
    """Steps per episode before truncation (30 s for the car at 50 Hz)."""
    ready_timeout: float = 30.0
    """Seconds `reset` waits for every input to be fresh before it gives up (RuntimeError naming the silent ones)."""

    def __post_init__(self) -> None:
        if self.max_steps < 1 or not self.ready_timeout > 0:
            raise ValueError("max_steps must be at least 1 and ready_timeout positive")


class RobotEnv:
    """See the module docstring. `clock` is monotonic seconds; the link's `wait_until` advances through it."""

    num_envs = 1

    def __init__(
        self,
        profile: RobotProfile,
        link: RobotLink,
        reward: Reward,
        cfg: RobotEnvConfig = RobotEnvConfig(),
        violations: Callable[[Mapping[str, float]], list[str]] | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.profile, self.link, self.reward_fn, self.cfg = profile, link, reward, cfg
        self.violations = violations or (lambda fields: [])
        self.clock = clock
        self.device = torch.device("cpu")
        self.dt = profile.dt
        self.obs_spec = SpaceSpec(
            profile.obs_names,
            (-np.inf,) * len(profile.observations),
            (np.inf,) * len(profile.observations),
            tuple(o.unit for o in profile.observations),
        )
        actions = profile.actions
        self.action_spec = SpaceSpec(
            profile.action_names,
            tuple(a.low for a in actions),
            tuple(a.high for a in actions),
            tuple(a.unit for a in actions),
        )
        self.privileged_obs_spec = None
        self.spec = link.spec
        self.assembler = ObservationAssembler(profile.observations, profile.action_names, profile.safe_action)
        self.safety = SafetyFilter(profile.actions, profile.dt)
        self.safe = np.asarray(profile.safe_action, dtype=np.float64)
        self.tick = 0.0
        self.steps = 0
        self.obs = np.zeros(len(profile.observations), dtype=np.float32)
        self.invalid_steps = self.missed_ticks = self.episodes = self.interventions = self.total_steps = 0
        self.estop_presses = 0
        """Episodes the e-stop ended. (No `estop` attribute: on a robot the e-stop pauses, it does not end training.)"""

    # ------------------------------------------------------------------------------------------------ episodes

    def reset(self, seed: int | None = None) -> torch.Tensor:
        """Hold the safe command until every input is fresh and the observation complete; the first observation."""
        del seed  # the world decides
        self.safety.reset()
        self.assembler = ObservationAssembler(self.profile.observations, self.profile.action_names, self.safe)
        self.tick = self.clock()
        deadline = self.tick + self.cfg.ready_timeout
        while True:
            obs = self._observation()
            if obs is not None:
                break
            if self.clock() > deadline:
                silent = self.link.stale_inputs() or ["(fields missing)"]
                raise RuntimeError(f"robot not ready after {self.cfg.ready_timeout} s: no {', '.join(silent)}")
            self._send(self.safe)
            self._wait()
        self.steps = 0
        self.link.events()  # buttons pressed between episodes belong to none
        self.obs = obs
        return torch.as_tensor(obs).unsqueeze(0)

    # --------------------------------------------------------------------------------------------------- steps

    def step(
        self, action: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, dict[str, torch.Tensor]]:
        proposed = action.detach().cpu().numpy().reshape(-1).astype(np.float64)
        operator = self.link.intervention()
        executed = proposed if operator is None else operator
        result = self.safety(executed, self.obs)
        self._send(result.command)
        self.assembler.record_action(result.command)
        self._wait()
        obs = self._observation()
        valid = obs is not None and not result.fault
        if obs is None:
            obs = self.obs  # nothing new: repeat the last observation, never stored (invalid)
        fields = self.link.fields()
        self.steps += 1
        self.total_steps += 1
        events = self.link.events()
        estop = self.link.estopped()
        terminated = estop or bool(self.violations(fields)) or "failure" in events or "success" in events
        truncated = not terminated and (self.steps >= self.cfg.max_steps or "reset" in events or "discard" in events)
        reward = self.reward_fn(fields, self.dt) if valid else 0.0
        self.invalid_steps += int(not valid)
        self.interventions += int(operator is not None)
        done = terminated or truncated
        info = {
            INFO_FINAL_OBS: torch.as_tensor(obs).unsqueeze(0),
            INFO_VALID: torch.tensor([valid and "discard" not in events]),
            INFO_INTERVENED: torch.tensor([operator is not None and not result.fault]),
            INFO_EXECUTED_ACTION: torch.as_tensor(result.command, dtype=torch.float32).unsqueeze(0),
            INFO_SUCCESS: torch.tensor(["success" in events]),
        }
        self.estop_presses += int(estop)
        self.obs = obs
        next_obs = torch.as_tensor(obs).unsqueeze(0)
        if done:
            self.episodes += 1
            next_obs = self._between_episodes()
        as_bool = lambda flag: torch.tensor([flag])  # noqa: E731
        return next_obs, torch.tensor([reward], dtype=torch.float32), as_bool(terminated), as_bool(truncated), info

    def _between_episodes(self) -> torch.Tensor:
        """The safe command while the e-stop holds, then a reset: the next episode's first observation."""
        while self.link.estopped():
            self._send(self.safe)
            self._wait()
        return self.reset()

    def intervention_stats(self) -> dict[str, float]:
        """For the runner's metrics rows: the operator's share of the steps, episodes, invalid steps, missed ticks."""
        steps = max(self.total_steps, 1)
        return {
            "interventions": float(self.interventions),
            "intervention_share": self.interventions / steps,
            "robot_episodes": float(self.episodes),
            "estops": float(self.estop_presses),
            "missed_ticks": float(self.missed_ticks),
        }

    # ---------------------------------------------------------------------------------------------- plumbing

    def _observation(self) -> np.ndarray | None:
        if self.link.stale_inputs():
            return None
        try:
            return self.assembler(self.link.fields()).astype(np.float32)
        except MissingFieldError:
            return None

    def _send(self, command: np.ndarray) -> None:
        self.link.send(command_fields(self.spec, self.profile.action_names, command))

    def _wait(self) -> None:
        """Until the next tick of the dt grid; a tick already past is counted as missed and the grid moves on."""
        self.tick += self.dt
        now = self.clock()
        if now > self.tick + self.dt:
            self.missed_ticks += int((now - self.tick) / self.dt)
            self.tick = now
        self.link.wait_until(self.tick)
