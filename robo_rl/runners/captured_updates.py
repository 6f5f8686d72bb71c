"""An off-policy iteration's gradient steps as one captured graph (`robo_rl.capture.Captured`): on a GPU, one
replay instead of hundreds of kernel launches per update (`off_policy.capture`).

What stays outside the graph, run eagerly before each replay, is what a graph cannot hold:

- the batch indices, drawn from the growing buffer (`ReplayBuffer.draw_indices`) into a static index tensor, in
  the same random call the classic loop makes; the gather from the buffer's packed tables is inside, by index;
- the algorithm's noise (the SAC actions' normals, TD3's target smoothing, the critic subset), drawn into static
  tensors (`new_noise` / `draw_noise`) in one random call each;
- which updates step the actor: SAC's critic warm-up and TD3's policy delay are Python counters, so the plan of an
  iteration (`actor_plan`, a tuple of bools) picks the graph: one graph per distinct plan, captured the first time
  it comes up. A fixed `updates_per_step` makes one plan for SAC after the warm-up (plus at most two during it) and
  at most `policy_delay` for TD3; `update_to_data` makes two counts (its whole part and one more), so twice that.
  The counters themselves advance outside (`advance`).

The optimizers are Adam with `capturable=True` (`make_optimizers(capturable=True)`), so their state sits on the
device and is updated in place. The losses of an iteration's last update are written into tensors the graph owns
and returned as they are: read them before the next iteration (the runner reads them on metrics rows only).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import torch

from robo_rl.algorithms.capturable import UpdateNoise, noise_row
from robo_rl.capture import CaptureBackend, Captured
from robo_rl.storage.replay import ReplayBuffer, Transitions


class CapturableAlgorithm(Protocol):
    """What `CapturedUpdates` needs of SAC or TD3."""

    def make_optimizers(self, capturable: bool) -> None: ...
    def new_noise(self, count: int, batch_size: int) -> UpdateNoise: ...
    def draw_noise(self, noise: UpdateNoise) -> None: ...
    def actor_plan(self, allowed: tuple[bool, ...]) -> tuple[bool, ...]: ...
    def update_step(
        self, batch: Transitions, step_actor: bool, noise: UpdateNoise | None = None
    ) -> dict[str, torch.Tensor]: ...
    def advance(self, count: int) -> None: ...


@dataclass
class _Draws:
    """The static tensors one update count's graphs read: batch slots and noise."""

    idx: torch.Tensor
    noise: UpdateNoise


class _PlanGraph:
    """The graph of one plan: `count = len(plan)` updates on the batches and noise of `draws`."""

    def __init__(
        self,
        algorithm: CapturableAlgorithm,
        buffer: ReplayBuffer,
        draws: _Draws,
        plan: tuple[bool, ...],
        backend: CaptureBackend,
    ) -> None:
        self.algorithm, self.buffer, self.draws, self.plan = algorithm, buffer, draws, plan
        self.metrics: dict[str, torch.Tensor] = {}
        """The last update's losses, written by the graph (allocated by the first, eager, run)."""
        self.captured = Captured(self._block, backend=backend)

    def _block(self) -> None:
        batches = self.buffer.gather_many(self.draws.idx, len(self.plan))
        metrics: dict[str, torch.Tensor] = {}
        for i, (batch, step_actor) in enumerate(zip(batches, self.plan, strict=True)):
            metrics = self.algorithm.update_step(batch, step_actor, noise_row(self.draws.noise, i))
        if not self.metrics:  # the warm-up run: the tensors every later run writes
            self.metrics = {name: torch.zeros_like(value) for name, value in metrics.items()}
        for name, value in metrics.items():
            self.metrics[name].copy_(value)


class CapturedUpdates:
    """Runs an iteration's `count` gradient steps from `buffer` as a captured graph (module docstring).

    Args:
        algorithm: SAC or TD3; its optimizers are rebuilt capturable here, so make this before any update or
            checkpoint load.
        buffer: the online replay buffer (prior buffers are not captured: the runner takes the classic loop).
        batch_size: transitions per gradient step.
        backend: `robo_rl.capture.capture_backend(device)`; "fx" in CPU tests. May be changed before the first run.
    """

    def __init__(
        self, algorithm: CapturableAlgorithm, buffer: ReplayBuffer, batch_size: int, backend: CaptureBackend
    ) -> None:
        algorithm.make_optimizers(capturable=True)
        self.algorithm, self.buffer, self.batch_size, self.backend = algorithm, buffer, batch_size, backend
        self._draws: dict[int, _Draws] = {}
        self._graphs: dict[tuple[bool, ...], _PlanGraph] = {}

    @property
    def graphs(self) -> int:
        """Distinct plans seen so far (each its own graph)."""
        return len(self._graphs)

    def run(self, allowed: tuple[bool, ...], generator: torch.Generator) -> dict[str, torch.Tensor]:
        """`len(allowed)` gradient steps (the actor's where `allowed`, subject to the algorithm's own schedule),
        on batches drawn with `generator`; the last step's losses (tensors the next run overwrites)."""
        count = len(allowed)
        plan = self.algorithm.actor_plan(allowed)
        draws = self._draws.get(count)
        if draws is None:
            idx = torch.zeros(count * self.batch_size, dtype=torch.long, device=self.buffer.device)
            draws = self._draws[count] = _Draws(idx, self.algorithm.new_noise(count, self.batch_size))
        self.buffer.draw_indices(self.batch_size, count, generator, out=draws.idx)
        self.algorithm.draw_noise(draws.noise)
        graph = self._graphs.get(plan)
        if graph is None:
            graph = self._graphs[plan] = _PlanGraph(self.algorithm, self.buffer, draws, plan, self.backend)
        graph.captured()
        self.algorithm.advance(count)
        return graph.metrics

    def reset(self) -> None:
        """Forget the graphs (they read optimizer state that a checkpoint load replaces); the next runs recapture."""
        self._graphs.clear()
