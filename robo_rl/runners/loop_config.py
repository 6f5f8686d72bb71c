"""The training loop's settings, shared by both runners: when to stop, evaluate and save.

`RunnerConfig` (PPO, ReinFlow) and `OffPolicyRunnerConfig` (SAC, TD3, FQL, DSRL) each hold one as their `loop`
field, with defaults of their own; `robo_rl.runners.loop.TrainingLoop` reads it. An *iteration* is one turn of the
loop, and its size depends on the runner:

- on-policy: one rollout of `ppo.num_steps` steps of every env, then the PPO update;
- off-policy: one `env.step` of every env, then `updates_per_step` (or `update_to_data`) gradient steps.

Only the standard library is used (`robo_rl.real` loads configs without torch).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class LoopConfig:
    max_iterations: int = 300
    """Upper bound on iterations (see the module docstring for what an iteration is)."""
    target_return: float | None = None
    """Stop as soon as a deterministic evaluation's mean return reaches this; None trains all iterations."""
    target_success_rate: float | None = None
    """Stop once an evaluation's success rate (tasks that define success) reaches this, e.g. 0.95; with
    target_return too, both must be reached. None: no success target."""
    max_eval_cost: float | None = None
    """A condition on the targets for tasks with a constraint (`info["cost"]`): they count as reached only where the
    evaluation's mean cost per episode is at most this. None: costs do not gate."""
    eval_interval: int = 5
    """Iterations between deterministic evaluations (0: evaluate only at the end)."""
    eval_min_train_success: float | None = None
    """Skip a due periodic evaluation while the success rate of the training episodes that ended since the last
    log is below this (tasks that report success). The stochastic training policy usually does worse than the
    deterministic evaluated one, so set it below the target. None: evaluate whenever due."""
    eval_sequential: bool = False
    """Stop an evaluation for the success gate (`target_success_rate`, without a `target_return`) at the step
    whose finished episodes make its outcome certain (robo_rl.runners.gate_test; the same outcome as the whole
    evaluation): a failing policy costs its first crashes instead of whole episodes. Its metrics then cover the
    episodes that had finished (`eval_gate`: 1 pass, 0 fail)."""
    eval_episodes: int = 100
    """Episodes per evaluation, run in parallel as one batched env."""
    eval_precheck_episodes: int = 0
    """> 0, with a `target_success_rate`: before a due periodic evaluation, this many deterministic episodes of
    their own (another batched env, held-out initial states of another seed) are flown first, and the evaluation
    runs only when their success rate reaches `target_success_rate - eval_precheck_margin`. A cheap deterministic
    test of whether the costly gate evaluation can pass: unlike `eval_min_train_success` it judges the policy that
    is evaluated, not the exploring one (whose success can lag the deterministic policy's by tens of points). The
    gate itself is still the whole evaluation. The pre-check stops once its outcome is certain (a failing policy
    after its first few crashes). 0: off. The row's `eval_precheck_success_rate` records each one that ran to its
    end."""
    eval_precheck_margin: float = 0.05
    """How far below the target the pre-check's success rate may be and still let the evaluation run: with 100
    episodes and 0.05, a policy that would pass the 95 % gate with 96 % fails the pre-check (< 90/100) with
    probability 0.8 % (binomial), and only delays that evaluation to a later iteration."""
    save_interval: int = 50
    """Iterations between scheduled checkpoints (0: none). What a checkpoint is differs, because an off-policy
    checkpoint carries the replay buffer: on-policy, a numbered snapshot checkpoints/model_XXXXXX.pt and
    latest.pt with it (latest.pt is also refreshed on every iteration of the evaluation grid); off-policy,
    latest.pt only, replay buffer included (no numbered snapshots)."""
    save_every_s: float = 60.0
    """Also refresh latest.pt before more than this many seconds of training would be lost to a crash (SIGKILL,
    power cut); off-policy, its replay buffer is written incrementally, only the transitions added since the last
    save. 0: by save_interval (and, on-policy, evaluations) only."""

    def __post_init__(self) -> None:
        if self.max_iterations < 0 or self.eval_interval < 0 or self.save_interval < 0:
            raise ValueError("max_iterations, eval_interval and save_interval must not be negative")
        if not self.save_every_s >= 0:
            raise ValueError(f"save_every_s must not be negative, got {self.save_every_s}")
        if self.eval_episodes < 1:
            raise ValueError(f"eval_episodes must be at least 1, got {self.eval_episodes}")
        if self.eval_precheck_episodes < 0:
            raise ValueError(f"eval_precheck_episodes must not be negative, got {self.eval_precheck_episodes}")
        if not 0.0 <= self.eval_precheck_margin < 1.0:
            raise ValueError(f"eval_precheck_margin must lie in [0, 1), got {self.eval_precheck_margin}")
        if self.max_eval_cost is not None and not self.max_eval_cost >= 0:
            raise ValueError(f"max_eval_cost must not be negative, got {self.max_eval_cost}")
