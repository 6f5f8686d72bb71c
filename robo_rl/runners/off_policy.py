"""Training loop for off-policy algorithms (SAC, TD3, FQL, DSRL): step the batched env, store, update from replay.

One iteration = one `env.step` of all `num_envs` envs (num_envs transitions) followed by `updates_per_step`
gradient steps. Finished episodes store the env's `final_obs` as their next observation, so truncated
(time-out) transitions bootstrap correctly; `terminated` alone stops bootstrapping. The loop itself (stop
conditions, evaluations, logging, checkpoints) is `robo_rl.runners.loop.TrainingLoop`, with `SparseCadence`. Its
settings are `robo_rl.runners.off_policy_config`, what it sets up before the first step
`robo_rl.runners.off_policy_setup`, a learner elsewhere `robo_rl.runners.remote_learner`; the algorithm is whatever
keeps `robo_rl.algorithms.off_policy.OffPolicyAlgorithm`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from torch import nn

from robo_rl.algorithms.off_policy import OffPolicyAlgorithm
from robo_rl.capture import capture_backend
from robo_rl.distributed import LOCAL, Reducer
from robo_rl.envs import (
    INFO_COST,
    INFO_FINAL_OBS,
    INFO_FINAL_PRIVILEGED_OBS,
    INFO_PRIVILEGED_OBS,
    INFO_SUCCESS,
    INFO_VALID,
    BatchedEnv,
    ImageObs,
    ImageStepResult,
    StepResult,
    critic_obs_dim,
    image_specs_of,
    state_of,
)
from robo_rl.hil.actor_learner import LearnerStats
from robo_rl.hil.intervention import INFO_EXECUTED_ACTION, INFO_INTERVENED, intervention_metrics
from robo_rl.hil.pretrain import behaviour_clone
from robo_rl.image_spec import STATE_KEY
from robo_rl.runners.dagger import Imitation, TeacherPolicy, mix_actions, teacher_share
from robo_rl.runners.evaluate import evaluation_due
from robo_rl.runners.loop import Losses, TrainingLoop, critic_observation, on_interval
from robo_rl.runners.loop_config import LoopConfig
from robo_rl.runners.off_policy_config import OffPolicyRunnerConfig
from robo_rl.runners.off_policy_setup import captured_updates, check_camera_run, load_prior_buffer, load_weights
from robo_rl.runners.remote_learner import RemoteLearner, learner_metrics, send_transitions, start_learner
from robo_rl.runners.run_dir import RunDirectory
from robo_rl.storage import checkpoint
from robo_rl.storage.replay import ReplayBuffer, ReplayHistory, SymmetricSampler, Transitions, select_transitions
from robo_rl.storage.replay_log import ReplayLog, is_manifest, replay_directory


def transitions_of_step(
    obs: torch.Tensor | ImageObs,
    critic_obs: torch.Tensor,
    action: torch.Tensor,
    result: StepResult | ImageStepResult,
    is_demo: bool,
    intervened: torch.Tensor | None = None,
) -> Transitions:
    """The replay transitions of one batched env step from `obs` with normalized `action` ([-1, 1]).

    A task with a constraint has its step's `info["cost"]` stored (zeros without one).
    Finished episodes store the env's `final_obs` (and its privileged part) as the next observation, so that
    time-outs bootstrap from the state the episode was cut in. `intervened` `(N,)` flags the envs whose action
    came from an operator (None: none did). A camera env's dict observations give the state vectors and, as
    `images` / `next_images`, the frames (of `final_obs` too).
    """
    _, reward, terminated, truncated, info = result
    final_obs = info[INFO_FINAL_OBS]
    cost = info.get(INFO_COST)
    return Transitions(
        obs=state_of(obs),
        critic_obs=critic_obs,
        actions=action,
        rewards=reward,
        costs=torch.zeros_like(reward) if cost is None else cost.to(reward.dtype),
        next_obs=state_of(final_obs),
        next_critic_obs=critic_observation(final_obs, info, INFO_FINAL_PRIVILEGED_OBS),
        terminated=terminated,
        truncated=truncated,
        intervened=torch.zeros_like(terminated) if intervened is None else intervened.to(terminated.dtype),
        is_demo=torch.full_like(terminated, is_demo),
        images=_frames(obs),
        next_images=_frames(final_obs),
    )


def _frames(obs: torch.Tensor | ImageObs) -> dict[str, torch.Tensor] | None:
    """The camera frames of a camera env's observation dict; None for a state vector."""
    if not isinstance(obs, dict):
        return None
    return {name: frames for name, frames in obs.items() if name != STATE_KEY}


@dataclass(frozen=True)
class SparseCadence:
    """The off-policy cadence, where an iteration is a single env step: a metrics row (which flushes the episode
    statistics) for `learn`'s callback, on the evaluation grid, and with a run directory every `log_every`
    iterations and every save_interval; the run's log gets the evaluations' rows and every `log_every`-th;
    latest.pt is refreshed every save_interval iterations (no numbered snapshots: the replay buffer is large)."""

    log_every: int = 100

    def row_due(self, iteration: int, cfg: LoopConfig, callback: bool, run: bool) -> bool:
        return (
            callback
            or evaluation_due(iteration, cfg.max_iterations, cfg.eval_interval)
            or (run and (iteration % self.log_every == 0 or on_interval(iteration, cfg.save_interval)))
        )

    def logs(self, iteration: int, evaluated: bool) -> bool:
        return evaluated or iteration % self.log_every == 0

    def snapshot_due(self, iteration: int, cfg: LoopConfig) -> bool:
        return False

    def latest_due(self, iteration: int, cfg: LoopConfig) -> bool:
        return on_interval(iteration, cfg.save_interval)


class OffPolicyRunner(TrainingLoop[OffPolicyRunnerConfig]):
    """Owns the env loop of off-policy training: each iteration steps every env once into the replay buffer, then
    takes `updates_per_step` gradient steps (or leaves them to the learner process with `actor_learner`).

    Args: as `OnPolicyRunner`'s, with `algorithm` the SAC, TD3, FQL or DSRL instance (`OffPolicyAlgorithm`).
    """

    def __init__(
        self,
        env: BatchedEnv,
        algorithm: OffPolicyAlgorithm,
        cfg: OffPolicyRunnerConfig,
        seed: int,
        eval_env: BatchedEnv | None = None,
        run: RunDirectory | None = None,
        reducer: Reducer = LOCAL,
        precheck_env: BatchedEnv | None = None,
        teacher: TeacherPolicy | None = None,
    ) -> None:
        super().__init__(env, cfg, seed, eval_env, run, reducer, SparseCadence(), precheck_env)
        if (cfg.teacher is None) != (teacher is None):
            raise ValueError(
                "off_policy.teacher names the teacher run; the runner needs its TeacherPolicy (and only then)"
            )
        self.algorithm = algorithm
        self.teacher = teacher
        """DAgger's teacher (`off_policy.teacher`, `robo_rl.runners.dagger`), or None: reinforcement learning."""
        self.imitation = None if teacher is None else Imitation(algorithm.bc_actor(), cfg.teacher_learning_rate)
        self._labels: torch.Tensor | None = None
        """The teacher's normalized actions at the current step, stored in place of the executed ones."""
        self.cameras = image_specs_of(env)
        """The env's cameras, whose frames the replay buffers keep; () for a state-only env."""
        check_camera_run(cfg, self.cameras, algorithm)
        self.buffer_dims = (env.obs_spec.dim, critic_obs_dim(env), env.action_spec.dim)
        # With actor_learner the replay buffer lives in the learner process; this one stays empty.
        capacity = 1 if cfg.actor_learner else cfg.buffer_capacity
        self.buffer = ReplayBuffer(capacity, *self.buffer_dims, env.device, self.cameras)
        self.updates = (
            None if teacher else captured_updates(cfg, algorithm, self.buffer, self.cameras, reducer.world.size)
        )
        """The captured gradient steps with `off_policy.capture`, else None (the classic loop)."""
        if self.updates is not None:  # evaluations of a capturable eval env are captured too
            self.capture_backend = capture_backend(env.device)
        self.prior: ReplayBuffer | None = None
        self.sampler: ReplayBuffer | SymmetricSampler = self.buffer
        self.bc_losses: list[float] = []
        self._start_from_prior_and_weights(seed)
        self.remote: RemoteLearner | None = None
        """The learner elsewhere (`robo_rl.runners.remote_learner`), with actor_learner."""
        self.learner_stats: LearnerStats | None = None
        if cfg.actor_learner:
            prior = None if self.prior is None else self.prior.stored()
            self.remote, self.algorithm = start_learner(cfg, self.algorithm, env, self.buffer_dims, prior)
        self.generator = torch.Generator(device=env.device).manual_seed(seed)
        self.gradient_steps = 0
        self.update_credit = 0.0
        """Gradient steps owed under update_to_data, below one (carried to the next iteration)."""
        self.invalid_steps = 0
        """Env steps the env marked invalid (`INFO_VALID`: stale or missing inputs on hardware), not stored."""
        self.replay_log: ReplayLog | None = None
        """Chunk files of the replay buffer beside the latest.pt last written or restored."""
        self._reset_env()

    def _start_from_prior_and_weights(self, seed: int) -> None:
        """The prior buffer (`prior_buffer`, RLPD's symmetric sampling), the weights of `init_from`, normalizers
        fitted to the prior data, behaviour cloning on it (`bc_pretrain_steps`), and its drop (`keep_prior`)."""
        cfg, algorithm = self.cfg, self.algorithm
        if cfg.prior_buffer is not None:
            self.prior = load_prior_buffer(Path(cfg.prior_buffer), cfg.buffer_capacity, self.env)
            self.sampler = SymmetricSampler(self.buffer, self.prior, cfg.prior_fraction)
        if cfg.init_from is not None:
            load_weights(algorithm, Path(cfg.init_from), self.env)
        if self.prior is not None:
            self._fit_normalizers(self.prior)
        if cfg.bc_pretrain_steps > 0 and self.prior is not None:
            demos = self.prior.stored()
            actor = algorithm.bc_actor()  # a camera run's reads frames: the encoder learns with the actor
            self.bc_losses = behaviour_clone(actor, demos, cfg.bc_pretrain_steps, cfg.batch_size, seed=seed)
        if not cfg.keep_prior:
            self.prior, self.sampler = None, self.buffer

    def _fit_normalizers(self, data: ReplayBuffer) -> None:
        """Fit the algorithm's fixed observation normalizers to `data` the first time it asks (SAC's
        `normalize_obs`); fitted already (resumed) or without them, nothing happens."""
        if self.algorithm.needs_normalizers:
            self.algorithm.fit_normalizers(data.stored())

    def _action(self) -> torch.Tensor:
        if self.teacher is not None:
            return self._dagger_action(self.teacher)
        if self.env_steps < self.cfg.learning_starts and self.cfg.warmup == "random":
            shape = (self.env.num_envs, self.env.action_spec.dim)
            return torch.rand(shape, generator=self.generator, device=self.env.device) * 2 - 1
        return self.algorithm.act(self.obs)

    def _dagger_action(self, teacher: TeacherPolicy) -> torch.Tensor:
        """The executed action under DAgger: the teacher's with probability beta, else the student's; the teacher's
        (normalized, on the action box) is kept as this step's label."""
        labels = self.algorithm.scaler.normalize(teacher(self.critic_obs)).clamp(-1.0, 1.0)
        self._labels = labels
        share = teacher_share(self.cfg.teacher_start, self.cfg.teacher_steps, self.env_steps)
        return mix_actions(labels, self.algorithm.act(self.obs), share, self.generator)

    @torch.no_grad()
    def step(self) -> None:
        """One env step of every env, stored in the replay buffer (or sent to the learner elsewhere).

        Under an operator (`robo_rl.hil.InterventionEnv`), the stored action is the one executed, flagged
        `intervened`, and intervened transitions also go to the prior buffer (created empty when the run has
        none; not with `interventions_to_prior` false), which RLPD-style sampling draws `prior_fraction` of every
        batch from.
        """
        action = self._action()
        result = self.env.step(self.algorithm.scaler(action))
        info = result[4]
        intervened = info.get(INFO_INTERVENED)
        if intervened is not None:
            executed = self.algorithm.scaler.normalize(info[INFO_EXECUTED_ACTION])
            action = torch.where(intervened.unsqueeze(-1), executed, action)
        stored = action if self._labels is None else self._labels  # DAgger stores the teacher's labels
        transitions = transitions_of_step(self.obs, self.critic_obs, stored, result, False, intervened)
        if self.remote is None:
            self.algorithm.observe(transitions)  # a learner process observes what it is sent (actor_learner)
        valid = info.get(INFO_VALID)
        if valid is not None:  # hardware: stale or missing inputs are no transition (RobotEnv)
            self.invalid_steps += int((~valid).sum())
            transitions = select_transitions(transitions, valid)
            intervened = None if intervened is None else intervened[valid]
        if self.remote is not None:
            send_transitions(self.remote, transitions)
        else:
            self._store(transitions, intervened)
        next_obs, reward, terminated, truncated, info = result
        self.tracker.record(reward, terminated | truncated, info.get(INFO_SUCCESS), info.get(INFO_COST))
        self.obs, self.critic_obs = next_obs, critic_observation(next_obs, info, INFO_PRIVILEGED_OBS)
        self.env_steps += self.env.num_envs

    def _store(self, transitions: Transitions, intervened: torch.Tensor | None) -> None:
        """`transitions` into the replay buffer, and the intervened ones also into the prior buffer."""
        self.buffer.add(transitions)
        if self.cfg.interventions_to_prior and intervened is not None and bool(intervened.any()):
            self._intervention_buffer().add(select_transitions(transitions, intervened))

    def _intervention_buffer(self) -> ReplayBuffer:
        if self.prior is None:
            self.prior = ReplayBuffer(self.cfg.buffer_capacity, *self.buffer_dims, self.env.device, self.cameras)
            self.sampler = SymmetricSampler(self.buffer, self.prior, self.cfg.prior_fraction)
        return self.prior

    def sample_batch(self) -> Transitions:
        """One training batch: uniform from the online buffer, or RLPD's symmetric mix with the prior buffer."""
        return self.sampler.sample(self.cfg.batch_size, self.generator)

    def train_step(self) -> Losses:
        if self.remote is not None:  # the learner process trains
            return learner_metrics(self.remote)
        if self.env_steps < self.cfg.learning_starts or len(self.buffer) < self.cfg.batch_size:
            return {}
        self._fit_normalizers(self.buffer)
        metrics: Losses = {}
        count = self._updates_due()
        if count == 0:
            return metrics
        if self.updates is not None and self.sampler is self.buffer:  # interventions: the classic loop below
            warmup = self.cfg.critic_warmup_steps
            allowed = tuple(self.gradient_steps + i >= warmup for i in range(count))
            self.gradient_steps += count
            return self.updates.run(allowed, self.generator)
        for batch in self.sampler.sample_many(self.cfg.batch_size, count, self.generator):  # drawn at once
            if self.imitation is not None:  # DAgger: clone the teacher's labels, no critic
                metrics = self.imitation.update(batch)
                self.gradient_steps += 1
                continue
            update_actor = self.gradient_steps >= self.cfg.critic_warmup_steps
            metrics = self.algorithm.update(batch, update_actor=update_actor)
            self.gradient_steps += 1
        return metrics

    def _updates_due(self) -> int:
        """This iteration's gradient steps: updates_per_step, or update_to_data's share with its remainder carried."""
        if self.cfg.update_to_data is None:
            return self.cfg.updates_per_step
        self.update_credit += self.cfg.update_to_data * self.env.num_envs
        due = int(self.update_credit + 1e-9)  # 3 x 8/3 is 8 updates, not 7.999...
        self.update_credit = max(self.update_credit - due, 0.0)
        return due

    def _train_iteration(self) -> Losses:
        self.step()
        return self.train_step()

    def _steps_per_s(self, iteration_s: float) -> float:
        """The run's env steps over its training time."""
        return self.env_steps * self.reducer.world.size / max(self.wall_time, 1e-9)

    def _extra_metrics(self) -> dict[str, Any]:
        invalid = {"invalid_steps": self.invalid_steps} if self.invalid_steps else {}
        dagger = {}
        if self.teacher is not None:
            dagger = {"teacher_share": teacher_share(self.cfg.teacher_start, self.cfg.teacher_steps, self.env_steps)}
        return {**intervention_metrics(self.env), **invalid, **dagger}

    def _deterministic_actor(self) -> nn.Module:
        return self.algorithm.deterministic_policy()  # a camera policy's `act` takes the observation dict

    def _policy_state(self) -> dict[str, Any]:
        """What best.pt needs to rebuild the deterministic actor (`build_deployable_actor` reads the actor, and with
        cameras the encoder)."""
        return {"algorithm": self.algorithm.policy_state()}

    def _finish(self) -> None:
        robot = hasattr(self.env, "link")  # a robot (RobotEnv), where a stop is a stop
        if self.remote is not None:  # on a robot the learner drops what is still queued
            self.learner_stats = self.remote.close(drain=not robot)
            self.remote = None
        if robot:  # its link sends the safe command and leaves
            env: Any = self.env  # RobotEnv.close
            env.close()
        super()._finish()

    def state_dict(self) -> dict[str, Any]:
        return self._state(self.buffer.state_dict())

    def _state(self, buffer: dict[str, Any]) -> dict[str, Any]:
        """The runner's state with `buffer` (the replay buffer's state_dict, or a `ReplayLog` manifest)."""
        return {
            "algorithm": self.algorithm.state_dict(),
            "buffer": buffer,
            "prior_buffer": None if self.prior is None else self.prior.state_dict(),
            "gradient_steps": self.gradient_steps,
            "update_credit": self.update_credit,
            "generator": self.generator.get_state(),
            **({} if self.imitation is None else {"imitation_optimizer": self.imitation.optimizer.state_dict()}),
            **self.loop_state(),
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        if self.cfg.actor_learner:
            raise ValueError(
                "off_policy.actor_learner runs cannot resume: the critic and the replay buffer live in "
                "the learner process, and checkpoints hold the actor side only"
            )
        self.algorithm.load_state_dict(state["algorithm"])
        if self.updates is not None:
            self.updates.reset()  # the loaded optimizer state is new tensors
        if isinstance(state["buffer"], ReplayHistory):  # what `load` read from a latest.pt's chunk files
            self.buffer.load_history(state["buffer"])
        else:
            self.buffer.load_state_dict(state["buffer"])
        if self.prior is not None and state.get("prior_buffer") is not None:
            self.prior.load_state_dict(state["prior_buffer"])
        self.gradient_steps = int(state.get("gradient_steps", 0))
        self.update_credit = float(state.get("update_credit", 0.0))
        self.generator.set_state(state["generator"])
        if self.imitation is not None and "imitation_optimizer" in state:  # DAgger's Adam moments
            self.imitation.optimizer.load_state_dict(state["imitation_optimizer"])
        self.load_loop_state(state)

    def save(self, path: Path) -> None:
        """Write a checkpoint to `path`. A latest.pt keeps the file it replaces as previous.pt and holds the replay
        buffer as chunk files in replay/ beside it, of which this save writes only the new transitions
        (`robo_rl.storage.replay_log`); any other path gets a self-contained file, and so does a camera run's
        latest.pt (the chunk files hold vectors only)."""
        if not checkpoint.is_latest(path) or self.cameras:
            checkpoint.save_checkpoint(self.state_dict(), path)
            return
        log = self.replay_log
        if log is None or log.directory != replay_directory(path):
            log = ReplayLog(replay_directory(path))
        manifest = log.append(self.buffer)
        checkpoint.save_checkpoint(self._state(manifest), path)
        log.commit(manifest)
        self.replay_log = log

    def load(self, path: Path) -> None:
        """Restore a checkpoint written by `save`; CheckpointError naming the file (the checkpoint or one of its
        replay chunks) when one is damaged, before anything is changed."""
        state = checkpoint.load(path, self.env.device, required=("iteration", "buffer"))
        log = None
        if is_manifest(state["buffer"]):
            log = ReplayLog(replay_directory(path))
            state["buffer"] = log.restore(state["buffer"])
        self.load_state_dict(state)
        self.replay_log = log
