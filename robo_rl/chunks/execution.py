"""Executing action chunks: temporal ensembling or a receding horizon. Numpy only (the deploy side uses it).

A chunked policy evaluated at time t returns H actions, action i meant for `t + i * dt`. Two ways to turn the
chunks into one action per control period:

- **receding horizon** ("receding"): execute the first `execute` actions of a chunk open loop, then switch to a
  chunk made from a newer observation. Reproduces `ChunkEnv(execute=...)`, the way the policy was trained.
- **temporal ensembling** ("ensemble", ACT, Zhao et al. 2023): evaluate the policy at every observation and send,
  at each period, the weighted mean of every chunk's prediction for that period. ACT's weights are
  `w_i = exp(-m * i)` with i = 0 for the OLDEST prediction, normalized; so a prediction of age `a` periods weighs
  `∝ exp(m * a)`: m > 0 (ACT's 0.01) favours older predictions (smoother), m < 0 newer ones (more reactive), 0 is
  the plain mean. A mean of in-bounds actions stays in bounds.

`ChunkExecutor` does this step by step for N envs at once (evaluation in a simulator: one chunk per env per step);
`TimedChunkQueue` by timestamps for one robot (policy_node: chunks stamped with their observation's time, a
command at each tick, none when every action of every chunk is in the past).
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass

import numpy as np

from robo_rl.chunks.spec import check_horizon

EXECUTION_MODES = ("ensemble", "receding")


@dataclass(frozen=True)
class ChunkExecution:
    """How chunks become actions."""

    mode: str = "ensemble"
    """"ensemble" (temporal ensembling over the chunks covering a period) or "receding" (receding horizon)."""
    ensemble_decay: float = 0.01
    """m of the ensemble weights `w_i = exp(-m * i)`, i = 0 for the oldest prediction (ACT's default 0.01)."""
    execute: int = 0
    """Receding horizon: actions of a chunk executed before switching to a newer one; 0: all H of them."""

    def __post_init__(self) -> None:
        if self.mode not in EXECUTION_MODES:
            raise ValueError(f"chunk execution mode must be one of {EXECUTION_MODES}, got {self.mode!r}")
        if not math.isfinite(self.ensemble_decay):
            raise ValueError(f"ensemble_decay must be finite, got {self.ensemble_decay}")
        if self.execute < 0:
            raise ValueError(f"execute must be >= 0 (0: the whole chunk), got {self.execute}")

    def steps(self, horizon: int) -> int:
        """Actions executed per chunk with a receding horizon of `horizon` actions (ValueError if above H)."""
        return check_horizon(horizon, self.execute or None)


def ensemble_weights(ages: np.ndarray, decay: float) -> np.ndarray:
    """Unnormalized ACT weights of predictions of `ages` periods (any shape): `exp(decay * (age - oldest))`, so
    the oldest one weighs 1 (i = 0) and the ratios are those of `exp(-decay * i)`."""
    ages = np.asarray(ages, dtype=np.float64)
    return np.exp(decay * (ages - ages.max(initial=0.0)))


class ChunkExecutor:
    """Step-indexed execution for N envs: `act(chunks)` each step, `reset(done)` where episodes ended.

    `act` takes this step's chunks `(N, H, action_dim)` (or `(N, H * action_dim)`) and returns the actions to
    apply `(N, action_dim)`. Receding horizon ignores the chunks of the steps between two switches.
    """

    def __init__(self, num_envs: int, horizon: int, action_dim: int, execution: ChunkExecution) -> None:
        self.horizon, self.action_dim, self.execution = horizon, action_dim, execution
        self.execute = execution.steps(horizon)
        self.history = np.zeros((num_envs, horizon, horizon, action_dim))
        """Ensemble: `history[n, k]` is env n's chunk made k steps ago; receding: `history[n, 0]` is the chunk
        being executed."""
        self.valid = np.zeros((num_envs, horizon), dtype=bool)
        """Ensemble: `valid[n, k]`, env n made a chunk k steps ago in its current episode."""
        self.executed = np.full(num_envs, -1)
        """Receding: actions of `history[n, 0]` executed so far (-1: none chosen in this episode)."""

    def reset(self, done: np.ndarray | None = None) -> None:
        """Forget the chunks of the envs in `done` `(N,)` bool (all without it): their episodes ended."""
        envs = slice(None) if done is None else np.asarray(done, dtype=bool)
        self.valid[envs] = False
        self.executed[envs] = -1

    def act(self, chunks: np.ndarray) -> np.ndarray:
        n, horizon, width = self.history.shape[0], self.horizon, self.action_dim
        chunks = np.asarray(chunks, dtype=np.float64).reshape(n, horizon, width)
        if self.execution.mode == "ensemble":
            return self._ensemble(chunks)
        return self._receding(chunks)

    def _ensemble(self, chunks: np.ndarray) -> np.ndarray:
        self.history = np.roll(self.history, 1, axis=1)
        self.valid = np.roll(self.valid, 1, axis=1)
        self.history[:, 0], self.valid[:, 0] = chunks, True
        ages = np.arange(self.horizon)
        predictions = self.history[:, ages, ages]  # (N, H, A): the chunk of age k's action for now
        weights = np.where(self.valid, ensemble_weights(ages, self.execution.ensemble_decay), 0.0)
        return np.einsum("nk,nka->na", weights, predictions) / weights.sum(axis=1, keepdims=True)

    def _receding(self, chunks: np.ndarray) -> np.ndarray:
        switch = (self.executed < 0) | (self.executed >= self.execute)
        self.history[switch, 0] = chunks[switch]
        self.executed[switch] = 0
        actions = self.history[np.arange(len(chunks)), 0, self.executed]
        self.executed += 1
        return actions


class TimedChunkQueue:
    """Chunks stamped with their observation's time (s) for one robot; `due(now)` gives the action for now.

    Step i of a chunk stamped t is due in the period nearest `t + i * dt` (index `round((now - t) / dt)`: a tick
    a little early or late takes the same action). `due` returns None when no chunk covers `now`, i.e. every
    action of every chunk is in the past: the caller sends its safe command then.
    """

    def __init__(self, horizon: int, action_dim: int, dt: float, execution: ChunkExecution) -> None:
        if not dt > 0:
            raise ValueError(f"dt must be > 0, got {dt}")
        self.horizon, self.action_dim, self.dt, self.execution = horizon, action_dim, dt, execution
        self.execute = execution.steps(horizon)
        self.chunks: deque[tuple[float, np.ndarray]] = deque()
        """(stamp, chunk `(H, action_dim)`), oldest first; receding keeps only the one being executed."""

    def clear(self) -> None:
        self.chunks.clear()

    def index(self, stamp: float, now: float) -> int:
        """The step of a chunk stamped `stamp` due at `now` (>= 0; >= H: the chunk is spent)."""
        return max(0, math.floor((now - stamp) / self.dt + 0.5))

    def wants_chunk(self, now: float) -> bool:
        """Whether a chunk from a new observation would be used: always when ensembling; with a receding horizon
        once the current chunk has had its `execute` actions (or there is none)."""
        if self.execution.mode == "ensemble" or not self.chunks:
            return True
        return self.index(self.chunks[-1][0], now) >= self.execute

    def push(self, chunk: np.ndarray, stamp: float) -> None:
        """A chunk `(H, action_dim)` (or flat) from the observation of time `stamp`; receding: it replaces the
        current one."""
        values = np.asarray(chunk, dtype=np.float64)
        if values.size != self.horizon * self.action_dim:
            raise ValueError(f"chunk has {values.size} values, expected H={self.horizon} × {self.action_dim}")
        if self.execution.mode == "receding":
            self.chunks.clear()
        self.chunks.append((float(stamp), values.reshape(self.horizon, self.action_dim)))

    def due(self, now: float) -> np.ndarray | None:
        """The action `(action_dim,)` for `now`, or None when every queued action is in the past. Spent chunks
        are dropped."""
        while self.chunks and self.index(self.chunks[0][0], now) >= self.horizon:
            self.chunks.popleft()
        if not self.chunks:
            return None
        indices = np.array([self.index(stamp, now) for stamp, _ in self.chunks])
        predictions = np.stack([chunk[i] for (_, chunk), i in zip(self.chunks, indices, strict=True)])
        weights = ensemble_weights(indices, self.execution.ensemble_decay)
        return weights @ predictions / weights.sum()
