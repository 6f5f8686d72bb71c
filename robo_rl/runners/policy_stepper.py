"""An actor stepped over a batch of envs as obs -> action, its memory carried per env (`PolicyStepper`).

An actor with memory (`RecurrentActor`: `robo_rl.modules.recurrent.RecurrentDeterministicActor` in torch, or a
policy.onnx with `h_in` -> `h_out` in onnxruntime, `robo_rl.api.onnx_policy`) maps `(obs, h)` to `(action, h_next)`.
Every loop that flies a trained actor step by step (evaluation, its captured form, flight plots, videos, the L2F
gate) steps it through a `PolicyStepper`: each step's next state is fed back as the next step's, and each env's
state is set to the actor's reset state (`initial_state`: zeros in torch, the artifact's `reset_value` for a file)
before the first step of each of that env's episodes (`robo_rl.memory_spec.RESET_RULE`). Batched envs reset one by
one (an env's episode ends while the others run on), so the reset is per env. An actor without memory is stepped
as it always was: `actor(obs)`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol, TypeAlias, TypeGuard

import torch


class RecurrentActor(Protocol):
    """A deterministic actor with memory: obs `(N, obs_dim)` and state `(N, state)` -> action `(N, action_dim)`
    and the next state `(N, state)`."""

    def __call__(self, obs: torch.Tensor, h: torch.Tensor, /) -> tuple[torch.Tensor, torch.Tensor]: ...

    def initial_state(self, num: int, device: torch.device | str = "cpu") -> torch.Tensor:
        """The reset state `(num, state)`: what every env's state is before its episode's first step."""
        ...


Actor: TypeAlias = Callable[[torch.Tensor], torch.Tensor] | RecurrentActor
"""What evaluation flies: obs -> action, or an actor with memory."""


def has_memory(actor: object) -> TypeGuard[RecurrentActor]:
    """Whether `actor` carries a state (it states its reset state: `initial_state`)."""
    return callable(getattr(actor, "initial_state", None))


def act(actor: Callable[[torch.Tensor], torch.Tensor], obs: Any) -> torch.Tensor:
    """The memoryless actor's action for `obs`; a camera env's observation dict goes to the actor's `act` (a
    `CameraPolicy` takes state and frames as separate inputs, the form it is exported in)."""
    camera_act = getattr(actor, "act", None)
    if isinstance(obs, dict) and camera_act is not None:
        return camera_act(obs)
    return actor(obs)


class PolicyStepper:
    """`actor` as obs -> action over `num_envs` envs, carrying each env's state where the actor has memory.

    Call `start(num_envs)` before an episode's first step for every env (the constructor does, given `num_envs`),
    then per step `stepper(obs)` for the actions and, after the env stepped, `restart(terminated | truncated)`: the
    envs whose next step begins a new episode get the reset state. Without memory, `start` and `restart` do
    nothing and `stepper(obs)` is `actor(obs)`.
    """

    def __init__(self, actor: Actor, num_envs: int | None = None, device: torch.device | str = "cpu") -> None:
        self.actor = actor
        self.recurrent: RecurrentActor | None = actor if has_memory(actor) else None
        """The actor, where it has memory."""
        if num_envs is not None:
            self.start(num_envs, device)

    def start(self, num_envs: int, device: torch.device | str = "cpu") -> None:
        """Every one of `num_envs` envs begins an episode: its state is the reset state."""
        if self.recurrent is None:
            return
        if num_envs < 1:
            raise ValueError(f"PolicyStepper: num_envs must be at least 1, got {num_envs}")
        self.reset_state = self.recurrent.initial_state(num_envs, device)
        self.state = self.reset_state.clone()

    def __call__(self, obs: Any) -> torch.Tensor:
        """Actions `(N, action_dim)` for obs `(N, obs_dim)` (or a camera env's dict, for an actor without memory);
        an actor with memory reads each env's state and leaves the next one for the next step."""
        if self.recurrent is None:
            return act(self.actor, obs)  # type: ignore[arg-type]
        if isinstance(obs, dict):
            raise ValueError("an actor with memory on a camera env is not supported (the export refuses it too)")
        if not hasattr(self, "state"):
            raise RuntimeError("PolicyStepper: call start(num_envs) before the first step of an actor with memory")
        if obs.shape[0] != self.state.shape[0]:
            raise ValueError(f"PolicyStepper: obs for {obs.shape[0]} envs, state for {self.state.shape[0]} (start)")
        action, self.state = self.recurrent(obs, self.state)
        return action

    def restart(self, starts: torch.Tensor) -> None:
        """The envs where `starts` `(N,)` bool is true begin an episode at their next step: their state is set to
        the reset state (the others keep theirs). Pass the step's `terminated | truncated` (the env reset them)."""
        if self.recurrent is not None:
            self.state = torch.where(starts.reshape(-1, 1), self.reset_state, self.state)
