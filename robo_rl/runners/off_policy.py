"""Training loop for off-policy algorithms (SAC, TD3, FQL, DSRL): step the batched env, store, update from replay.

One iteration = one `env.step` of all `num_envs` envs (num_envs transitions) followed by `updates_per_step`
gradient steps. Finished episodes store the env's `final_obs` as their next observation, so truncated
(time-out) transitions bootstrap correctly; `terminated` alone stops bootstrapping. The loop itself (stop
conditions, evaluations, logging, checkpoints) is `robo_rl.runners.loop.TrainingLoop`, with `SparseCadence`.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path
from typing import Any, Literal, Protocol

import torch
from torch import nn

from robo_rl.capture import CAPTURE_MODES, CaptureMode, capture_backend, capture_enabled
from robo_rl.distributed import LOCAL, Reducer
from robo_rl.envs import (
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
from robo_rl.hil.actor_learner import ActorLearner, LearnerConfig, LearnerStats
from robo_rl.hil.demos import load_demo_frames, load_demos
from robo_rl.hil.intervention import INFO_EXECUTED_ACTION, INFO_INTERVENED, intervention_metrics
from robo_rl.hil.pretrain import behaviour_clone
from robo_rl.image_spec import STATE_KEY, ImageSpec
from robo_rl.runners.captured_updates import CapturedUpdates
from robo_rl.runners.evaluate import evaluation_due
from robo_rl.runners.loop import Losses, TrainingLoop, critic_observation, on_interval
from robo_rl.runners.loop_config import LoopConfig, nest_loop_keys
from robo_rl.runners.run_dir import RunDirectory
from robo_rl.storage import checkpoint
from robo_rl.storage.replay import (
    ReplayBuffer,
    ReplayHistory,
    SymmetricSampler,
    Transitions,
    select_transitions,
    transitions_to,
)
from robo_rl.storage.replay_log import ReplayLog, is_manifest, replay_directory
from robo_rl.task_record import read_task_record


def transitions_of_step(
    obs: torch.Tensor | ImageObs,
    critic_obs: torch.Tensor,
    action: torch.Tensor,
    result: StepResult | ImageStepResult,
    is_demo: bool,
    intervened: torch.Tensor | None = None,
) -> Transitions:
    """The replay transitions of one batched env step from `obs` with normalized `action` ([-1, 1]).

    Finished episodes store the env's `final_obs` (and its privileged part) as the next observation, so that
    time-outs bootstrap from the state the episode was cut in. `intervened` `(N,)` flags the envs whose action
    came from an operator (None: none did). A camera env's dict observations give the state vectors and, as
    `images` / `next_images`, the frames (of `final_obs` too).
    """
    _, reward, terminated, truncated, info = result
    final_obs = info[INFO_FINAL_OBS]
    return Transitions(
        obs=state_of(obs),
        critic_obs=critic_obs,
        actions=action,
        rewards=reward,
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


class OffPolicyAlgorithm(Protocol):
    """What the runner needs from SAC or TD3."""

    actor: nn.Module

    def act(self, obs: torch.Tensor, deterministic: bool = False) -> torch.Tensor: ...
    def update(self, batch: Transitions, update_actor: bool = True) -> dict[str, torch.Tensor]: ...
    def state_dict(self) -> dict: ...
    def load_state_dict(self, state: dict) -> None: ...


OFF_POLICY_LOOP = LoopConfig(max_iterations=20_000, eval_interval=1_000, eval_episodes=20, save_interval=10_000)
"""The off-policy runner's loop defaults: an iteration is a single env step, so the intervals are far longer than
on-policy; fewer evaluation episodes; latest.pt (with the replay buffer) every 10,000 iterations."""


@dataclass(frozen=True)
class OffPolicyRunnerConfig:
    """The off-policy runner's settings. An iteration is one `env.step` of every env (num_envs transitions into
    the replay buffer) and the gradient steps that follow it."""

    loop: LoopConfig = field(default_factory=lambda: OFF_POLICY_LOOP)
    """When to stop, evaluate and save (off-policy defaults: `OFF_POLICY_LOOP`)."""
    learning_starts: int = 1_000
    """Transitions collected with uniformly random actions before the first update."""
    updates_per_step: int = 1
    """Gradient steps per iteration (the update-to-data ratio is this / num_envs); see also update_to_data."""
    update_to_data: float | None = None
    """Gradient steps per stored transition, whatever num_envs is (replaces updates_per_step when set): each
    iteration takes the whole part of `update_to_data * num_envs` plus the remainder carried from earlier
    iterations, e.g. 0.25 with 64 envs is 16 updates per iteration, 0.01 with 64 envs one every 1.5625 iterations
    on average. None: updates_per_step per iteration."""
    batch_size: int = 256
    """Transitions per gradient step."""
    buffer_capacity: int = 1_000_000
    """Replay capacity in transitions (preallocated on the env's device)."""
    prior_buffer: str | None = None
    """Replay buffer file of demonstrations or interventions (`robo-rl collect` writes one): RLPD-style
    symmetric sampling draws `prior_fraction` of every batch from it. None trains from online data only."""
    prior_fraction: float = 0.5
    """Share of each batch drawn from the prior buffer when there is one (RLPD and HIL-SERL use 0.5)."""
    bc_pretrain_steps: int = 0
    """Behaviour-cloning steps of the actor on the prior buffer (demonstrations) before RL starts (0: none)."""
    keep_prior: bool = True
    """False: WSRL-style warm start: the prior buffer only pretrains the actor and is then dropped, so batches are
    online data (and later interventions) only. Needs bc_pretrain_steps > 0."""
    critic_warmup_steps: int = 0
    """Gradient steps that train only the critic (the actor waits), so that a pretrained actor is not pulled
    around by an untrained Q-function; counted from the first update."""
    actor_learner: bool = False
    """Learn in a separate process (robo_rl.hil.actor_learner), as SERL does: the env loop never waits for
    gradient steps, takes up new weights when the learner publishes them, and drops (counts) transitions the
    learner cannot keep up with. CPU only. Checkpoints then hold the actor side only, and resume is refused."""
    init_from: str | None = None
    """Start from another run's weights: a run directory (its checkpoints/latest.pt) or a checkpoint file of an
    off-policy run with the same observation and action names (checked against the run's task.yaml), e.g. a policy
    rehearsed in simulation (`robo-rl train --robot PROFILE --robot-link sim`) fine-tuned on the robot. The whole
    algorithm (actor, critics, temperature) when the checkpoint has it, else the actor; not its replay buffer."""
    learner_transport: Literal["process", "ros"] = "process"
    """With actor_learner: `process`, a learner process on this computer (shared memory); `ros`, a learner anywhere
    on the ROS graph (`robo-rl learn --robot PROFILE`, robo_rl.robot.topic_learner): transitions and weights travel
    over topics, so it may run on another machine. `ros` needs the robot through ROS (--robot)."""
    warmup: Literal["random", "policy"] = "random"
    """How the first `learning_starts` transitions are collected: uniformly random actions, or the (pretrained)
    policy itself (WSRL's warm-up rollouts)."""
    capture: CaptureMode = "auto"
    """Run each iteration's gradient steps as one captured graph (a CUDA graph: one replay instead of hundreds of
    kernel launches; `robo_rl.runners.captured_updates`), and evaluations of a capturable eval env too:
    "auto" (the default: where the env's device is CUDA), "always" or "never" (the classic loop). SAC and TD3
    only, in the env loop, without cameras, a prior buffer or several processes: "always" refuses the others
    (ValueError naming the setting), "auto" leaves them on the classic loop.
    Statistically the same algorithm; the random draws come in another order than the classic loop's."""

    def __post_init__(self) -> None:
        if self.capture not in CAPTURE_MODES:
            raise ValueError(f"capture must be one of {CAPTURE_MODES}, got {self.capture!r}")
        if self.capture == "always" and (self.actor_learner or self.prior_buffer is not None):
            setting = "actor_learner" if self.actor_learner else "prior_buffer"
            raise ValueError(
                f"off_policy.capture=always captures the env loop's updates from online data: not with {setting}"
            )
        if self.updates_per_step < 0 or self.learning_starts < 0:
            raise ValueError("updates_per_step and learning_starts must not be negative")
        if self.update_to_data is not None and not 0.0 <= self.update_to_data <= 1000.0:
            raise ValueError(
                f"update_to_data must be in [0, 1000] gradient steps per transition, got {self.update_to_data}"
            )
        if self.batch_size < 1 or self.buffer_capacity < 1:
            raise ValueError("batch_size and buffer_capacity must be at least 1")
        if not 0.0 <= self.prior_fraction <= 1.0:
            raise ValueError(f"prior_fraction must be in [0, 1], got {self.prior_fraction}")
        if self.bc_pretrain_steps < 0 or self.critic_warmup_steps < 0:
            raise ValueError("bc_pretrain_steps and critic_warmup_steps must not be negative")
        if (self.bc_pretrain_steps > 0 or not self.keep_prior) and self.prior_buffer is None:
            raise ValueError("bc_pretrain_steps and keep_prior=false need a prior_buffer of demonstrations")
        if self.update_to_data is not None and self.actor_learner:
            raise ValueError(
                "update_to_data is for updates in the env loop; the learner process takes updates_per_step"
            )
        if self.learner_transport == "ros" and not self.actor_learner:
            raise ValueError("learner_transport=ros is where the learner runs: it needs actor_learner=true")
        if not self.keep_prior and self.bc_pretrain_steps == 0:
            raise ValueError("keep_prior=false drops the demonstrations: set bc_pretrain_steps > 0 to learn from them")

    @classmethod
    def upgrade_keys(cls, data: Mapping[str, Any]) -> dict[str, Any]:
        """Older configs' flat loop keys (`off_policy.eval_interval`) moved into `loop` (robo_rl.config's hook)."""
        return nest_loop_keys(data)


def load_prior_buffer(path: Path, capacity: int, env: BatchedEnv) -> ReplayBuffer:
    """The transitions of `path` (a replay buffer file from `robo-rl collect`, or a .npz demo file from
    `robo-rl record-demos`) in a new buffer of `capacity` on `env`'s device.

    The copy has the run's capacity, so interventions can be added to it during training; its dimensions (and,
    for demo files, its observation and action names) must match the task's (ValueError naming the mismatch).
    """
    if not path.is_file():
        raise FileNotFoundError(f"off_policy.prior_buffer: {path} does not exist")
    dims = (env.obs_spec.dim, critic_obs_dim(env), env.action_spec.dim)
    cameras = image_specs_of(env)
    if path.suffix == ".npz":
        stored = with_demo_frames(load_demos(path, env), path, cameras, env.device)
    else:
        saved = ReplayBuffer.load(path, "cpu")
        names = ("obs_dim", "critic_obs_dim", "action_dim", "image_specs")
        for name, ours in zip(names, (*dims, cameras), strict=True):
            theirs = getattr(saved, name)
            if theirs != ours:
                raise ValueError(f"off_policy.prior_buffer: {path} has {name} {theirs}, the task needs {ours}")
        stored = saved.stored()
    if len(stored) == 0:
        raise ValueError(f"off_policy.prior_buffer: {path} holds no transitions")
    prior = ReplayBuffer(capacity, *dims, env.device, cameras)
    prior.add(transitions_to(stored, prior.device))
    return prior


def with_demo_frames(
    stored: Transitions, path: Path, cameras: tuple[ImageSpec, ...], device: torch.device
) -> Transitions:
    """`stored` (a demo file's vectors) with the file's camera frames, which must be the task's cameras exactly;
    a state-only task takes a file's vectors and leaves any frames."""
    if not cameras:
        return stored
    specs, frames = load_demo_frames(path)
    if specs != cameras:
        names = [spec.to_dict() for spec in specs] if specs else "no frames"
        raise ValueError(
            f"off_policy.prior_buffer: {path} has cameras {names}, the task needs {[c.to_dict() for c in cameras]}"
        )
    images = {name: torch.as_tensor(pair[0]).to(device) for name, pair in frames.items()}
    next_images = {name: torch.as_tensor(pair[1]).to(device) for name, pair in frames.items()}
    return replace(stored, images=images, next_images=next_images)


def fit_normalizers(algorithm: Any, data: Transitions) -> None:
    """Fit an algorithm's fixed observation normalizers to `data` the first time it asks (SAC's `normalize_obs`);
    algorithms without them, or fitted already (resumed), are left alone."""
    if getattr(algorithm, "needs_normalizers", False):
        algorithm.fit_normalizers(data)


def load_weights(algorithm: Any, source: Path, env: BatchedEnv) -> None:
    """`off_policy.init_from`: the weights of `source` (a run directory or a checkpoint file) into `algorithm`;
    ValueError naming what does not fit."""
    path = source / "checkpoints" / "latest.pt" if source.is_dir() else source
    if not path.is_file():
        raise FileNotFoundError(f"off_policy.init_from: {path} does not exist")
    run = path.parent.parent if path.parent.name == "checkpoints" else path.parent
    record = read_task_record(run)
    if record is not None:
        for kind, theirs, ours in (
            ("observation", record.specs.obs.names, env.obs_spec.names),
            ("action", record.specs.action.names, env.action_spec.names),
        ):
            if tuple(theirs) != tuple(ours):
                raise ValueError(f"off_policy.init_from: {run} has {kind} names {list(theirs)}, this run {list(ours)}")
    state = checkpoint.load(path, env.device, required=("algorithm",))["algorithm"]
    try:
        if set(state) == {"actor"}:  # an actor_learner run's checkpoint: the actor side only
            algorithm.actor.load_state_dict(state["actor"])
        elif "encoder" in state and "critic" not in state:  # a camera run's best.pt: the deployable policy
            algorithm.load_policy_state(state)
        else:
            algorithm.load_state_dict(state)
    except (KeyError, RuntimeError) as err:
        raise ValueError(f"off_policy.init_from: {path} does not fit this run's algorithm ({err})") from None


def check_camera_run(cfg: OffPolicyRunnerConfig, cameras: tuple[ImageSpec, ...], algorithm: Any) -> None:
    """ValueError naming the setting when a camera env meets what does not learn from frames yet: an algorithm
    without a camera policy, the learner process (its transport carries vectors), behaviour cloning before RL."""
    if not cameras:
        return
    if not hasattr(algorithm, "deterministic_camera_policy"):
        raise ValueError(f"{type(algorithm).__name__} does not learn from cameras; use sac (DrQ)")
    if cfg.actor_learner:
        raise ValueError("off_policy.actor_learner does not carry camera frames yet; train in the env loop")
    if cfg.bc_pretrain_steps > 0:
        raise ValueError("off_policy.bc_pretrain_steps clones a state actor; with cameras use sac.bc_weight")


def capture_refusal(
    cfg: OffPolicyRunnerConfig, algorithm: Any, cameras: tuple[ImageSpec, ...], world: int
) -> str | None:
    """Why this run's updates cannot be captured (`off_policy.capture`), or None."""
    if cfg.actor_learner or cfg.prior_buffer is not None:
        return "actor_learner and prior_buffer runs are not captured"
    if cameras:
        return "camera runs (DrQ) are not captured"
    if world > 1:
        return "runs over several processes are not captured (their gradient all-reduce)"
    problem = getattr(algorithm, "capture_problem", None)
    if problem is None:
        return f"{type(algorithm).__name__} updates are not captured (SAC and TD3 are)"
    reason: str | None = problem()
    return None if reason is None else f"{type(algorithm).__name__}: {reason}"


def captured_updates(
    cfg: OffPolicyRunnerConfig, algorithm: Any, buffer: ReplayBuffer, cameras: tuple[ImageSpec, ...], world: int
) -> CapturedUpdates | None:
    """The captured gradient steps `off_policy.capture` asks for, or None ("never", or "auto" where they cannot
    be); ValueError naming the setting when "always" cannot be honoured. Rebuilds the algorithm's optimizers capturable,
    so it comes before any update or checkpoint load."""
    if not capture_enabled(cfg.capture, buffer.device):
        return None
    refusal = capture_refusal(cfg, algorithm, cameras, world)
    if refusal is not None:
        if cfg.capture == "always":
            raise ValueError(f"off_policy.capture=always: {refusal}; use capture=auto or never")
        return None
    return CapturedUpdates(algorithm, buffer, cfg.batch_size, capture_backend(buffer.device))


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
    ) -> None:
        super().__init__(env, cfg, seed, eval_env, run, reducer, SparseCadence(), precheck_env)
        self.algorithm = algorithm
        self.cameras = image_specs_of(env)
        """The env's cameras, whose frames the replay buffers keep; () for a state-only env."""
        check_camera_run(cfg, self.cameras, algorithm)
        dims = (env.obs_spec.dim, critic_obs_dim(env), env.action_spec.dim)
        self.buffer_dims = dims
        # With actor_learner the replay buffer lives in the learner process; this one stays empty.
        capacity = 1 if cfg.actor_learner else cfg.buffer_capacity
        self.buffer = ReplayBuffer(capacity, *dims, env.device, self.cameras)
        self.prior: ReplayBuffer | None = None
        self.sampler: ReplayBuffer | SymmetricSampler = self.buffer
        self.updates = captured_updates(cfg, algorithm, self.buffer, self.cameras, reducer.world.size)
        """The captured gradient steps with `off_policy.capture`, else None (the classic loop)."""
        if self.updates is not None:  # evaluations of a capturable eval env are captured too
            self.capture_backend = capture_backend(env.device)
        if cfg.prior_buffer is not None:
            self.prior = load_prior_buffer(Path(cfg.prior_buffer), cfg.buffer_capacity, env)
            self.sampler = SymmetricSampler(self.buffer, self.prior, cfg.prior_fraction)
        if cfg.init_from is not None:
            load_weights(algorithm, Path(cfg.init_from), env)
        if self.prior is not None:
            fit_normalizers(algorithm, self.prior.stored())
        self.bc_losses: list[float] = []
        if cfg.bc_pretrain_steps > 0 and self.prior is not None:
            demos = self.prior.stored()
            self.bc_losses = behaviour_clone(algorithm.actor, demos, cfg.bc_pretrain_steps, cfg.batch_size, seed=seed)
        if not cfg.keep_prior:
            self.prior, self.sampler = None, self.buffer
        self.remote: Any = None
        """The learner elsewhere (ActorLearner, or a TopicActor over ROS), with actor_learner."""
        self.learner_stats: LearnerStats | None = None
        if cfg.actor_learner:
            self._start_learner()
        self.generator = torch.Generator(device=env.device).manual_seed(seed)
        self.gradient_steps = 0
        self.update_credit = 0.0
        """Gradient steps owed under update_to_data, below one (carried to the next iteration)."""
        self.invalid_steps = 0
        """Env steps the env marked invalid (`INFO_VALID`: stale or missing inputs on hardware), not stored."""
        self.replay_log: ReplayLog | None = None
        """Chunk files of the replay buffer beside the latest.pt last written or restored."""
        self._reset_env()

    def _start_learner(self) -> None:
        if self.cfg.learner_transport == "ros":
            make = getattr(self.env, "topic_actor", None)
            if make is None:
                raise ValueError("off_policy.learner_transport=ros needs the robot through ROS (robo-rl train --robot)")
            self.remote = make(self.algorithm)
            return
        if self.env.device.type != "cpu":
            raise ValueError("off_policy.actor_learner runs on the CPU only")
        cfg = self.cfg
        learner = LearnerConfig(
            buffer_capacity=cfg.buffer_capacity,
            batch_size=cfg.batch_size,
            learning_starts=cfg.learning_starts,
            updates_per_batch=cfg.updates_per_step,
            prior_fraction=cfg.prior_fraction,
            critic_warmup_steps=cfg.critic_warmup_steps,
        )
        prior = None if self.prior is None else self.prior.stored()
        self.remote = ActorLearner(partial(copy.deepcopy, self.algorithm), self.buffer_dims, learner, prior)
        self.algorithm = self.remote.algorithm  # acts with the weights the learner publishes
        self.remote.wait_ready()

    def _action(self) -> torch.Tensor:
        if self.env_steps < self.cfg.learning_starts and self.cfg.warmup == "random":
            shape = (self.env.num_envs, self.env.action_spec.dim)
            return torch.rand(shape, generator=self.generator, device=self.env.device) * 2 - 1
        return self.algorithm.act(self.obs)

    @torch.no_grad()
    def step(self) -> None:
        """One env step of every env, stored in the replay buffer.

        Under an operator (`robo_rl.hil.InterventionEnv`), the stored action is the one executed, flagged
        `intervened`, and intervened transitions also go to the prior buffer (created empty when the run has
        none), which RLPD-style sampling draws `prior_fraction` of every batch from.
        """
        action = self._action()
        result = self.env.step(self.algorithm.actor.scaler(action))
        info = result[4]
        intervened = info.get(INFO_INTERVENED)
        if intervened is not None:
            executed = self.algorithm.actor.scaler.normalize(info[INFO_EXECUTED_ACTION])
            action = torch.where(intervened.unsqueeze(-1), executed, action)
        transitions = transitions_of_step(self.obs, self.critic_obs, action, result, False, intervened)
        valid = info.get(INFO_VALID)
        if valid is not None:  # hardware: stale or missing inputs are no transition (RobotEnv)
            self.invalid_steps += int((~valid).sum())
            transitions = select_transitions(transitions, valid)
            intervened = None if intervened is None else intervened[valid]
        if self.remote is not None:
            self.remote.check_alive()  # a dead learner stops training (and with it the robot), never silently
            self.remote.refresh()
            if len(transitions):
                self.remote.send(transitions)
        else:
            self.buffer.add(transitions)
            if intervened is not None and bool(intervened.any()):
                self._intervention_buffer().add(select_transitions(transitions, intervened))
        next_obs, reward, terminated, truncated, info = result
        self.tracker.record(reward, terminated | truncated, info.get(INFO_SUCCESS))
        self.obs, self.critic_obs = next_obs, critic_observation(next_obs, info, INFO_PRIVILEGED_OBS)
        self.env_steps += self.env.num_envs

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
            return {"learner_dropped": float(self.remote.dropped), "policy_version": float(self.remote.loaded_version)}
        if self.env_steps < self.cfg.learning_starts or len(self.buffer) < self.cfg.batch_size:
            return {}
        fit_normalizers(self.algorithm, self.buffer.stored())
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
        return {**intervention_metrics(self.env), **invalid}

    def _deterministic_actor(self) -> nn.Module:
        if self.cameras:
            return self.algorithm.deterministic_camera_policy()  # type: ignore[attr-defined]  # evaluate calls .act
        return self.algorithm.actor.deterministic_actor()

    def _policy_state(self) -> dict[str, Any]:
        """What best.pt needs to rebuild the deterministic actor (`build_deployable_actor` reads the actor, and with
        cameras the encoder)."""
        if self.cameras:
            return {"algorithm": self.algorithm.policy_state()}  # type: ignore[attr-defined]
        return {"algorithm": {"actor": self.algorithm.actor.state_dict()}}

    def _finish(self) -> None:
        if self.remote is not None:  # on a robot, a stop is a stop: the learner drops what is still queued
            self.learner_stats = self.remote.close(drain=not hasattr(self.env, "link"))
            self.remote = None
        if hasattr(self.env, "link"):  # a robot (RobotEnv): its link sends the safe command and leaves
            self.env.close()
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
