"""Observation normalizers fitted once and then fixed: the `normalize_obs` of SAC, FQL and PA-RL.

The off-policy runner fits them to the first data it has (the prior buffer, else the first online batch, while the
algorithm says `needs_normalizers`); after that only a checkpoint changes them, so the values the critics learned
keep their meaning. A task whose observations span millimetres and metres (the peg's hole offsets beside its joint
angles) needs them for any network to see the small ones.
"""

from __future__ import annotations

from collections.abc import Iterable

import torch
from torch import nn

from robo_rl.distributed import Reducer, update_normalizer
from robo_rl.modules.normalizer import EmpiricalNormalizer


def unfitted(normalizer: nn.Module | None) -> bool:
    """True for an `EmpiricalNormalizer` that has seen no data (and was not loaded)."""
    return isinstance(normalizer, EmpiricalNormalizer) and float(normalizer.count) == 0.0


def fit_once(pairs: Iterable[tuple[nn.Module | None, torch.Tensor]], reducer: Reducer) -> None:
    """Fit each `(normalizer, observations)` pair's normalizer to its observations, every rank's data merged
    (`reducer`); identities and fitted normalizers are left alone."""
    for normalizer, obs in pairs:
        if normalizer is not None and unfitted(normalizer) and len(obs) > 0:
            update_normalizer(normalizer, obs, reducer)
