"""PPO's update as one captured graph: GAE and every minibatch step of every epoch replayed in one launch.

On a GPU a PPO update of small networks is thousands of kernel launches and, in the classic loop
(`PPO.update`), a host sync per minibatch (the KL read for the adaptive rate, the statistics). Here the same
update is written without either, so `robo_rl.capture.Captured` can record it once and replay it:

- each epoch's permutation of the transitions is drawn before the graph into a static `(num_epochs, total)`
  index tensor (the graph may not call the random generator); the minibatch gathers read it inside;
- the adaptive learning rate is a device tensor (`PPO(..., capturable=True)`) that `adapt_learning_rate_` changes
  in place per minibatch and the fused, capturable Adam reads at each step;
- the statistics are summed on the device and returned as device tensors; nothing is read on the host.

The arithmetic is `PPO`'s own (`minibatch_loss`, `apply_gradients`, `compute_returns`): given the same
permutations it is the classic update (tests/robo_rl/algorithms/test_ppo_capture.py).
"""

from __future__ import annotations

import torch

from robo_rl.algorithms.ppo import PPO, adapt_learning_rate_
from robo_rl.capture import CaptureBackend, Captured
from robo_rl.storage.rollout import RolloutStorage

UPDATE_METRICS: tuple[str, ...] = ("policy_loss", "value_loss", "entropy", "kl", "learning_rate")
"""The keys of a captured update's metrics: `PPO.update`'s."""


class CapturedPPOUpdate:
    """`PPO.update(storage)` as a replayable block; build it once the rollout storage holds its distribution
    parameters (after the first rollout), then call it once per iteration on the refilled storage.

    Args:
        ppo: built with `capturable=True`, on one process (a reducer's collectives cannot be captured here).
        storage: the rollout storage the runner fills; the graph reads its tensors, so refill them in place
            (`RolloutStorage.add`), as the runner does.
        backend: "cuda" on a GPU, "eager" (the same code, no graph) or "fx" (the CPU test of the capture).
        generator: the random generator of the permutations (the default generator of the storage's device when
            None).
    """

    def __init__(
        self,
        ppo: PPO,
        storage: RolloutStorage,
        backend: CaptureBackend = "eager",
        generator: torch.Generator | None = None,
    ) -> None:
        if not ppo.capturable:
            raise ValueError("a captured PPO update needs PPO(..., capturable=True) (its learning rate a tensor)")
        if ppo.reducer.world.size != 1:
            raise ValueError(
                f"a captured PPO update runs on one process only (this PPO reduces over {ppo.reducer.world.size})"
            )
        if not storage.distribution:
            raise ValueError("the rollout storage holds no distribution parameters yet: build after the first rollout")
        self.ppo, self.storage, self.generator = ppo, storage, generator
        cfg = ppo.cfg
        self.total = storage.num_steps * storage.num_envs
        if self.total < cfg.num_minibatches:
            raise ValueError(f"{self.total} transitions cannot fill {cfg.num_minibatches} minibatches")
        device = storage.obs.device
        self.permutations = torch.zeros(cfg.num_epochs, self.total, dtype=torch.long, device=device)
        self.metrics = torch.zeros(len(UPDATE_METRICS), device=device)
        """The last update's metrics, in `UPDATE_METRICS` order (written by the graph)."""
        # The storage is an owner: `compute_returns` rebinds its advantages and returns.
        self.captured = Captured(self._block, owners=(storage,), backend=backend)
        self._signature: tuple = ()

    def __call__(self) -> dict[str, torch.Tensor]:
        """Run one update; its metrics as device tensors (a copy: the next update overwrites `metrics`)."""
        signature = self._state_signature()
        if self.captured.calls and signature != self._signature:
            self.reset()
        self._draw_permutations()
        self.captured()
        self._signature = self._state_signature()
        return dict(zip(UPDATE_METRICS, self.metrics.clone().unbind(0), strict=True))

    def reset(self) -> None:
        """Forget the recorded graph: the next call warms up and records again. Done by itself where the
        optimizer's state tensors were replaced (a loaded checkpoint) or parameters were frozen or thawed
        (ReinFlow's warm-up) since the last call: a graph reads the tensors and the gradients it was recorded
        with."""
        self.captured = Captured(self._block, owners=self.captured.slots.owners, backend=self.captured.backend)

    def _state_signature(self) -> tuple:
        """What a recorded graph depends on beyond tensor values: which parameters train, which tensors the
        optimizer's state and learning rate are."""
        params = list(self.ppo.policy.parameters())
        state = self.ppo.optimizer.state
        return (
            tuple(p.requires_grad for p in params),
            tuple(id(v) for p in params for v in state.get(p, {}).values()),
            tuple(id(group["lr"]) for group in self.ppo.optimizer.param_groups),
        )

    def _draw_permutations(self) -> None:
        """Each epoch's order, drawn eagerly as the classic loop draws it (`RolloutStorage.minibatches`)."""
        for epoch in range(self.ppo.cfg.num_epochs):
            perm = torch.randperm(self.total, device=self.permutations.device, generator=self.generator)
            self.permutations[epoch].copy_(perm)

    def _block(self) -> None:
        """The update, free of host syncs and random calls: what the graph records."""
        ppo, cfg = self.ppo, self.ppo.cfg
        lr = ppo.learning_rate_tensor
        ppo.compute_returns(self.storage)
        sums = torch.zeros(len(UPDATE_METRICS) - 1, device=self.metrics.device)
        count = 0
        for batch in self.storage.minibatches(cfg.num_minibatches, cfg.num_epochs, permutations=self.permutations):
            loss, stats = ppo.minibatch_loss(batch)
            if cfg.schedule == "adaptive":
                adapt_learning_rate_(lr, stats["kl"], cfg)
            ppo.apply_gradients(loss)
            sums += torch.stack([stats[key] for key in UPDATE_METRICS[:-1]])
            count += 1
        self.metrics.copy_(torch.cat([sums / count, lr.detach().reshape(1).to(sums.dtype)]))
