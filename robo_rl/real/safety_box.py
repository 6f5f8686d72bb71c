"""The box learning on a robot stays in: limits on observation sources and tighter bounds on actions.

A profile's `workspace` limits field values (`track.lateral_offset` within ±0.6 m, a norm of several fields below
a distance); leaving it ends an episode (`robo_rl.real.episode`). Its `action_box` narrows action bounds while
learning (a car's top speed). Actions go policy → `SafetyBox.clip_action` → `SafetyFilter` → robot.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np

from robo_rl.real.profile import ActionBound, RobotProfile, WorkspaceLimit


def limit_violation(limit: WorkspaceLimit, fields: Mapping[str, float]) -> str:
    """Why `fields` break `limit`, naming the source, the value and the limit; "" when they don't or when one of
    its fields is missing. A non-finite value breaks any limit."""
    if any(source not in fields for source in limit.sources):
        return ""
    values = [float(fields[source]) for source in limit.sources]
    for source, value in zip(limit.sources, values, strict=True):
        if not math.isfinite(value):
            return f"{source} = {value} is not finite"
    value = math.hypot(*values) if limit.norm else values[0]
    if limit.low <= value <= limit.high:
        return ""
    return f"{limit.label} = {value:.6g} outside [{limit.low:g}, {limit.high:g}]"


def limits_hold(limits: Sequence[WorkspaceLimit], fields: Mapping[str, float]) -> bool:
    """Every field of `limits` is present and within its limit."""
    present = all(source in fields for limit in limits for source in limit.sources)
    return present and not any(limit_violation(limit, fields) for limit in limits)


class SafetyBox:
    """A profile's workspace (limits on fields) and action box (bounds on actions, in action order)."""

    def __init__(
        self, workspace: Sequence[WorkspaceLimit], action_box: Sequence[ActionBound], action_names: Sequence[str]
    ) -> None:
        self.workspace = tuple(workspace)
        self.low = np.full(len(action_names), -np.inf)
        """Lower action bounds `(action_dim,)`; -inf where the box leaves an action alone."""
        self.high = np.full(len(action_names), np.inf)
        """Upper action bounds `(action_dim,)`; inf where the box leaves an action alone."""
        for bound in action_box:
            if bound.action not in action_names:
                raise ValueError(f"action_box: unknown action {bound.action!r} (actions: {list(action_names)})")
            index = list(action_names).index(bound.action)
            self.low[index], self.high[index] = bound.low, bound.high

    @classmethod
    def from_profile(cls, profile: RobotProfile) -> SafetyBox:
        """The box of `profile`'s `workspace` and `action_box` sections (empty ones: a box that never acts)."""
        return cls(profile.workspace, profile.action_box, profile.action_names)

    def violations(self, fields: Mapping[str, float]) -> list[str]:
        """One line per broken workspace limit (see `limit_violation`); empty when all hold."""
        return [problem for problem in (limit_violation(limit, fields) for limit in self.workspace) if problem]

    def clip_action(self, action: Sequence[float] | np.ndarray) -> tuple[np.ndarray, bool]:
        """`action` `(action_dim,)` clipped to the action box, and whether that changed it. Non-finite elements pass
        unchanged: the `SafetyFilter` after the box replaces such actions with the safe command."""
        values = np.asarray(action, dtype=np.float64)
        if values.shape != self.low.shape:
            raise ValueError(f"action shape {values.shape}, expected {self.low.shape}")
        clipped = np.clip(values, self.low, self.high)
        changed = bool(np.any((clipped != values) & ~np.isnan(values)))
        return clipped, changed
