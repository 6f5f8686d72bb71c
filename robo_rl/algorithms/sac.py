"""Soft actor-critic for batched envs, with the RLPD options (LayerNorm critics, large ensembles with a random
subset minimum, high update-to-data ratio; symmetric demo/online sampling lives in the replay storage).

The losses are pure functions in `sac_losses` / `off_policy_targets`; this class owns networks and optimizers.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

import torch
from torch import nn

from robo_rl.algorithms.capturable import UpdateNoise, adam, load_optimizer_state
from robo_rl.algorithms.encoder_config import EncoderConfig
from robo_rl.algorithms.fixed_normalizers import fit_once, unfitted
from robo_rl.algorithms.off_policy import OffPolicyAlgorithm
from robo_rl.algorithms.off_policy_targets import ensemble_mse, polyak_update, reduce_ensemble, subset_min
from robo_rl.algorithms.sac_losses import filtered_bc_loss, sac_actor_loss, soft_target, temperature_loss
from robo_rl.distributed import LOCAL, Reducer, optimizer_parameters
from robo_rl.modules.freeze import frozen
from robo_rl.modules.mlp import Activation
from robo_rl.modules.q_ensemble import QEnsemble
from robo_rl.modules.squashed_actor import SquashedGaussianActor
from robo_rl.storage.replay import Transitions

ActorLossHook = Callable[[torch.Tensor, Transitions, torch.Tensor], torch.Tensor]
"""`(SAC's actor loss, the batch, the actor's reparameterized actions) -> the actor loss to minimize`."""


@dataclass(frozen=True)
class SACConfig:
    gamma: float = 0.99
    """Discount per control step."""
    tau: float = 0.005
    """Polyak factor of the target critics."""
    actor_learning_rate: float = 1e-3
    """Adam step size of the actor."""
    critic_learning_rate: float = 1e-3
    """Adam step size of the critics."""
    alpha_learning_rate: float = 1e-3
    """Adam step size of log(alpha)."""
    init_alpha: float = 1.0
    """Initial entropy temperature."""
    target_entropy: float | None = None
    """Entropy the temperature steers to; None means -action_dim."""
    num_critics: int = 2
    """Critic ensemble size (RLPD: 10)."""
    critic_subset: int = 2
    """Members in the random subset whose minimum forms the target (2 = clipped double Q)."""
    actor_q: Literal["min", "mean"] = "min"
    """How the actor reduces the ensemble: min (SAC) or mean (RLPD/REDQ with large ensembles)."""
    layer_norm: bool = False
    """LayerNorm after each critic hidden layer (RLPD)."""
    actor_hidden: tuple[int, ...] = (256, 256)
    """Actor MLP hidden widths."""
    critic_hidden: tuple[int, ...] = (256, 256)
    """Critic MLP hidden widths."""
    activation: Activation = "relu"
    """Hidden nonlinearity for actor and critics."""
    normalize_obs: bool = False
    """Normalize the actor's and the critics' observations by a mean and std fitted once from the first data (the
    prior buffer when the run has one, else the online buffer at the first update: `fit_normalizers`) and then
    fixed, since off-policy targets want fixed inputs. For observations of very different scales: a millimetre
    offset next to joint angles in rad is otherwise invisible to the critics. Exported inside the actor."""
    bc_weight: float = 0.0
    """Weight of a Q-filtered behaviour-cloning term in the actor loss, on the batch's demonstration and
    intervention transitions (`sac_losses.filtered_bc_loss`), scaled by the batch's mean |Q| so it does not depend
    on the reward scale. Keeps a demo-pretrained actor from being pulled apart by a young critic; 0: plain SAC."""
    encoder: EncoderConfig = field(default_factory=EncoderConfig)
    """The camera encoder, with an env that has cameras (DrQ, `robo_rl.algorithms.drq`); ignored without."""

    def __post_init__(self) -> None:
        if not 1 <= self.critic_subset <= self.num_critics:
            raise ValueError(f"critic_subset must be in [1, num_critics={self.num_critics}]")
        if not 0.0 < self.tau <= 1.0 or not 0.0 <= self.gamma <= 1.0:
            raise ValueError("need 0 < tau <= 1 and 0 <= gamma <= 1")
        if self.init_alpha <= 0:
            raise ValueError("init_alpha must be positive")
        if self.bc_weight < 0:
            raise ValueError("bc_weight must not be negative")


class SAC(OffPolicyAlgorithm):
    def __init__(
        self,
        obs_dim: int,
        critic_obs_dim: int,
        action_low: torch.Tensor,
        action_high: torch.Tensor,
        cfg: SACConfig,
        device: torch.device | str = "cpu",
        actor: nn.Module | None = None,
        reducer: Reducer = LOCAL,
        shape_actor_loss: ActorLossHook | None = None,
    ) -> None:
        """`actor` replaces the squashed-Gaussian actor: any module with `sample(obs) -> (normalized action,
        log-probability)`, `deterministic(obs)`, `scaler` and `deterministic_actor()` (e.g. DSRL's steered flow);
        its `trainable_parameters()`, when it has them, are what the actor optimizer moves. `reducer` averages the
        gradients over processes (`robo_rl.distributed`; LOCAL: one process). `shape_actor_loss(loss, batch,
        action)` returns the actor loss to minimize in place of SAC's own `loss`, given the batch and the actor's
        reparameterized `action` (SAC-Lagrangian prices the action's cost there, `robo_rl.algorithms.sac_lag`)."""
        self.cfg = cfg
        self.reducer = reducer
        self.shape_actor_loss = shape_actor_loss
        action_dim = int(action_low.numel())
        self.action_dim = action_dim
        if actor is None:
            actor = SquashedGaussianActor(
                obs_dim, action_low, action_high, cfg.actor_hidden, cfg.activation, cfg.normalize_obs
            )
        self.actor = actor.to(device)
        self.critic = QEnsemble(
            critic_obs_dim,
            action_dim,
            cfg.critic_hidden,
            cfg.num_critics,
            cfg.activation,
            cfg.layer_norm,
            cfg.normalize_obs,
        ).to(device)
        self.target_critic = copy.deepcopy(self.critic).requires_grad_(False)
        self.log_alpha = torch.tensor(math.log(cfg.init_alpha), device=device, requires_grad=True)
        self.target_entropy = -float(action_dim) if cfg.target_entropy is None else cfg.target_entropy
        self.make_optimizers(capturable=False)

    def make_optimizers(self, capturable: bool) -> None:
        """(Re)build the three Adam optimizers, empty; `capturable` for updates in a captured graph
        (`robo_rl.algorithms.capturable.adam`). Call before the first update or checkpoint load."""
        cfg = self.cfg
        trainable = getattr(self.actor, "trainable_parameters", self.actor.parameters)  # DSRL: its latent actor
        self.actor_optimizer = adam(trainable(), cfg.actor_learning_rate, capturable)
        self.critic_optimizer = adam(self.critic.parameters(), cfg.critic_learning_rate, capturable)
        self.alpha_optimizer = adam([self.log_alpha], cfg.alpha_learning_rate, capturable)

    def capture_problem(self) -> str | None:
        """Why this SAC's updates cannot be captured (an actor whose sampling cannot take noise drawn before:
        DSRL's steered flow), or None."""
        if not isinstance(self.actor, SquashedGaussianActor):
            return f"its actor {type(self.actor).__name__} draws its own noise"
        return None

    def new_noise(self, count: int, batch_size: int) -> UpdateNoise:
        """Tensors for the draws of `count` updates (`draw_noise` fills them): per update, the standard normals
        of the next action and of the actor's action (in the order `update` draws them) and, with a critic
        subset smaller than the ensemble, uniform keys choosing it."""
        like = self.log_alpha.detach()
        noise = {"normal": like.new_empty(count, 2, batch_size, self.action_dim)}
        if self.cfg.critic_subset < self.cfg.num_critics:
            noise["subset"] = like.new_empty(count, self.cfg.num_critics)
        return noise

    @staticmethod
    def draw_noise(noise: UpdateNoise) -> None:
        """Fresh draws into `new_noise`'s tensors (one random call each, from the default generator)."""
        noise["normal"].normal_()
        if "subset" in noise:
            noise["subset"].uniform_()

    def actor_plan(self, allowed: tuple[bool, ...]) -> tuple[bool, ...]:
        """Which of the next updates step the actor and the temperature: every one allowed (critic warm-up)."""
        return allowed

    def advance(self, count: int) -> None:
        """`count` updates ran as a captured graph: SAC counts none."""

    @property
    def alpha(self) -> torch.Tensor:
        return self.log_alpha.detach().exp()

    @property
    def needs_normalizers(self) -> bool:
        """True while `normalize_obs` is on and the normalizers have not been fitted (nor loaded)."""
        return unfitted(getattr(self.critic, "obs_normalizer", None))

    @torch.no_grad()
    def fit_normalizers(self, data: Transitions) -> None:
        """Fit the actor's and the critics' observation normalizers, once, to `data`'s observations (with
        `normalize_obs`; a no-op otherwise or when fitted); under several processes to every rank's data merged, so
        that every rank normalizes alike (`reducer`; ranks hold equally many transitions)."""
        if not self.needs_normalizers:
            return
        pairs = [(getattr(self.actor, "obs_normalizer", None), data.obs)]
        pairs += [(critic.obs_normalizer, data.critic_obs) for critic in (self.critic, self.target_critic)]
        fit_once(pairs, self.reducer)

    @torch.no_grad()
    def act(self, obs: torch.Tensor, deterministic: bool = False) -> torch.Tensor:
        """Normalized action `(N, A)` for exploration (sampled) or evaluation (deterministic)."""
        actor: Any = self.actor  # the actor contract (`OffPolicyAlgorithm`)
        action: torch.Tensor = actor.deterministic(obs) if deterministic else actor.sample(obs)[0]
        return action

    def update(
        self, batch: Transitions, update_actor: bool = True, noise: UpdateNoise | None = None
    ) -> dict[str, torch.Tensor]:
        """One critic step (and, if asked, one actor and temperature step), then a target-network update.

        `noise`: this update's row of `new_noise` (drawn before: a captured update); None draws here."""
        normal = None if noise is None else noise["normal"]
        keys = None if noise is None else noise.get("subset")
        metrics = {"critic_loss": self.update_critic(batch, None if normal is None else normal[0], keys)}
        if update_actor:
            metrics.update(self.update_actor(batch, None if normal is None else normal[1]))
        self.update_targets()
        return metrics

    def update_step(
        self, batch: Transitions, step_actor: bool, noise: UpdateNoise | None = None
    ) -> dict[str, torch.Tensor]:
        """`update`, which counts nothing (the form a captured graph replays, as TD3's)."""
        return self.update(batch, step_actor, noise)

    def update_targets(self) -> None:
        """Move the target critics towards the critics (Polyak, `tau`)."""
        polyak_update(self.target_critic, self.critic, self.cfg.tau)

    def update_critic(
        self, batch: Transitions, normal: torch.Tensor | None = None, keys: torch.Tensor | None = None
    ) -> torch.Tensor:
        """One step of the critic optimizer on the soft Bellman error; the loss. Its gradient reaches whatever
        produced `batch.critic_obs` with grad and sits in the critic optimizer (DrQ's camera encoder).
        `normal` `(B, A)` and `keys` `(E,)`: the next action's and the critic subset's draws, made before."""
        with torch.no_grad():
            next_action, next_log_prob = self._sample(batch.next_obs, normal)
            next_q = self.target_critic(batch.next_critic_obs, next_action)
            next_q = subset_min(next_q, self.cfg.critic_subset, keys=keys)
            target = soft_target(batch.rewards, next_q, next_log_prob, batch.terminated, self.cfg.gamma, self.alpha)
        loss = ensemble_mse(self.critic(batch.critic_obs, batch.actions), target)
        self.critic_optimizer.zero_grad(set_to_none=True)
        loss.backward()
        self.reducer.gradients(optimizer_parameters(self.critic_optimizer))
        self.critic_optimizer.step()
        return loss.detach()

    def _sample(self, obs: torch.Tensor, normal: torch.Tensor | None) -> tuple[torch.Tensor, torch.Tensor]:
        """The actor's sample, with the draws `normal` when given (only the squashed Gaussian takes them)."""
        actor: Any = self.actor
        sample: tuple[torch.Tensor, torch.Tensor] = actor.sample(obs) if normal is None else actor.sample(obs, normal)
        return sample

    def update_actor(self, batch: Transitions, normal: torch.Tensor | None = None) -> dict[str, torch.Tensor]:
        """One actor step and one temperature step; their metrics. `normal` `(B, A)`: the action's draws."""
        action, log_prob = self._sample(batch.obs, normal)
        with frozen(self.critic):
            q = self.critic(batch.critic_obs, action)
        q = reduce_ensemble(q, self.cfg.actor_q)
        actor_loss = sac_actor_loss(q, log_prob, self.alpha)
        if self.cfg.bc_weight > 0:
            actor_loss = actor_loss + self.cfg.bc_weight * q.abs().mean().detach() * self._bc_loss(batch, q)
        if self.shape_actor_loss is not None:
            actor_loss = self.shape_actor_loss(actor_loss, batch, action)
        self.actor_optimizer.zero_grad(set_to_none=True)
        actor_loss.backward()
        self.reducer.gradients(optimizer_parameters(self.actor_optimizer))
        self.actor_optimizer.step()
        alpha_loss = temperature_loss(self.log_alpha, log_prob, self.target_entropy)
        self.alpha_optimizer.zero_grad(set_to_none=True)
        alpha_loss.backward()
        self.reducer.gradients([self.log_alpha])
        self.alpha_optimizer.step()
        return {"actor_loss": actor_loss.detach(), "alpha": self.alpha, "entropy": -log_prob.detach().mean()}

    def _bc_loss(self, batch: Transitions, q_policy: torch.Tensor) -> torch.Tensor:
        flagged = batch.is_demo.bool() | batch.intervened.bool()
        with torch.no_grad():
            q_demo = reduce_ensemble(self.critic(batch.critic_obs, batch.actions), self.cfg.actor_q)
        actor: Any = self.actor  # the squashed Gaussian (bc_weight > 0)
        log_prob: torch.Tensor = actor.log_prob(batch.obs, batch.actions)
        return filtered_bc_loss(log_prob, q_demo, q_policy.detach(), flagged)

    def state_dict(self) -> dict[str, Any]:
        return {
            "actor": self.actor.state_dict(),
            "critic": self.critic.state_dict(),
            "target_critic": self.target_critic.state_dict(),
            "log_alpha": self.log_alpha.detach().clone(),
            "actor_optimizer": self.actor_optimizer.state_dict(),
            "critic_optimizer": self.critic_optimizer.state_dict(),
            "alpha_optimizer": self.alpha_optimizer.state_dict(),
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.actor.load_state_dict(state["actor"])
        self.critic.load_state_dict(state["critic"])
        self.target_critic.load_state_dict(state["target_critic"])
        with torch.no_grad():
            self.log_alpha.copy_(state["log_alpha"])
        for name in ("actor_optimizer", "critic_optimizer", "alpha_optimizer"):
            load_optimizer_state(getattr(self, name), state[name])
