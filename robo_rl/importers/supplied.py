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
    """The source and the flags together do not say something the artifact needs; the message names the flag."""


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


def bounds(values: Sequence[float], size: int, flag: str, default: Sequence[float] | None) -> tuple[float, ...]:
    """Per-entry bounds: supplied (one value is repeated), else `default`; MissingInfoError when neither exists."""
    if not values and default is None:
        raise MissingInfoError(
            f"the action bounds are not in the source: supply {flag} (one value for all {size} entries, or one each)"
        )
    chosen = tuple(float(v) for v in (values or default or ()))
    if len(chosen) == 1 and size != 1:
        chosen = chosen * size
    if len(chosen) != size:
        raise MissingInfoError(f"{flag}: the action has {size} entries, got {len(chosen)} values")
    return chosen


def action_spec(
    supplied: Supplied,
    size: int,
    names: Sequence[str] | None,
    low: Sequence[float] | None,
    high: Sequence[float] | None,
    units: Sequence[str] | None = None,
) -> SpaceSpec:
    """The action vector: names, units and bounds from the flags, else from the source (`names`, `low`, ...)."""
    fields = gather(
        lambda: listed(supplied.action_names, size, "--action-names", "the action", names),
        lambda: bounds(supplied.action_low, size, "--action-low", low),
        lambda: bounds(supplied.action_high, size, "--action-high", high),
        lambda: listed(supplied.action_units, size, "--action-units", "the action", units or ("",)),
    )
    spec = SpaceSpec(*fields)  # type: ignore[arg-type]
    if not spec.is_bounded:
        raise MissingInfoError(
            "the action bounds must be finite (deployment clips commands to them): supply "
            "--action-low and --action-high"
        )
    return spec


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
