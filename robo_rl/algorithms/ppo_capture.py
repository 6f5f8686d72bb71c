"""PPO's update as one captured graph: GAE and every minibatch step of every epoch replayed in one launch.

On a GPU a PPO update of small networks is thousands of kernel launches and, in the eager update (`PPO.update`), a
host sync per minibatch (the KL read for the adaptive rate, the statistics). `PPO.captured_update` runs the same
minibatch loop without either (`PPO._device_update`), and `CapturedPPOUpdate` has `robo_rl.capture.Captured` record
it once and replay it:

- each epoch's permutation of the transitions is drawn before the graph into a static `(num_epochs, total)` index
  tensor (the graph may not call the random generator); the minibatch gathers read it inside;
- the adaptive learning rate is a device tensor (`PPO.make_capturable`) that the rule (`adapt_learning_rate`)
  changes in place per minibatch and the fused, capturable Adam reads at each step;
- the statistics are summed on the device and returned as device tensors; nothing is read on the host.

Given the same permutations it is the eager update (tests/robo_rl/algorithms/test_ppo_capture.py).
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from robo_rl.capture import CaptureBackend, Captured
from robo_rl.storage.rollout import RolloutStorage


class CapturedPPOUpdate:
    """An update as a replayable block, built by `PPO.captured_update`; call it once per iteration on the refilled
    storage.

    Args:
        block: `block(permutations, metrics)`: the update, each epoch's order of the transitions read from
            `permutations` `(num_epochs, num_steps * num_envs)`, its metrics written into `metrics`
            `(len(metric_names),)`; free of host syncs and random calls.
        storage: the rollout storage the runner fills; the graph reads its tensors, so refill them in place
            (`RolloutStorage.add`). An owner of the graph: the block rebinds its advantages and returns.
        num_epochs: the update's epochs (one permutation each).
        metric_names: the names of `metrics`, in order.
        signature: what a recorded graph depends on beyond tensor values (which tensors the optimizer's state
            is, which parameters train); where it changed since the last call, the graph is recorded anew.
        backend: "cuda" on a GPU, "eager" (the same code, no graph) or "fx" (the CPU test of the capture).
        generator: the random generator of the permutations (the default generator of the storage's device when
            None).
    """

    def __init__(
        self,
        block: Callable[[torch.Tensor, torch.Tensor], None],
        storage: RolloutStorage,
        num_epochs: int,
        metric_names: tuple[str, ...],
        signature: Callable[[], tuple[object, ...]],
        backend: CaptureBackend = "eager",
        generator: torch.Generator | None = None,
    ) -> None:
        self.block, self.metric_names, self.signature, self.generator = block, metric_names, signature, generator
        self.total = storage.num_steps * storage.num_envs
        device = storage.obs.device
        self.permutations = torch.zeros(num_epochs, self.total, dtype=torch.long, device=device)
        self.metrics = torch.zeros(len(metric_names), device=device)
        """The last update's metrics, in `metric_names` order (written by the graph)."""
        self.captured = Captured(self._block, owners=(storage,), backend=backend)
        self._signature: tuple[object, ...] = ()

    def __call__(self) -> dict[str, torch.Tensor]:
        """Run one update; its metrics as device tensors (a copy: the next update overwrites `metrics`)."""
        signature = self.signature()
        if self.captured.calls and signature != self._signature:
            self.reset()
        self._draw_permutations()
        self.captured()
        self._signature = self.signature()
        return dict(zip(self.metric_names, self.metrics.clone().unbind(0), strict=True))

    def reset(self) -> None:
        """Forget the recorded graph: the next call warms up and records again. Done by itself where the
        optimizer's state tensors were replaced (a loaded checkpoint) or parameters were frozen or thawed
        (ReinFlow's warm-up) since the last call: a graph reads the tensors and the gradients it was recorded
        with."""
        self.captured = Captured(self._block, owners=self.captured.slots.owners, backend=self.captured.backend)

    def _draw_permutations(self) -> None:
        """Each epoch's order, drawn eagerly as the eager update draws it (`RolloutStorage.minibatches`)."""
        for epoch in range(self.permutations.shape[0]):
            perm = torch.randperm(self.total, device=self.permutations.device, generator=self.generator)
            self.permutations[epoch].copy_(perm)

    def _block(self) -> None:
        self.block(self.permutations, self.metrics)
