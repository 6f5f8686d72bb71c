"""The action spec of a chunk of H actions: one step's spec repeated, its names suffixed `@i` (step i).

Standard library only (the deploy side and the artifact reader may use it). A chunk of actions is a flat vector
`(H * action_dim,)`; step i's action is entries `[i * action_dim, (i + 1) * action_dim)`.
"""

from __future__ import annotations

from robo_rl.spaces import SpaceSpec

STEP_SEPARATOR = "@"


def check_horizon(horizon: int, execute: int | None = None) -> int:
    """`execute` resolved (None: the whole chunk, H), after checking 1 <= execute <= horizon; ValueError otherwise."""
    if isinstance(horizon, bool) or not isinstance(horizon, int) or horizon < 1:
        raise ValueError(f"action chunk horizon H must be an integer >= 1, got {horizon!r}")
    steps = horizon if execute is None else execute
    if isinstance(steps, bool) or not isinstance(steps, int) or not 1 <= steps <= horizon:
        raise ValueError(f"executed actions per chunk must be an integer in [1, H={horizon}], got {execute!r}")
    return steps


def chunk_spec(step: SpaceSpec, horizon: int) -> SpaceSpec:
    """The spec of `horizon` consecutive actions of `step`: names `NAME@0 … NAME@{H-1}` (step-major), bounds and
    units repeated."""
    check_horizon(horizon)
    names = tuple(f"{name}{STEP_SEPARATOR}{i}" for i in range(horizon) for name in step.names)
    return SpaceSpec(names, step.low * horizon, step.high * horizon, step.units * horizon)


def step_spec(chunk: SpaceSpec, horizon: int) -> SpaceSpec:
    """The one-step spec of a `chunk_spec`; ValueError when `chunk` is not one (width, names, bounds)."""
    check_horizon(horizon)
    if chunk.dim % horizon:
        raise ValueError(f"a chunk of {horizon} actions cannot have {chunk.dim} elements")
    width = chunk.dim // horizon
    suffix = f"{STEP_SEPARATOR}0"
    if not all(name.endswith(suffix) for name in chunk.names[:width]):
        raise ValueError(f"not a chunk spec: its first names {list(chunk.names[:width])} lack the suffix {suffix!r}")
    names = tuple(name[: -len(suffix)] for name in chunk.names[:width])
    step = SpaceSpec(names, chunk.low[:width], chunk.high[:width], chunk.units[:width])
    if chunk_spec(step, horizon) != chunk:
        raise ValueError(f"not a chunk spec of {horizon} steps of {list(names)}: its steps differ")
    return step
