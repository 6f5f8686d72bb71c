"""What the user supplies to an import (`robo-rl import ... --dt --obs-names ...`) and the checks that turn it, with
what the source file knows, into the artifact's vectors. A policy file from another stack knows its widths (and,
for SB3, its spaces' bounds) but not what its numbers mean; whatever is still missing stops the import with a
`MissingInfoError` that names the flag to give."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from robo_rl.spaces import SpaceSpec


class MissingInfoError(ValueError):
    """The source and the flags together do not say something the artifact needs, or a file cannot be used; the
    message is one line naming the flag or the file."""


def gather(*parts: Callable[[], Any]) -> tuple[Any, ...]:
    """Each part's value; when some raise MissingInfoError, one error listing every missing piece (so that one
    rerun with all the flags suffices)."""
    values, missing = [], []
    for part in parts:
        try:
            values.append(part())
        except MissingInfoError as err:
            missing.append(str(err))
    if len(missing) == 1:
        raise MissingInfoError(missing[0])
    if missing:
        raise MissingInfoError("; and ".join(missing))
    return tuple(values)


@dataclass(frozen=True)
class Supplied:
    """The user's description of a foreign policy. Lists may also hold one entry, meaning "the same for all"
    (units, bounds)."""

    dt: float | None = None
    """Control period in s (`--dt`)."""
    task: str | None = None
    """Task name recorded in the artifact and the draft profile (`--task`); a default names the source."""
    obs_names: tuple[str, ...] = ()
    obs_units: tuple[str, ...] = ()
    action_names: tuple[str, ...] = ()
    action_units: tuple[str, ...] = ()
    action_low: tuple[float, ...] = ()
    action_high: tuple[float, ...] = ()
    joint_names: tuple[str, ...] = ()
    """The robot's joints, in the simulator's order (`--joint-names`): needed where a config names them by regex."""

    def control_period(self, known: float | None, source: str) -> float:
        """The supplied dt, else the source's; MissingInfoError when neither says."""
        dt = self.dt if self.dt is not None else known
        if dt is None:
            raise MissingInfoError(f"{source} does not say its control period: supply --dt SECONDS")
        if not (math.isfinite(dt) and dt > 0):
            raise MissingInfoError(f"--dt must be a positive number of seconds, got {dt}")
        return float(dt)


def box_center_half(
    low: Sequence[float] | np.ndarray, high: Sequence[float] | np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Center and half-width of a finite box; a zero width becomes a tiny one, so that dividing by it stays finite
    (the entry is then pinned to its one value)."""
    lo, hi = np.asarray(low, dtype=np.float64), np.asarray(high, dtype=np.float64)
    return (lo + hi) / 2, np.maximum((hi - lo) / 2, 1e-12)


def listed(
    values: Sequence[str], size: int, flag: str, what: str, default: Sequence[str] | None = None
) -> tuple[str, ...]:
    """`values` as exactly `size` strings: one value is repeated; none gives `default` (MissingInfoError without)."""
    if not values:
        if default is None:
            raise MissingInfoError(
                f"{what} has {size} entries and the source does not name them: supply {flag} "
                f"with {size} comma-separated values"
            )
        values = default
    if len(values) == 1 and size != 1:
        values = tuple(values) * size
    if len(values) != size:
        raise MissingInfoError(f"{flag}: {what} has {size} entries, got {len(values)} values")
    return tuple(values)


def _per_entry(values: Sequence[float], size: int, flag: str, default: float) -> np.ndarray:
    """A flag's per-entry values (one value is repeated); `default` everywhere when it is not given."""
    if not values:
        return np.full(size, default)
    chosen = np.asarray([float(v) for v in values], dtype=np.float64)
    if len(chosen) == 1 and size != 1:
        chosen = np.full(size, chosen[0])
    if len(chosen) != size:
        raise MissingInfoError(f"{flag}: the action has {size} entries, got {len(chosen)} values")
    return chosen


def action_bounds(
    supplied: Supplied,
    size: int,
    low: Sequence[float] | None,
    high: Sequence[float] | None,
    labels: Sequence[str] | None = None,
) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """The action box: the source's bounds (its action space or clip; ±inf where it has none) intersected with
    `--action-low`/`--action-high`, so that a flag narrows a bound and never replaces it. MissingInfoError when an
    entry is still unbounded, or when the two do not overlap."""
    source_low = np.full(size, -math.inf) if low is None else np.asarray(low, dtype=np.float64)
    source_high = np.full(size, math.inf) if high is None else np.asarray(high, dtype=np.float64)
    if source_low.shape != (size,) or source_high.shape != (size,):
        raise MissingInfoError(f"the source's action bounds have {len(source_low)} entries, the policy outputs {size}")
    lo, hi = gather(
        lambda: np.maximum(source_low, _per_entry(supplied.action_low, size, "--action-low", -math.inf)),
        lambda: np.minimum(source_high, _per_entry(supplied.action_high, size, "--action-high", math.inf)),
    )
    names = list(labels) if labels is not None and len(labels) == size else [f"entry {i}" for i in range(size)]
    open_ended = [names[i] for i in range(size) if not (math.isfinite(lo[i]) and math.isfinite(hi[i]))]
    if open_ended:
        which = "the action" if len(open_ended) == size else f"{', '.join(open_ended[:6])}"
        raise MissingInfoError(
            f"the bounds of {which} are not in the source: supply --action-low and --action-high "
            f"(one value for all {size} entries, or one each)"
        )
    empty = [f"{names[i]} [{source_low[i]:g}, {source_high[i]:g}]" for i in range(size) if lo[i] > hi[i]]
    if empty:
        raise MissingInfoError(
            f"--action-low/--action-high leave nothing of the source's bounds of {', '.join(empty[:6])}"
        )
    return tuple(float(v) for v in lo), tuple(float(v) for v in hi)


def relative_difference(
    got: np.ndarray, expected: np.ndarray, low: Sequence[float] | np.ndarray, high: Sequence[float] | np.ndarray
) -> float:
    """Max over rows and entries of |got − expected| as a fraction of each entry's half-width (the file outputs
    float32, so `expected` is rounded to float32 first: a pinned entry, low = high, then compares exactly)."""
    _, half = box_center_half(low, high)
    reference = np.asarray(expected, dtype=np.float32).astype(np.float64)
    return float(np.max(np.abs(np.asarray(got, dtype=np.float64) - reference) / half))


def one_line(err: BaseException) -> str:
    """A library error's message as one short line (its lines joined), or its type's name when it has none."""
    text = "; ".join(line.strip() for line in str(err).splitlines() if line.strip()) or type(err).__name__
    return text if len(text) <= 200 else text[:197] + "..."


def action_spec(
    supplied: Supplied,
    size: int,
    names: Sequence[str] | None,
    low: Sequence[float] | None,
    high: Sequence[float] | None,
    units: Sequence[str] | None = None,
) -> SpaceSpec:
    """The action vector: names and units from the flags, else from the source (`names`, `units`); bounds from
    both, intersected (`action_bounds`)."""
    labels = names if names is not None else supplied.action_names or None
    fields = gather(
        lambda: listed(supplied.action_names, size, "--action-names", "the action", names),
        lambda: action_bounds(supplied, size, low, high, labels),
        lambda: listed(supplied.action_units, size, "--action-units", "the action", units or ("",)),
    )
    names_, (low_, high_), units_ = fields
    return SpaceSpec(names_, low_, high_, units_)


def obs_spec(
    supplied: Supplied,
    size: int,
    names: Sequence[str] | None,
    low: Sequence[float] | None = None,
    high: Sequence[float] | None = None,
    units: Sequence[str] | None = None,
) -> SpaceSpec:
    """The observation vector: names and units from the flags, else from the source; bounds from the source
    (unbounded where it has none)."""
    return SpaceSpec(
        listed(supplied.obs_names, size, "--obs-names", "the observation", names),
        tuple(low) if low is not None else (-math.inf,) * size,
        tuple(high) if high is not None else (math.inf,) * size,
        listed(supplied.obs_units, size, "--obs-units", "the observation", units or ("",)),
    )
