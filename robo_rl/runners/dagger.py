"""Imitation of a teacher in the off-policy runner (`off_policy.teacher`): DAgger (Ross, Gordon, Bagnell 2011).

A student that cannot see what the teacher sees (a camera car that observes its frames and speed, where the teacher
was trained on the whole state vector: "Learning by Cheating", Chen et al. 2019) is trained as DAgger prescribes:
the envs execute the teacher's action with probability beta (falling linearly from `teacher_start` to 0 over
`teacher_steps` env steps) and the student's otherwise, the teacher labels every state the envs visit, every
transition is stored with the teacher's action in place of the executed one (the aggregated dataset is the replay
buffer), and each gradient step clones the teacher on a batch of it with the algorithm's own cloning loss
(`bc_actor`: a SAC actor's log-likelihood, the frames through the camera encoder). What a run writes is the
student's: evaluations, best.pt, export.

The teacher reads its observation by name from the student env's state vector followed by its privileged
observation (`TeacherPolicy`): a camera env that observes part of the state makes the whole state privileged
(`robo_rl.sim.camera_task`), so a policy trained on the state task is a teacher of its camera variant.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import nn

from robo_rl.envs import BatchedEnv
from robo_rl.hil.pretrain import clone_loss
from robo_rl.storage.replay import Transitions


class TeacherPolicy:
    """A deterministic policy of another task's observation (`names`), fed by name from `env`'s critic input (its
    state vector, then its privileged observation: the runner's `critic_obs`); returns env actions."""

    def __init__(self, actor: nn.Module, names: Sequence[str], env: BatchedEnv) -> None:
        available = list(env.obs_spec.names)
        privileged = getattr(env, "privileged_obs_spec", None)
        if privileged is not None:
            available += list(privileged.names)
        missing = [name for name in names if name not in available]
        if missing:
            raise ValueError(
                f"off_policy.teacher observes {missing}, which the student's task has neither in its observation "
                f"nor in its privileged observation {tuple(available)}"
            )
        self.actor = actor.eval()
        self.columns = torch.tensor([available.index(name) for name in names], device=env.device)

    @torch.no_grad()
    def __call__(self, critic_obs: torch.Tensor) -> torch.Tensor:
        """Env actions `(N, action_dim)` of the teacher given the student env's critic input `(N, critic_dim)`."""
        action: torch.Tensor = self.actor(critic_obs[:, self.columns].float())
        return action


def teacher_share(start: float, steps: int, env_steps: int) -> float:
    """DAgger's beta after `env_steps` env steps: `start` falling linearly to 0 over `steps` (0: never)."""
    if steps <= 0:
        return 0.0
    return start * max(0.0, 1.0 - env_steps / steps)


def mix_actions(teacher: torch.Tensor, student: torch.Tensor, share: float, generator: torch.Generator) -> torch.Tensor:
    """Per env, the teacher's action with probability `share`, else the student's (both normalized)."""
    if share <= 0.0:
        return student
    pick = torch.rand(teacher.shape[0], device=teacher.device, generator=generator) < share
    return torch.where(pick.unsqueeze(-1), teacher, student)


class Imitation:
    """Gradient steps of behaviour cloning on replay batches whose actions are the teacher's (`actor`: the
    algorithm's `bc_actor()`, its parameters that require gradients trained by Adam)."""

    def __init__(self, actor: nn.Module, learning_rate: float) -> None:
        self.actor = actor
        trainable = [parameter for parameter in actor.parameters() if parameter.requires_grad]
        self.optimizer = torch.optim.Adam(trainable, lr=learning_rate)

    def update(self, batch: Transitions) -> dict[str, torch.Tensor]:
        loss = clone_loss(self.actor, batch)
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        self.optimizer.step()
        return {"imitation_loss": loss.detach()}
