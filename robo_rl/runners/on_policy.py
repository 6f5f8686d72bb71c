"""Training loop for on-policy algorithms (PPO): collect a rollout from a batched env, update, log, save.

The loop itself (stop conditions, evaluations, logging, checkpoints) is `robo_rl.runners.loop.TrainingLoop`;
this module plugs in the rollout (`robo_rl.runners.rollout`, or its captured form
`robo_rl.runners.device_rollout`), the algorithm's update (an `OnPolicyUpdate`) and PPO's cadence
(`SnapshotCadence`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from torch import nn

from robo_rl.algorithms.on_policy_update import OnPolicyUpdate
from robo_rl.capture import CAPTURE_MODES, CaptureMode, capture_backend, capture_enabled
from robo_rl.distributed import LOCAL, Reducer
from robo_rl.envs import BatchedEnv, StepResult
from robo_rl.modules.distributions import ActionDistribution, StochasticPolicy
from robo_rl.modules.recurrent import RecurrentActorCritic
from robo_rl.runners.device_rollout import DeviceRollout, rollout_unsupported
from robo_rl.runners.evaluate import evaluation_due
from robo_rl.runners.loop import IterationStopped, Losses, TrainingLoop, on_interval
from robo_rl.runners.loop import TrainResult as TrainResult
from robo_rl.runners.loop_config import LoopConfig
from robo_rl.runners.rollout import Rollout, RolloutCursor, run_rollout
from robo_rl.runners.run_dir import RunDirectory
from robo_rl.storage import checkpoint
from robo_rl.storage.rollout import RolloutStorage


@dataclass(frozen=True)
class RunnerConfig:
    """The on-policy runner's settings. An iteration is one rollout of `ppo.num_steps` steps of every env and the
    PPO update on it."""

    loop: LoopConfig = field(default_factory=LoopConfig)
    """When to stop, evaluate and save (on-policy defaults: LoopConfig's own)."""
    capture: CaptureMode = "auto"
    """Run each rollout, PPO update and evaluation as one captured graph (robo_rl.capture: CUDA graphs, no host
    sync inside): "auto" (the default: where the env is on CUDA and the env, policy and process count allow it; the
    classic loop elsewhere), "always" (ValueError where it cannot; on the CPU the same code runs eagerly), "never"
    (the classic loop). Needs a capturable env (robo_rl.envs.CapturableEnv), the Gaussian ActorCritic and a single
    process. On a GPU, `task.config.compile=true` (and `task.eval_config.compile=true`) fuses the quadrotor step
    inside the graph: 30x the eager simulator at 262k envs, for about 20 s of compilation per env size
    (docs/BENCHMARKS.md, "GPU path")."""

    def __post_init__(self) -> None:
        if self.capture not in CAPTURE_MODES:
            raise ValueError(f"runner.capture must be one of {CAPTURE_MODES}, got {self.capture!r}")


@dataclass(frozen=True)
class SnapshotCadence:
    """PPO's cadence: a metrics row every iteration, every row logged; a numbered snapshot every `save_interval`
    iterations; latest.pt with it and on every iteration of the evaluation grid, whether rank 0 evaluated or skipped
    (so every rank saves on the same iterations)."""

    def row_due(self, iteration: int, cfg: LoopConfig, callback: bool, run: bool) -> bool:
        return True

    def logs(self, iteration: int, evaluated: bool) -> bool:
        return True

    def snapshot_due(self, iteration: int, cfg: LoopConfig) -> bool:
        return on_interval(iteration, cfg.save_interval)

    def latest_due(self, iteration: int, cfg: LoopConfig) -> bool:
        return evaluation_due(iteration, cfg.max_iterations, cfg.eval_interval)


class OnPolicyRunner(TrainingLoop[RunnerConfig]):
    """Owns the env loop of PPO training; the algorithm only sees filled rollout storage.

    Args:
        env: training env.
        policy: the policy being trained (`ActorCritic`, `ReinFlowPolicy`, ...).
        algorithm: the update of `policy` (PPO: `robo_rl.algorithms.on_policy_update.OnPolicyUpdate`).
        cfg: loop settings.
        seed: seeds torch and the env stream.
        eval_env: env for deterministic evaluation (its num_envs = episodes per evaluation); None skips it.
        run: run directory to log and checkpoint into; None keeps everything in memory (tests).
        reducer: the processes' collectives (several processes: gradients averaged).
        precheck_env: the env of the evaluation's pre-check (`LoopConfig.eval_precheck_episodes`), or None.
    """

    def __init__(
        self,
        env: BatchedEnv,
        policy: StochasticPolicy,
        algorithm: OnPolicyUpdate,
        cfg: RunnerConfig,
        seed: int,
        eval_env: BatchedEnv | None = None,
        run: RunDirectory | None = None,
        reducer: Reducer = LOCAL,
        precheck_env: BatchedEnv | None = None,
    ) -> None:
        super().__init__(env, cfg, seed, eval_env, run, reducer, SnapshotCadence(), precheck_env)
        self.policy, self.algorithm = policy, algorithm
        state_size = policy.state_size if isinstance(policy, RecurrentActorCritic) else 0
        self.storage = RolloutStorage(
            algorithm.num_steps,
            env.num_envs,
            env.obs_spec.dim,
            policy.critic_obs_dim,
            policy.action_dim,
            env.device,
            state_size,
        )
        hidden = torch.zeros(env.num_envs, state_size, device=env.device) if state_size else None
        self.cursor = RolloutCursor(torch.zeros(0), torch.zeros(0), hidden)
        """The training envs' observations and the policy's memory; `_reset_env` sets the observations."""
        self.rollout = Rollout(env, policy, self.storage, self.tracker, self.cursor)
        self._device_rollout: DeviceRollout | None = None
        self._captured_update: Callable[[], Losses] | None = None
        if self._captures(cfg.capture):
            self.capture_backend = capture_backend(env.device)
        self._reset_env()

    @property
    def obs(self) -> Any:
        """The training envs' current observations (the cursor's)."""
        return self.cursor.obs

    @obs.setter
    def obs(self, value: Any) -> None:
        self.cursor.obs = value

    @property
    def critic_obs(self) -> torch.Tensor:
        """The critic's input at the current observations (the cursor's)."""
        return self.cursor.critic_obs

    @critic_obs.setter
    def critic_obs(self, value: torch.Tensor) -> None:
        self.cursor.critic_obs = value

    @property
    def hidden(self) -> torch.Tensor | None:
        """A policy with memory: each env's state before its next step (zeroed where an episode ended)."""
        return self.cursor.hidden

    def _captures(self, mode: str) -> bool:
        """Whether the captured path runs: "always" (ValueError where it cannot), "auto" on CUDA where it can."""
        if not capture_enabled(mode, self.env.device):
            return False
        missing = rollout_unsupported(self.env, self.policy, self.reducer.world.size)
        if missing and mode == "always":
            raise ValueError(f"runner.capture=always needs {'; '.join(missing)}")
        return not missing

    def collect(self) -> None:
        """Fill the rollout storage with `num_steps` steps of every env: one captured block where capture is on.

        The eager loop checks `stop_requested` before each step; where it turns True the partial rollout is dropped
        (the envs and the cursor stay where they are, so a checkpoint saved now resumes from there) and
        `IterationStopped` is raised."""
        if self.capture_backend is not None:
            if self._device_rollout is None:
                self._device_rollout = DeviceRollout(self.rollout, self.capture_backend)
            self._device_rollout()
            steps = self.storage.num_steps
        else:
            steps = run_rollout(self.rollout, self._act, self._step_env, self.stop_requested)
        self.env_steps += steps * self.env.num_envs
        if steps < self.storage.num_steps:
            self.storage.clear()
            raise IterationStopped

    def _act(self, t: int, obs: Any) -> tuple[torch.Tensor, ActionDistribution]:
        """A sampled normalized action and its distribution at `obs`; a policy with memory also advances each env's
        state (the cursor's `hidden`)."""
        if isinstance(self.policy, RecurrentActorCritic):
            action, distribution, self.cursor.hidden = self.policy.act(obs, self.cursor.hidden)
            return action, distribution
        return self.policy.act(obs)

    def _step_env(self, t: int, action: torch.Tensor) -> StepResult:
        return self.env.step(action)

    def _reset_env(self) -> None:
        super()._reset_env()
        if self.cursor.hidden is not None:
            self.cursor.hidden.zero_()

    def update(self) -> Losses:
        """The algorithm's update on the collected rollout, then fold its observations into the normalizers.

        The statistics change only after the update: the rollout's log-probs and values were computed with the
        old statistics, and changing them first would shift every action distribution (a KL the adaptive
        learning rate would wrongly blame on the update). With capture on, the update is one captured block
        (`OnPolicyUpdate.captured_update`) and its losses stay on the device until a metrics row reads them.
        """
        losses: Losses
        if self.capture_backend is not None:
            if self._captured_update is None:
                self._captured_update = self.algorithm.captured_update(self.storage, self.capture_backend)
            losses = self._captured_update()
        else:
            losses = self.algorithm.update(self.storage)
        obs, critic_obs = self.storage.obs.flatten(0, 1), self.storage.critic_obs.flatten(0, 1)
        self.policy.update_normalizers(obs, critic_obs, self.reducer)
        self.storage.clear()
        return losses

    def _train_iteration(self) -> Losses:
        self.collect()
        return self.update()

    def _steps_per_s(self, iteration_s: float) -> float:
        """This iteration's rollout over its duration."""
        return self.storage.num_steps * self.env.num_envs * self.reducer.world.size / iteration_s

    def _deterministic_actor(self) -> nn.Module:
        return self.policy.deterministic_actor()

    def _policy_state(self) -> dict[str, Any]:
        """What best.pt needs to rebuild the deterministic actor."""
        return {"policy": self.policy.state_dict()}

    def state_dict(self) -> dict[str, Any]:
        return {"policy": self.policy.state_dict(), "algorithm": self.algorithm.state_dict(), **self.loop_state()}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.policy.load_state_dict(state["policy"])
        self.algorithm.load_state_dict(state["algorithm"])
        self.load_loop_state(state)

    def save(self, path: Path) -> None:
        """Write a checkpoint to `path` atomically; a latest.pt keeps the file it replaces as previous.pt."""
        checkpoint.save_checkpoint(self.state_dict(), path)

    def load(self, path: Path) -> None:
        """Restore a checkpoint; CheckpointError naming the file when it is damaged, before anything changes."""
        self.load_state_dict(checkpoint.load(path, self.env.device, required=("iteration",)))
