"""The contract between an off-policy algorithm and what trains it: `OffPolicyAlgorithm`.

The replay runner (`robo_rl.runners.off_policy`), the learner processes (`robo_rl.hil.actor_learner`,
`robo_rl.robot.topic_learner`) and the composition root (`robo_rl.build`) call these members and no others. The
first group every algorithm defines; the hooks after it have defaults here, which an algorithm takes by naming
`OffPolicyAlgorithm` as its base (SAC, TD3, FQL, DrQ's `PixelSAC`) and overrides where it differs: SAC's fitted
observation normalizers, captured updates (SAC and TD3), a camera policy, what it acts with and its behaviour
cloning (DrQ).
"""

from __future__ import annotations

from typing import Any, Protocol

import torch
from torch import nn

from robo_rl.distributed import Reducer
from robo_rl.image_spec import ImageSpec
from robo_rl.modules.actor_critic import ActionScaler
from robo_rl.storage.replay import Transitions


class OffPolicyAlgorithm(Protocol):
    """What the off-policy runner calls on SAC, TD3, FQL, DSRL or DrQ.

    `actor` is the acting module: `sample`, `deterministic`, a `scaler` (`ActionScaler`: normalized [-1, 1]
    actions onto the env's bounds) and `deterministic_actor()` (the exportable obs → env-action module).
    `reducer` averages gradients over processes (`robo_rl.distributed`); the builder passes it.
    """

    actor: nn.Module
    reducer: Reducer

    def act(self, obs: Any, deterministic: bool = False) -> torch.Tensor:
        """Normalized actions `(N, action_dim)` for the observations `obs` (a camera env's: its dict)."""
        ...

    def update(self, batch: Transitions, update_actor: bool = True) -> dict[str, torch.Tensor]:
        """One gradient step on `batch` (the actor's part only with `update_actor`); its losses."""
        ...

    def state_dict(self) -> dict[str, Any]:
        """Everything a resumed run needs: networks, targets, optimizers, counters."""
        ...

    def load_state_dict(self, state: dict[str, Any]) -> None: ...

    @property
    def scaler(self) -> ActionScaler:
        """The actor's map from normalized actions onto the env's bounds (and back, `normalize`)."""
        scaler = self.actor.scaler
        if not isinstance(scaler, ActionScaler):
            raise TypeError(f"{type(self).__name__}'s actor has no ActionScaler `scaler`")
        return scaler

    @property
    def image_specs(self) -> tuple[ImageSpec, ...]:
        """The cameras this algorithm learns from, in order; () for a state-only one (the default)."""
        return ()

    @property
    def needs_normalizers(self) -> bool:
        """True while observation normalizers wait to be fitted once to the first data (`fit_normalizers`);
        default: there are none."""
        return False

    def fit_normalizers(self, data: Transitions) -> None:
        """Fit the observation normalizers to `data`, once (called while `needs_normalizers`); default: none."""

    def observe(self, transitions: Transitions) -> None:
        """The transitions of one env step of every env, in env order, as they are collected (before replay; not the
        prior buffer's): what an algorithm that watches the data as it comes reads (SAC-Lagrangian's cost rate).
        Default: nothing."""
        return None

    def capture_problem(self) -> str | None:
        """Why the updates cannot run as one captured graph (`robo_rl.runners.captured_updates`), or None: they can,
        and the algorithm is then a `CapturableAlgorithm` too. Default: they cannot."""
        return "its updates are not captured (SAC's and TD3's are)"

    def bc_actor(self) -> nn.Module:
        """What behaviour cloning before RL (`off_policy.bc_pretrain_steps`, `robo_rl.hil.pretrain`) trains: by
        default the actor, which reads the observations the demonstrations store."""
        return self.actor

    def deterministic_policy(self) -> nn.Module:
        """The deterministic policy that evaluations run and best.pt deploys: by default the actor's
        `deterministic_actor()` (obs → env action)."""
        actor: Any = self.actor  # the actor contract above: deterministic_actor()
        policy: nn.Module = actor.deterministic_actor()
        return policy

    def acting_module(self) -> nn.Module:
        """The module whose weights (parameters and buffers) `act` reads: what a learner process publishes to the
        env loop (`robo_rl.hil.actor_learner`). By default the actor."""
        return self.actor

    def policy_state(self) -> dict[str, Any]:
        """What rebuilds `deterministic_policy` (best.pt's `algorithm`): by default the actor's weights."""
        return {"actor": self.actor.state_dict()}

    def load_policy_state(self, state: dict[str, Any]) -> None:
        """Restore what `policy_state` returned."""
        self.actor.load_state_dict(state["actor"])
