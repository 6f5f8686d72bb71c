"""The stages of the generated C: consecutive layers grouped so that each runs as one loop over the features."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from robo_rl.firmware_export.ir import Dense, Gru, Pointwise
from robo_rl.firmware_export.quantize import QuantizedDense


@dataclass(frozen=True)
class Stage:
    """An optional Dense layer and the pointwise layers that follow it, computed in one pass; or a GRU alone."""

    index: int
    dense: Dense | QuantizedDense | None
    pointwise: tuple[tuple[int, Pointwise], ...]
    """(layer index in the IR, layer)."""
    in_width: int
    out_width: int
    gru: Gru | None = None
    """The stage is this GRU step (then `dense` is None and `pointwise` empty): its output is the new state."""


def stages(layers: Sequence[Dense | QuantizedDense | Pointwise | Gru], obs_dim: int) -> tuple[Stage, ...]:
    """Consecutive layers grouped into stages. A GRU is a stage of its own: the pointwise layers after it start a
    new stage, so that its output (the new state) is never changed in place."""
    groups: list[tuple[Dense | QuantizedDense | Gru | None, list[tuple[int, Pointwise]]]] = []
    for index, layer in enumerate(layers):
        if isinstance(layer, Dense | QuantizedDense | Gru):
            groups.append((layer, []))
        elif groups and not isinstance(groups[-1][0], Gru):
            groups[-1][1].append((index, layer))
        else:
            groups.append((None, [(index, layer)]))
    if not groups:
        groups.append((None, []))  # an identity policy still copies obs to action
    stages, width = [], obs_dim
    for number, (head, pointwise) in enumerate(groups):
        out = head.out_features if head is not None else width
        if isinstance(head, Gru):
            stages.append(Stage(number, None, (), width, out, gru=head))
        else:
            stages.append(Stage(number, head, tuple(pointwise), width, out))
        width = out
    return tuple(stages)
