"""Distilling a teacher into a student with memory: DAgger over whole sequences (RAPTOR's meta-imitation step).

RAPTOR (Eschmann, Albani, Loianno 2025) trains teachers that know their quadrotor and distills them into one
recurrent student that must infer the quadrotor from what it observes; RMA (Kumar et al. 2021) and DAgger (Ross et
al. 2011) give the recipe: the student flies (after a first stretch where the teacher's actions are executed with
probability `teacher_start`, decaying to 0), the teacher labels every state it visits, and the student regresses the
teacher's actions over whole sequences, its memory carried from the rollout's start and zeroed at episode starts,
with gradients through time (truncated at the rollout's length).

The teacher is any deterministic actor of `cat(obs, privileged_obs)` (`robo_rl.sim.privileged_actor`: a PPO policy
trained on the task whose actor also sees the hidden parameters); the student a
`robo_rl.modules.recurrent.RecurrentActorCritic` whose mean is trained (its log-std and critic are left for a PPO
fine-tuning). The loss is the squared error in normalized actions (the action bounds map to [-1, 1]).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import nn

from robo_rl.distributed import LOCAL, update_normalizer
from robo_rl.envs import INFO_SUCCESS, BatchedEnv
from robo_rl.modules.normalizer import EmpiricalNormalizer
from robo_rl.modules.recurrent import RecurrentActorCritic

Teacher = Callable[[torch.Tensor], torch.Tensor]
"""cat(obs, privileged_obs) `(N, obs_dim + privileged_dim)` -> env action `(N, action_dim)`."""


@dataclass(frozen=True)
class DistillConfig:
    num_steps: int = 32
    """Steps of every env per iteration: the sequences the student learns from (gradients through them)."""
    num_epochs: int = 2
    """Passes over each iteration's sequences."""
    num_minibatches: int = 4
    """Minibatches of whole env sequences per epoch."""
    learning_rate: float = 1e-3
    """Adam step size."""
    max_grad_norm: float = 1.0
    """Gradient-norm clip of the student's actor."""
    teacher_start: float = 1.0
    """Probability that an env executes the teacher's action at the first iteration (DAgger's beta)..."""
    teacher_iterations: int = 20
    """...falling linearly to 0 over this many iterations; from then on the student flies alone."""

    def __post_init__(self) -> None:
        positive: dict[str, float] = {"num_steps": self.num_steps, "num_epochs": self.num_epochs}
        positive |= {"num_minibatches": self.num_minibatches, "learning_rate": self.learning_rate}
        bad = [name for name, value in positive.items() if not value > 0]
        if bad or not 0.0 <= self.teacher_start <= 1.0 or self.teacher_iterations < 0:
            raise ValueError(
                f"DistillConfig: need positive {bad or 'sizes'}, teacher_start in [0, 1], teacher_iterations >= 0"
            )

    def teacher_share(self, iteration: int) -> float:
        """DAgger's beta at `iteration` (0-based)."""
        if self.teacher_iterations == 0:
            return 0.0
        return self.teacher_start * max(0.0, 1.0 - iteration / self.teacher_iterations)


@dataclass
class Sequences:
    """One iteration's rollout, `(T, N, ...)`: what the student saw and what the teacher would have done."""

    obs: torch.Tensor
    targets: torch.Tensor
    """The teacher's actions in normalized units `(T, N, action_dim)`."""
    starts: torch.Tensor
    """True where an episode starts at step t (the state is zeroed before it)."""
    hidden: torch.Tensor
    """The student's state `(N, state)` at the rollout's first step."""


class Distillation:
    """Runs DAgger iterations of `student` on `env` (its `privileged_obs` is the teacher's extra input)."""

    def __init__(
        self, student: RecurrentActorCritic, teacher: Teacher, env: BatchedEnv, cfg: DistillConfig, seed: int = 0
    ) -> None:
        if getattr(env, "privileged_obs_spec", None) is None:
            raise ValueError("distillation needs an env with a privileged observation (the teacher's extra input)")
        self.student, self.teacher, self.env, self.cfg = student, teacher, env, cfg
        params = [*student.core.parameters(), *student.head.parameters()]
        self.optimizer = torch.optim.Adam(params, lr=cfg.learning_rate)
        self.generator = torch.Generator(device=env.device).manual_seed(seed)
        self.obs = env.reset(seed=seed)
        self.hidden = student.initial_state(env.num_envs, env.device)
        self.started = torch.zeros(env.num_envs, dtype=torch.bool, device=env.device)
        self.iteration = 0
        self.successes: list[float] = []

    @torch.no_grad()
    def collect(self) -> Sequences:
        """`num_steps` steps of every env, the student acting (or the teacher, with DAgger's beta)."""
        student, env, steps = self.student, self.env, self.cfg.num_steps
        share = self.cfg.teacher_share(self.iteration)
        obs_rows, targets, starts, hidden = [], [], [], self.hidden.clone()
        h = self.hidden
        for _ in range(steps):
            teacher_action = self.teacher(torch.cat((self.obs, env.privileged_obs), dim=-1))  # type: ignore[attr-defined]
            mean, _, h_next = student.step(self.obs, h)
            action = student.scaler(mean)
            if share > 0.0:
                steer = torch.rand(env.num_envs, device=env.device, generator=self.generator) < share
                action = torch.where(steer.unsqueeze(-1), teacher_action, action)
            obs_rows.append(self.obs)
            targets.append(student.scaler.normalize(teacher_action))
            starts.append(self.started)
            self.obs, _, terminated, truncated, info = env.step(action)
            done = terminated | truncated
            if done.any() and INFO_SUCCESS in info:
                self.successes.extend(info[INFO_SUCCESS][done].float().tolist())
            h = torch.where(done.unsqueeze(-1), torch.zeros_like(h_next), h_next)
            self.started = done
        self.hidden = h
        return Sequences(torch.stack(obs_rows), torch.stack(targets), torch.stack(starts), hidden)

    def update(self, batch: Sequences) -> float:
        """Epochs of minibatches of whole env sequences; the mean squared error (normalized actions). The
        observation statistics take in the rollout first (supervised: no old distribution to keep; the state stored
        at the rollout's start was computed with the previous statistics, a small mismatch in its first steps)."""
        cfg, num_envs = self.cfg, self.env.num_envs
        if isinstance(self.student.obs_normalizer, EmpiricalNormalizer):
            update_normalizer(self.student.obs_normalizer, batch.obs.flatten(0, 1), LOCAL)
        size = max(1, num_envs // cfg.num_minibatches)
        losses = []
        for _ in range(cfg.num_epochs):
            order = torch.randperm(num_envs, device=batch.obs.device, generator=self.generator)
            for i in range(max(1, num_envs // size)):
                envs = order[i * size : (i + 1) * size]
                mean = self.student.sequence(batch.obs[:, envs], batch.hidden[envs], batch.starts[:, envs]).mean
                loss = (mean - batch.targets[:, envs]).square().mean()
                self.optimizer.zero_grad(set_to_none=True)
                loss.backward()
                nn.utils.clip_grad_norm_(self.student.actor_parameters(), cfg.max_grad_norm)
                self.optimizer.step()
                losses.append(float(loss.detach()))
        return sum(losses) / len(losses)

    def step(self) -> dict[str, float]:
        """One iteration: collect, update; the metrics (loss, DAgger's beta, success of the episodes it ended)."""
        share = self.cfg.teacher_share(self.iteration)
        self.successes = []
        loss = self.update(self.collect())
        self.iteration += 1
        success = sum(self.successes) / len(self.successes) if self.successes else float("nan")
        return {"iteration": self.iteration, "loss": loss, "teacher_share": share, "train_success_rate": success}
