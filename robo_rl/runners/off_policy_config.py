"""The off-policy runner's settings (`off_policy` in an experiment config) and its loop defaults.

A module of its own so that presets and `robo_rl.experiment` read them without importing the runner (replay
storage, learner processes, demonstrations).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from robo_rl.capture import CAPTURE_MODES, CaptureMode
from robo_rl.runners.loop_config import LoopConfig

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
    interventions_to_prior: bool = True
    """Store the operator's takeovers (intervened transitions) in the prior buffer too, besides the online buffer,
    so that `prior_fraction` of every batch keeps drawing on them, as HIL-SERL does (created empty when the run has
    no prior buffer). False: the online buffer only, like the policy's own steps."""
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
    teacher: str | None = None
    """Imitate a teacher instead of learning from rewards (DAgger, `robo_rl.runners.dagger`): a run directory whose
    deterministic policy (its best.pt, else latest.pt) labels every step with its action; it reads its observation
    by name from this task's state vector and privileged observation (a camera car that observes only its speed,
    `RaceConfig.camera_state`, has the whole state privileged). The envs execute the teacher's action with
    probability `teacher_start`, falling linearly to 0 over `teacher_steps` env steps, else the student's; the
    replay buffer stores the teacher's actions, and every gradient step clones them (the algorithm's cloning loss
    at `teacher_learning_rate`). No critic is trained. Not with actor_learner, a prior_buffer or an operator."""
    teacher_start: float = 1.0
    """DAgger's beta at the first step: the share of envs that execute the teacher's action."""
    teacher_steps: int = 20_000
    """Env steps (all envs together) over which beta falls to 0; from then on the student drives alone."""
    teacher_learning_rate: float = 1e-3
    """Adam step size of the cloning steps with a teacher."""

    def __post_init__(self) -> None:
        self._check_teacher()
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

    def _check_teacher(self) -> None:
        if not 0.0 <= self.teacher_start <= 1.0 or self.teacher_steps < 0 or not self.teacher_learning_rate > 0:
            raise ValueError("teacher_start must be in [0, 1], teacher_steps >= 0, teacher_learning_rate > 0")
        if self.teacher is not None and (self.actor_learner or self.prior_buffer is not None):
            setting = "actor_learner" if self.actor_learner else "prior_buffer"
            raise ValueError(
                f"off_policy.teacher (DAgger) trains in the env loop from its own labels: not with {setting}"
            )
