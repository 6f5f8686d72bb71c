"""Running observation normalizer that lives inside the policy module (and so inside the exported ONNX)."""

from __future__ import annotations

import torch
from torch import nn


def make_normalizer(dim: int, enabled: bool) -> nn.Module:
    """An `EmpiricalNormalizer` when enabled, otherwise the identity (so callers never branch)."""
    return EmpiricalNormalizer(dim) if enabled else nn.Identity()


class EmpiricalNormalizer(nn.Module):
    """Normalizes `(batch, dim)` inputs by a running mean and variance, then clips to `±clip`.

    Statistics are buffers, so they are saved with the module's state_dict and exported with it. They are
    updated only by explicit `update()` calls during training, never by `forward`.
    """

    mean: torch.Tensor
    var: torch.Tensor
    count: torch.Tensor

    def __init__(self, dim: int, clip: float = 10.0, eps: float = 1e-8) -> None:
        super().__init__()
        self.clip = clip
        self.eps = eps
        self.register_buffer("mean", torch.zeros(dim))
        self.register_buffer("var", torch.ones(dim))
        self.register_buffer("count", torch.zeros((), dtype=torch.float64))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return ((x - self.mean) / torch.sqrt(self.var + self.eps)).clamp(-self.clip, self.clip)

    @torch.no_grad()
    def update(self, x: torch.Tensor) -> None:
        """Merge the batch `x` `(batch, dim)` into the running statistics (parallel Welford update)."""
        batch_count = x.shape[0]
        if batch_count == 0:
            return
        batch_mean = x.mean(dim=0)
        batch_var = x.var(dim=0, unbiased=False)
        self.merge(batch_mean, batch_var, float(batch_count))

    @torch.no_grad()
    def merge(self, batch_mean: torch.Tensor, batch_var: torch.Tensor, batch_count: float) -> None:
        """Merge precomputed batch moments (also used to combine statistics across processes)."""
        total = self.count + batch_count
        weight = (batch_count / total).to(self.mean.dtype)
        delta = batch_mean - self.mean
        new_mean = self.mean + delta * weight
        new_var = (1.0 - weight) * self.var + weight * batch_var + delta.square() * weight * (1.0 - weight)
        self.mean.copy_(new_mean)
        self.var.copy_(new_var)
        self.count.copy_(total)
