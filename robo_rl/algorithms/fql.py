"""Flow Q-learning (FQL, Park et al. 2025): a one-step policy steered by Q while staying close to a BC flow policy.

Three networks: a flow policy trained by flow matching on the replay data (demonstrations, interventions and online
transitions: `robo_rl.modules.flow`), a one-step policy mu(obs, z) that maps noise z to an action in one network
call, and a critic ensemble. The one-step policy maximizes Q (normalized by the batch's mean |Q|) plus `alpha`
times the squared distance to the flow policy's K-step action from the same noise, so it inherits the flow's modes
without backpropagating through the K Euler steps. The critic's targets use the one-step policy. Acting and the
exported policy are the one-step policy: a single MLP call, from fresh noise while exploring and from the stored
fixed noise when deterministic. Works with RLPD prior buffers and interventions like SAC.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any, Literal

import torch
from torch import nn

from robo_rl.algorithms.fixed_normalizers import fit_once, unfitted
from robo_rl.algorithms.off_policy import OffPolicyAlgorithm
from robo_rl.algorithms.off_policy_targets import bootstrapped_target, ensemble_mse, polyak_update, reduce_ensemble
from robo_rl.algorithms.part_state import load_parts_state, parts_state
from robo_rl.distributed import LOCAL, Reducer
from robo_rl.modules.actor_critic import ActionScaler
from robo_rl.modules.flow import FlowPolicy
from robo_rl.modules.freeze import frozen
from robo_rl.modules.mlp import Activation, mlp
from robo_rl.modules.normalizer import make_normalizer
from robo_rl.modules.q_ensemble import QEnsemble
from robo_rl.storage.replay import Transitions


@dataclass(frozen=True)
class FQLConfig:
    gamma: float = 0.99
    """Discount per control step."""
    tau: float = 0.005
    """Polyak factor of the target critics."""
    actor_learning_rate: float = 3e-4
    """Adam step size of the flow and one-step policies."""
    critic_learning_rate: float = 3e-4
    """Adam step size of the critics."""
    alpha: float = 10.0
    """Weight of the distillation toward the flow policy (larger: closer to the demonstrations)."""
    flow_steps: int = 10
    """Euler steps of the flow policy (the distillation target)."""
    flow_data: Literal["all", "prior"] = "prior"
    """What the flow policy clones: only demonstrations and interventions (the flow stays the demonstrators'
    distribution), or every transition in the batch, as the FQL paper does with its large offline datasets. With
    ten demos and random warm-up data, `all` let the flow (and the policy with it) fall from 33 % to 0 % success
    on point/obstacle where `prior` rose to 86–100 % within 300 iterations."""
    num_critics: int = 2
    """Critic ensemble size."""
    actor_q: Literal["min", "mean"] = "mean"
    """How the one-step policy's objective reduces the ensemble (FQL: mean)."""
    target_q: Literal["min", "mean"] = "min"
    """How the Bellman target reduces the target ensemble."""
    normalize_obs: bool = False
    """Observation normalizers (mean and variance fitted once to the first data: the demonstrations when given,
    then fixed; `robo_rl.algorithms.fixed_normalizers`) before the flow, the one-step policy and the critics; the
    exported policy carries the one-step policy's. For observations of very different scales (the peg's)."""
    layer_norm: bool = True
    """LayerNorm after each critic hidden layer."""
    actor_hidden: tuple[int, ...] = (256, 256)
    """One-step policy MLP hidden widths."""
    flow_hidden: tuple[int, ...] = (256, 256)
    """Flow velocity-field MLP hidden widths."""
    critic_hidden: tuple[int, ...] = (256, 256)
    """Critic MLP hidden widths."""
    activation: Activation = "relu"
    """Hidden nonlinearity."""
    noise_seed: int = 0
    """Seed of the fixed noise of the deterministic (evaluated, exported) policy."""

    def __post_init__(self) -> None:
        if not 0.0 < self.tau <= 1.0 or not 0.0 <= self.gamma <= 1.0:
            raise ValueError("fql: need 0 < tau <= 1 and 0 <= gamma <= 1")
        if self.alpha < 0 or self.flow_steps < 1 or self.num_critics < 1:
            raise ValueError("fql: need alpha >= 0, flow_steps >= 1 and num_critics >= 1")


class OneStepPolicy(nn.Module):
    """mu(obs, z) = tanh(MLP(obs, z)): a normalized action `(B, A)` from noise `z` `(B, A)` in one call (the
    observation normalized first with `normalize_obs`)."""

    def __init__(
        self,
        obs_dim: int,
        action_dim: int,
        hidden: tuple[int, ...],
        activation: Activation,
        normalize_obs: bool = False,
    ) -> None:
        super().__init__()
        self.obs_normalizer = make_normalizer(obs_dim, normalize_obs)
        self.net = mlp(obs_dim + action_dim, hidden, action_dim, activation)

    def forward(self, obs: torch.Tensor, z: torch.Tensor) -> torch.Tensor:
        return torch.tanh(self.net(torch.cat([self.obs_normalizer(obs), z], dim=-1)))


class FQLActor(nn.Module):
    """The acting side of FQL: the one-step policy, the flow policy it distills, and the action scaler."""

    def __init__(self, obs_dim: int, action_low: torch.Tensor, action_high: torch.Tensor, cfg: FQLConfig) -> None:
        super().__init__()
        self.action_dim = int(action_low.numel())
        self.flow = FlowPolicy(
            obs_dim,
            action_low,
            action_high,
            cfg.flow_hidden,
            cfg.activation,
            cfg.flow_steps,
            normalize_obs=cfg.normalize_obs,
            noise_seed=cfg.noise_seed,
        )
        self.one_step = OneStepPolicy(obs_dim, self.action_dim, cfg.actor_hidden, cfg.activation, cfg.normalize_obs)
        self.scaler = ActionScaler(action_low.float(), action_high.float())

    def sample(self, obs: torch.Tensor) -> torch.Tensor:
        return self.one_step(obs, torch.randn(obs.shape[0], self.action_dim, device=obs.device))

    def deterministic(self, obs: torch.Tensor) -> torch.Tensor:
        return self.one_step(obs, self.flow.fixed_noise.expand(obs.shape[0], -1))

    def distillation_loss(self, obs: torch.Tensor) -> torch.Tensor:
        """Squared distance between the one-step action and the flow's K-step action from the same noise."""
        z = torch.randn(obs.shape[0], self.action_dim, device=obs.device)
        with torch.no_grad():
            target = self.flow.sample(obs, z)
        return (self.one_step(obs, z) - target).square().sum(-1).mean()

    def fit_action_standardization(self, actions: torch.Tensor) -> None:
        self.flow.fit_action_standardization(actions)

    def bc_loss(self, obs: torch.Tensor, action: torch.Tensor) -> torch.Tensor:
        """Behaviour cloning before RL (off_policy.bc_pretrain_steps): flow matching plus distillation."""
        return self.flow.bc_loss(obs, action) + self.distillation_loss(obs)

    def deterministic_actor(self) -> nn.Module:
        return _ExportableOneStep(self.one_step, self.scaler, self.flow.fixed_noise)


class _ExportableOneStep(nn.Module):
    """Raw obs → env action: the one-step policy at the fixed noise, clipped and scaled.

    The noise is folded into the first layer's bias (W [obs; z] + b = W_obs obs + (W_z z + b)), so the exported
    graph is a plain MLP that firmware export compiles like any other policy."""

    def __init__(self, one_step: OneStepPolicy, scaler: ActionScaler, noise: torch.Tensor) -> None:
        super().__init__()
        layers = list(copy.deepcopy(one_step.net))
        first = layers[0]
        if not isinstance(first, nn.Linear):
            raise TypeError(f"the one-step policy's first layer is {type(first).__name__}, not Linear")
        obs_dim = first.in_features - noise.shape[-1]
        folded = nn.Linear(obs_dim, first.out_features)
        with torch.no_grad():
            folded.weight.copy_(first.weight[:, :obs_dim])
            folded.bias.copy_(first.bias + first.weight[:, obs_dim:] @ noise.reshape(-1))
        self.net = nn.Sequential(folded, *layers[1:])
        self.normalizer = copy.deepcopy(one_step.obs_normalizer)
        self.scaler = scaler

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        return self.scaler(torch.tanh(self.net(self.normalizer(obs))))


PARTS = ("actor", "critic", "target_critic", "actor_optimizer", "critic_optimizer")
"""What a checkpoint holds."""


class FQL(OffPolicyAlgorithm):
    def __init__(
        self,
        obs_dim: int,
        critic_obs_dim: int,
        action_low: torch.Tensor,
        action_high: torch.Tensor,
        cfg: FQLConfig,
        device: torch.device | str = "cpu",
        reducer: Reducer = LOCAL,
    ) -> None:
        """`reducer` averages the gradients over processes (`robo_rl.distributed`; LOCAL: one process)."""
        self.cfg = cfg
        self.reducer = reducer
        self.actor: FQLActor = FQLActor(obs_dim, action_low, action_high, cfg).to(device)
        self.critic = QEnsemble(
            critic_obs_dim,
            self.actor.action_dim,
            cfg.critic_hidden,
            cfg.num_critics,
            cfg.activation,
            cfg.layer_norm,
            cfg.normalize_obs,
        ).to(device)
        self.target_critic = copy.deepcopy(self.critic).requires_grad_(False)
        self.actor_optimizer = torch.optim.Adam(self.actor.parameters(), lr=cfg.actor_learning_rate, fused=True)
        self.critic_optimizer = torch.optim.Adam(self.critic.parameters(), lr=cfg.critic_learning_rate, fused=True)

    @torch.no_grad()
    def act(self, obs: torch.Tensor, deterministic: bool = False) -> torch.Tensor:
        """Normalized action `(N, A)`: the one-step policy from fresh noise (or the fixed noise)."""
        return self.actor.deterministic(obs) if deterministic else self.actor.sample(obs)

    def update(self, batch: Transitions, update_actor: bool = True) -> dict[str, torch.Tensor]:
        """One critic step (and, if asked, one step of the flow and one-step policies), then the target update."""
        metrics = {"critic_loss": self._update_critic(batch)}
        if update_actor:
            metrics.update(self._update_actor(batch))
        polyak_update(self.target_critic, self.critic, self.cfg.tau)
        return metrics

    def _update_critic(self, batch: Transitions) -> torch.Tensor:
        with torch.no_grad():
            next_q = reduce_ensemble(
                self.target_critic(batch.next_critic_obs, self.actor.sample(batch.next_obs)), self.cfg.target_q
            )
            target = bootstrapped_target(batch.rewards, next_q, batch.terminated, self.cfg.gamma)
        loss = ensemble_mse(self.critic(batch.critic_obs, batch.actions), target)
        self.critic_optimizer.zero_grad(set_to_none=True)
        loss.backward()
        self.reducer.gradients(self.critic.parameters())
        self.critic_optimizer.step()
        return loss.detach()

    def _update_actor(self, batch: Transitions) -> dict[str, torch.Tensor]:
        flow_loss = self._flow_loss(batch)
        distill = self.actor.distillation_loss(batch.obs)
        action = self.actor.sample(batch.obs)
        with frozen(self.critic):
            q = reduce_ensemble(self.critic(batch.critic_obs, action), self.cfg.actor_q)
        q_loss = -q.mean() / q.abs().mean().detach().clamp(min=1e-6)
        loss = flow_loss + self.cfg.alpha * distill + q_loss
        self.actor_optimizer.zero_grad(set_to_none=True)
        loss.backward()
        self.reducer.gradients(self.actor.parameters())
        self.actor_optimizer.step()
        return {"flow_loss": flow_loss.detach(), "distill_loss": distill.detach(), "q_loss": q_loss.detach()}

    def _flow_loss(self, batch: Transitions) -> torch.Tensor:
        obs, actions = batch.obs, batch.actions
        if self.cfg.flow_data == "prior":
            keep = batch.is_demo.bool() | batch.intervened.bool()
            if not bool(keep.any()):
                return torch.zeros((), device=obs.device)
            obs, actions = obs[keep], actions[keep]
        return self.actor.flow.bc_loss(obs, actions)

    @property
    def needs_normalizers(self) -> bool:
        """True while `normalize_obs` is on and the normalizers have not been fitted (nor loaded)."""
        return unfitted(self.critic.obs_normalizer)

    @torch.no_grad()
    def fit_normalizers(self, data: Transitions) -> None:
        """Fit the flow's, the one-step policy's and the critics' observation normalizers, once, to `data`."""
        actor = (self.actor.flow.obs_normalizer, self.actor.one_step.obs_normalizer)
        pairs = [(normalizer, data.obs) for normalizer in actor]
        pairs += [(critic.obs_normalizer, data.critic_obs) for critic in (self.critic, self.target_critic)]
        fit_once(pairs, self.reducer)

    def state_dict(self) -> dict[str, Any]:
        return parts_state(self, PARTS)

    def load_state_dict(self, state: dict[str, Any]) -> None:
        load_parts_state(self, state, PARTS)
