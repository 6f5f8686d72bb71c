"""Message fields → the policy's observation vector, by name, with the unit conversions the profile declares."""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Mapping, Sequence

import numpy as np

from robo_rl.real.profile import ObservationField, history_source, integral_source


class MissingFieldError(KeyError):
    """Fields the profile needs are absent from the message data; `missing` names them all."""

    def __init__(self, missing: list[str]) -> None:
        self.missing = tuple(missing)
        super().__init__(f"missing observation fields: {', '.join(missing)}")

    def __str__(self) -> str:
        return str(self.args[0])


class ObservationAssembler:
    """Builds `(obs_dim,)` float32 observations in profile (= policy) order from a flat field dict.

    Sources `previous_action[K].NAME` read the action recorded K + 1 calls of `record_action` ago (the safe
    command before any was recorded), so the policy sees what the robot was actually commanded.

    Sources `integral(FIELD)` read the running integral of FIELD over the policy's control periods, the rule the
    training environment applies (e.g. quadrotor/hover's `position_error_integral_*`): the observation of period k
    is I_k = clip(I_{k-1} + dt * FIELD_k, -L, L), L = `obs_high` of that observation (the policy's bound), with
    I = 0 when the policy's control starts (`reset_integrals`). Each call computes I_k from the kept I_{k-1};
    only `commit_integrals` keeps it, once the policy's own command for that observation went out, so that
    periods spent on the safe command or an operator's action (an e-stop, a fault, stale inputs) do not wind it
    up. `dt` and `obs_high` are needed only by profiles with integral sources.
    """

    def __init__(
        self,
        observations: Sequence[ObservationField],
        action_names: Sequence[str],
        safe_action: Sequence[float],
        dt: float | None = None,
        obs_high: Sequence[float] | None = None,
    ) -> None:
        self.observations = tuple(observations)
        self.action_names = tuple(action_names)
        self._index = {name: i for i, name in enumerate(self.action_names)}
        self._factors = np.array([o.factor for o in self.observations], dtype=np.float64)
        # Parsed once: per observation, None (a message field) or (steps_back, action index) of a history source.
        self._sources = tuple(
            None if (h := history_source(o.source)) is None else (h[0], self._index[h[1]]) for o in self.observations
        )
        self._fields = tuple(o.field for o in self.observations if o.field is not None)
        self._field_index = tuple(i for i, o in enumerate(self.observations) if o.field is not None)
        depth = 1 + max((h[0] for h in self._sources if h is not None), default=0)
        safe = np.asarray(safe_action, dtype=np.float64)
        self._history: deque[np.ndarray] = deque([safe.copy() for _ in range(depth)], maxlen=depth)
        self._integral_index = np.array(
            [i for i, o in enumerate(self.observations) if integral_source(o.source) is not None], dtype=np.intp
        )
        self._integral_limit, self.dt = _integral_settings(self.observations, self._integral_index, dt, obs_high)
        self._integral = np.zeros(len(self._integral_index))
        self._pending: np.ndarray | None = None

    def record_action(self, action: np.ndarray) -> None:
        """Remember the command just sent `(action_dim,)` for the `previous_action` sources."""
        action = np.asarray(action, dtype=np.float64)
        if action.shape != (len(self.action_names),):
            raise ValueError(f"action shape {action.shape}, expected ({len(self.action_names)},)")
        self._history.appendleft(action.copy())

    def commit_integrals(self) -> None:
        """Keep the integrals of the last observation (its command was the policy's); a no-op without one."""
        if self._pending is not None:
            self._integral = self._pending
            self._pending = None

    def reset_integrals(self) -> None:
        """Start the integrals from 0 (the policy's control starts)."""
        self._integral = np.zeros_like(self._integral)
        self._pending = None

    @property
    def integrals(self) -> np.ndarray:
        """The kept integrals `(n_integrals,)`, in observation order of the `integral(...)` sources."""
        return self._integral.copy()

    def __call__(self, fields: Mapping[str, float]) -> np.ndarray:
        """The observation `(obs_dim,)` float32; raises MissingFieldError naming every absent source."""
        self._pending = None
        missing = [source for source in self._fields if source not in fields]
        if missing:
            raise MissingFieldError(missing)
        raw = np.zeros(len(self.observations), dtype=np.float64)
        for i, h in enumerate(self._sources):
            if h is not None:
                raw[i] = self._history[h[0]][h[1]]
        raw[list(self._field_index)] = [fields[source] for source in self._fields]
        values = raw * self._factors
        if len(self._integral_index):
            assert self.dt is not None
            step = self._integral + self.dt * values[self._integral_index]
            self._pending = np.clip(step, -self._integral_limit, self._integral_limit)
            values[self._integral_index] = self._pending
        return values.astype(np.float32)


def _integral_settings(
    observations: Sequence[ObservationField],
    index: np.ndarray,
    dt: float | None,
    obs_high: Sequence[float] | None,
) -> tuple[np.ndarray, float | None]:
    """(the limits L `(n_integrals,)`, dt) of the integral sources; ValueError when they need what is missing."""
    if not len(index):
        return np.zeros(0), dt
    names = [observations[i].name for i in index]
    if dt is None or not dt > 0 or obs_high is None:
        raise ValueError(f"observations {names} integrate: the assembler needs the control period and obs_high")
    if len(obs_high) != len(observations):
        raise ValueError(f"obs_high has {len(obs_high)} bounds for {len(observations)} observations")
    limits = np.array([obs_high[i] for i in index], dtype=np.float64)
    if not np.all(limits > 0) or any(math.isnan(v) for v in limits):
        raise ValueError(f"observations {names}: the integral's bound (obs_high) must be > 0, got {limits.tolist()}")
    return limits, dt
