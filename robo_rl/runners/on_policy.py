"""Training loop for on-policy algorithms (PPO): collect a rollout from a batched env, update, log, save.

The loop itself (stop conditions, evaluations, logging, checkpoints) is `robo_rl.runners.loop.TrainingLoop`;
this module plugs in the rollout, the PPO update and PPO's cadence (`SnapshotCadence`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from torch import nn

from robo_rl.algorithms.ppo import PPO
from robo_rl.algorithms.ppo_capture import CapturedPPOUpdate
from robo_rl.capture import CAPTURE_MODES, CaptureMode, capture_backend, capture_enabled
from robo_rl.distributed import LOCAL, Reducer
from robo_rl.envs import INFO_FINAL_OBS, INFO_FINAL_PRIVILEGED_OBS, INFO_PRIVILEGED_OBS, INFO_SUCCESS, BatchedEnv
from robo_rl.modules.distributions import StochasticPolicy
from robo_rl.modules.recurrent import RecurrentActorCritic
from robo_rl.runners.device_rollout import DeviceRollout, rollout_unsupported
from robo_rl.runners.evaluate import evaluation_due
from robo_rl.runners.loop import Losses, TrainingLoop, critic_observation, on_interval
from robo_rl.runners.loop import TrainResult as TrainResult
from robo_rl.runners.loop import reset_critic_observation as reset_critic_observation
from robo_rl.runners.loop_config import LoopConfig, nest_loop_keys
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

    @classmethod
    def upgrade_keys(cls, data: Mapping[str, Any]) -> dict[str, Any]:
        """Older configs' flat loop keys (`runner.max_iterations`) moved into `loop` (robo_rl.config's hook)."""
        return nest_loop_keys(data)


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
        algorithm: PPO instance wrapping `policy`.
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
        algorithm: PPO,
        cfg: RunnerConfig,
        seed: int,
        eval_env: BatchedEnv | None = None,
        run: RunDirectory | None = None,
        reducer: Reducer = LOCAL,
        precheck_env: BatchedEnv | None = None,
    ) -> None:
        super().__init__(env, cfg, seed, eval_env, run, reducer, SnapshotCadence(), precheck_env)
        self.policy, self.algorithm = policy, algorithm
        num_steps = algorithm.cfg.num_steps
        self.recurrent = isinstance(policy, RecurrentActorCritic)
        state_size = policy.state_size if isinstance(policy, RecurrentActorCritic) else 0
        self.storage = RolloutStorage(
            num_steps, env.num_envs, env.obs_spec.dim, policy.critic_obs_dim, policy.action_dim, env.device, state_size
        )
        self.hidden = torch.zeros(env.num_envs, max(state_size, 1), device=env.device)
        """A policy with memory: each env's state before its next step (zeroed where an episode ended)."""
        self._device_rollout: DeviceRollout | None = None
        self._captured_update: CapturedPPOUpdate | None = None
        if self._captures(cfg.capture):
            self.capture_backend = capture_backend(env.device)
        self._reset_env()

    def _captures(self, mode: str) -> bool:
        """Whether the captured path runs: "always" (ValueError where it cannot), "auto" on CUDA where it can."""
        if not capture_enabled(mode, self.env.device):
            return False
        missing = rollout_unsupported(self.env, self.policy, self.reducer.world.size)
        if missing and mode == "always":
            raise ValueError(f"runner.capture=always needs {'; '.join(missing)}")
        return not missing

    @torch.no_grad()
    def collect(self) -> None:
        """Fill the rollout storage with `num_steps` steps of every env."""
        if self.capture_backend is not None:
            if self._device_rollout is None:
                self._device_rollout = DeviceRollout(self, self.capture_backend)
            self._device_rollout()
            return
        policy, storage, env = self.policy, self.storage, self.env
        if self.recurrent:  # the state at the rollout's start: the update replays each env's sequence from it
            storage.hidden_start.copy_(self.hidden)
        value, started = policy.value(self.critic_obs), torch.zeros_like(storage.starts[0])
        for _ in range(storage.num_steps):
            action, distribution = self._act()
            next_obs, reward, terminated, truncated, info = env.step(policy.scaler(action))
            done = terminated | truncated
            next_critic = critic_observation(next_obs, info, INFO_PRIVILEGED_OBS)
            final_critic = critic_observation(info[INFO_FINAL_OBS], info, INFO_FINAL_PRIVILEGED_OBS)
            # One critic pass for both: V(next obs) feeds the next step, V(final obs) bootstraps time-outs.
            both = policy.value(torch.cat([next_critic, final_critic]))
            next_value, final_value = both.chunk(2)
            storage.add(
                obs=self.obs,
                critic_obs=self.critic_obs,
                actions=action,
                log_probs=distribution.log_prob(action),
                values=value,
                next_values=torch.where(done, final_value, next_value),
                distribution=distribution.params(),
                rewards=reward,
                terminated=terminated,
                dones=done,
                starts=started,
            )
            self.tracker.record(reward, done, info.get(INFO_SUCCESS))
            if self.recurrent:  # a new episode starts from the reset state
                self.hidden = torch.where(done.unsqueeze(-1), torch.zeros_like(self.hidden), self.hidden)
            self.obs, self.critic_obs, value, started = next_obs, next_critic, next_value, done
        self.env_steps += storage.num_steps * env.num_envs

    def _act(self) -> tuple[torch.Tensor, Any]:
        """A sampled normalized action and its distribution at the current observation; a policy with memory
        also advances each env's state (`hidden`)."""
        if isinstance(self.policy, RecurrentActorCritic):
            action, distribution, self.hidden = self.policy.act(self.obs, self.hidden)
            return action, distribution
        return self.policy.act(self.obs)

    def _reset_env(self) -> None:
        super()._reset_env()
        self.hidden.zero_()

    def update(self) -> Losses:
        """PPO update on the collected rollout, then fold its observations into the normalizers.

        The statistics change only after the update: the rollout's log-probs and values were computed with the
        old statistics, and changing them first would shift every action distribution (a KL the adaptive
        learning rate would wrongly blame on the update). With capture on, the update is one captured block
        (`robo_rl.algorithms.ppo_capture`) and its losses stay on the device until a metrics row reads them.
        """
        losses: Losses
        if self.capture_backend is not None:
            if self._captured_update is None:
                self.algorithm.make_capturable()
                self._captured_update = CapturedPPOUpdate(self.algorithm, self.storage, self.capture_backend)
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
