"""TD3 for batched envs: clipped double-Q targets, target policy smoothing, delayed actor updates.

Learning to Fly in Seconds trains its quadrotor policy with TD3. Actions live in the normalized box [-1, 1];
the actor's `deterministic_actor()` maps them onto the env's bounds for evaluation and export.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

import torch

from robo_rl.algorithms.capturable import UpdateNoise, adam, load_optimizer_state
from robo_rl.algorithms.off_policy import OffPolicyAlgorithm
from robo_rl.algorithms.off_policy_targets import ensemble_mse, polyak_update
from robo_rl.algorithms.td3_losses import smoothed_action, td3_actor_loss, td3_target
from robo_rl.distributed import LOCAL, Reducer
from robo_rl.modules.freeze import frozen
from robo_rl.modules.mlp import Activation
from robo_rl.modules.q_ensemble import QEnsemble
from robo_rl.modules.squashed_actor import TanhActor
from robo_rl.storage.replay import Transitions


@dataclass(frozen=True)
class TD3Config:
    gamma: float = 0.99
    """Discount per control step."""
    tau: float = 0.005
    """Polyak factor of the target actor and critics."""
    actor_learning_rate: float = 1e-3
    """Adam step size of the actor."""
    critic_learning_rate: float = 1e-3
    """Adam step size of the critics."""
    exploration_noise: float = 0.1
    """Std of the Gaussian added to actions while collecting, in normalized action units."""
    target_noise: float = 0.2
    """Std of the target policy smoothing noise, normalized units."""
    target_noise_clip: float = 0.5
    """Clip of the target policy smoothing noise, normalized units."""
    policy_delay: int = 2
    """Critic steps per actor (and target) step."""
    actor_hidden: tuple[int, ...] = (256, 256)
    """Actor MLP hidden widths."""
    critic_hidden: tuple[int, ...] = (256, 256)
    """Critic MLP hidden widths."""
    activation: Activation = "relu"
    """Hidden nonlinearity."""
    normalize_obs: bool = False
    """Running observation normalizer inside the actor."""
    layer_norm: bool = False
    """LayerNorm after each critic hidden layer (as RLPD does for SAC; steadier Q-values)."""

    def __post_init__(self) -> None:
        if self.policy_delay < 1:
            raise ValueError("policy_delay must be at least 1")
        if min(self.exploration_noise, self.target_noise, self.target_noise_clip) < 0:
            raise ValueError("noise settings must not be negative")


class TD3(OffPolicyAlgorithm):
    def __init__(
        self,
        obs_dim: int,
        critic_obs_dim: int,
        action_low: torch.Tensor,
        action_high: torch.Tensor,
        cfg: TD3Config,
        device: torch.device | str = "cpu",
        reducer: Reducer = LOCAL,
    ) -> None:
        """`reducer` averages the gradients over processes (`robo_rl.distributed`; LOCAL: one process)."""
        self.cfg = cfg
        self.reducer = reducer
        action_dim = int(action_low.numel())
        self.actor: TanhActor = TanhActor(
            obs_dim, action_low, action_high, cfg.actor_hidden, cfg.activation, cfg.normalize_obs
        ).to(device)
        self.critic = QEnsemble(critic_obs_dim, action_dim, cfg.critic_hidden, 2, cfg.activation, cfg.layer_norm).to(
            device
        )
        self.target_actor = copy.deepcopy(self.actor).requires_grad_(False)
        self.target_critic = copy.deepcopy(self.critic).requires_grad_(False)
        self.action_dim = action_dim
        self.make_optimizers(capturable=False)
        self.critic_steps = 0

    def make_optimizers(self, capturable: bool) -> None:
        """(Re)build both Adam optimizers, empty; `capturable` for updates in a captured graph
        (`robo_rl.algorithms.capturable.adam`). Call before the first update or checkpoint load."""
        self.actor_optimizer = adam(self.actor.parameters(), self.cfg.actor_learning_rate, capturable)
        self.critic_optimizer = adam(self.critic.parameters(), self.cfg.critic_learning_rate, capturable)

    def capture_problem(self) -> str | None:
        """Why the updates cannot be captured; None: they can."""
        return None

    def new_noise(self, count: int, batch_size: int) -> UpdateNoise:
        """Tensors for the target smoothing draws of `count` updates, standard normal `(count, B, A)`."""
        like = next(self.critic.parameters()).detach()
        return {"normal": like.new_empty(count, batch_size, self.action_dim)}

    @staticmethod
    def draw_noise(noise: UpdateNoise) -> None:
        """Fresh draws into `new_noise`'s tensors (one random call, from the default generator)."""
        noise["normal"].normal_()

    def actor_plan(self, allowed: tuple[bool, ...]) -> tuple[bool, ...]:
        """Which of the next `len(allowed)` updates step the actor and the targets: every `policy_delay`-th critic
        step, counted on from `critic_steps`, where allowed (critic warm-up)."""
        delay = self.cfg.policy_delay
        return tuple(ok and (self.critic_steps + i + 1) % delay == 0 for i, ok in enumerate(allowed))

    def advance(self, count: int) -> None:
        """`count` updates ran as a captured graph (whose Python does not run): count their critic steps."""
        self.critic_steps += count

    @torch.no_grad()
    def act(self, obs: torch.Tensor, deterministic: bool = False) -> torch.Tensor:
        """Normalized action `(N, A)`; with exploration noise unless deterministic."""
        action = self.actor(obs)
        if deterministic:
            return action
        return (action + self.cfg.exploration_noise * torch.randn_like(action)).clamp(-1.0, 1.0)

    def update(
        self, batch: Transitions, update_actor: bool = True, noise: UpdateNoise | None = None
    ) -> dict[str, torch.Tensor]:
        """A critic step; every `policy_delay` critic steps also an actor step and the target updates.

        `noise`: this update's row of `new_noise` (drawn before); None draws here."""
        step_actor = self.actor_plan((update_actor,))[0]
        self.critic_steps += 1
        return self.update_step(batch, step_actor, noise)

    def update_step(
        self, batch: Transitions, step_actor: bool, noise: UpdateNoise | None = None
    ) -> dict[str, torch.Tensor]:
        """A critic step and, with `step_actor`, an actor step and the target updates; counts nothing (a
        captured graph replays it without Python: the caller counts, `advance`)."""
        metrics = {"critic_loss": self._update_critic(batch, None if noise is None else noise["normal"])}
        if step_actor:
            with frozen(self.critic):
                actor_loss = td3_actor_loss(self.critic(batch.critic_obs, self.actor(batch.obs))[0])
            self.actor_optimizer.zero_grad(set_to_none=True)
            actor_loss.backward()
            self.reducer.gradients(self.actor.parameters())
            self.actor_optimizer.step()
            polyak_update(self.target_actor, self.actor, self.cfg.tau)
            polyak_update(self.target_critic, self.critic, self.cfg.tau)
            metrics["actor_loss"] = actor_loss.detach()
        return metrics

    def _update_critic(self, batch: Transitions, normal: torch.Tensor | None = None) -> torch.Tensor:
        cfg = self.cfg
        with torch.no_grad():
            target_action = self.target_actor(batch.next_obs)
            next_action = smoothed_action(target_action, cfg.target_noise, cfg.target_noise_clip, normal=normal)
            next_q = self.target_critic(batch.next_critic_obs, next_action)
            target = td3_target(batch.rewards, next_q, batch.terminated, cfg.gamma)
        loss = ensemble_mse(self.critic(batch.critic_obs, batch.actions), target)
        self.critic_optimizer.zero_grad(set_to_none=True)
        loss.backward()
        self.reducer.gradients(self.critic.parameters())
        self.critic_optimizer.step()
        return loss.detach()

    def state_dict(self) -> dict[str, Any]:
        return {
            "actor": self.actor.state_dict(),
            "critic": self.critic.state_dict(),
            "target_actor": self.target_actor.state_dict(),
            "target_critic": self.target_critic.state_dict(),
            "actor_optimizer": self.actor_optimizer.state_dict(),
            "critic_optimizer": self.critic_optimizer.state_dict(),
            "critic_steps": self.critic_steps,
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        for name in ("actor", "critic", "target_actor", "target_critic"):
            getattr(self, name).load_state_dict(state[name])
        for name in ("actor_optimizer", "critic_optimizer"):
            load_optimizer_state(getattr(self, name), state[name])
        self.critic_steps = int(state["critic_steps"])
