"""Temporarily stop gradients into a module's parameters."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from torch import nn


@contextmanager
def frozen(module: nn.Module) -> Iterator[nn.Module]:
    """Within the block, backward passes through `module` compute no gradients for its parameters.

    Used for actor updates through a critic: the gradient reaches the action input, while the critic's own
    parameter gradients (which would be discarded) are never computed.
    """
    flags = [p.requires_grad for p in module.parameters()]
    module.requires_grad_(False)
    try:
        yield module
    finally:
        for parameter, flag in zip(module.parameters(), flags, strict=True):
            parameter.requires_grad_(flag)
