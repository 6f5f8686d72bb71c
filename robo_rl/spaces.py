"""Flat vector spaces (`SpaceSpec`): names, bounds and units of observations and actions. Standard library only
(torch is imported where a tensor is asked for), so the policy artifact and the torch-free deploy side use it too.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import torch


@dataclass(frozen=True)
class SpaceSpec:
    """A flat vector space: one name, lower bound, upper bound and SI unit per element.

    Bounds may be infinite for observations; actions must have finite bounds because policies are scaled
    onto them.
    """

    names: tuple[str, ...]
    low: tuple[float, ...]
    high: tuple[float, ...]
    units: tuple[str, ...]

    def __post_init__(self) -> None:
        sizes = {len(self.names), len(self.low), len(self.high), len(self.units)}
        if len(sizes) != 1:
            raise ValueError(
                f"SpaceSpec fields differ in length: names={len(self.names)} low={len(self.low)} "
                f"high={len(self.high)} units={len(self.units)}"
            )
        if len(set(self.names)) != len(self.names):
            raise ValueError(f"SpaceSpec names must be unique, got {self.names}")
        bad = [n for n, lo, hi in zip(self.names, self.low, self.high, strict=False) if not lo <= hi]
        if bad:
            raise ValueError(f"SpaceSpec low > high for {bad}")

    @classmethod
    def unnamed(cls, prefix: str, size: int) -> SpaceSpec:
        """`prefix_0 …` without units or bounds: a vector known only by its width (e.g. a foreign policy's)."""
        names = tuple(f"{prefix}_{i}" for i in range(size))
        return cls(names, (-math.inf,) * size, (math.inf,) * size, ("",) * size)

    @property
    def dim(self) -> int:
        return len(self.names)

    @property
    def is_bounded(self) -> bool:
        return all(math.isfinite(v) for v in self.low + self.high)

    def low_tensor(self, device: torch.device | str = "cpu") -> torch.Tensor:
        import torch

        return torch.tensor(self.low, dtype=torch.float32, device=device)

    def high_tensor(self, device: torch.device | str = "cpu") -> torch.Tensor:
        import torch

        return torch.tensor(self.high, dtype=torch.float32, device=device)

    def to_dict(self) -> dict[str, list[Any]]:
        return {"names": list(self.names), "low": list(self.low), "high": list(self.high), "units": list(self.units)}
