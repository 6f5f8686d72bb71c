"""Message fields → the policy's observation vector, by name, with the unit conversions the profile declares."""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping, Sequence

import numpy as np

from robo_rl.real.profile import ObservationField, history_source


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
    """

    def __init__(
        self, observations: Sequence[ObservationField], action_names: Sequence[str], safe_action: Sequence[float]
    ) -> None:
        self.observations = tuple(observations)
        self.action_names = tuple(action_names)
        self._index = {name: i for i, name in enumerate(self.action_names)}
        self._factors = np.array([o.factor for o in self.observations], dtype=np.float64)
        # Parsed once: per observation, None (a message field) or (steps_back, action index) of a history source.
        self._sources = tuple(
            None if (h := history_source(o.source)) is None else (h[0], self._index[h[1]]) for o in self.observations
        )
        self._fields = tuple(o.source for o, h in zip(self.observations, self._sources, strict=True) if h is None)
        depth = 1 + max((h[0] for h in self._sources if h is not None), default=0)
        safe = np.asarray(safe_action, dtype=np.float64)
        self._history: deque[np.ndarray] = deque([safe.copy() for _ in range(depth)], maxlen=depth)

    def record_action(self, action: np.ndarray) -> None:
        """Remember the command just sent `(action_dim,)` for the `previous_action` sources."""
        action = np.asarray(action, dtype=np.float64)
        if action.shape != (len(self.action_names),):
            raise ValueError(f"action shape {action.shape}, expected ({len(self.action_names)},)")
        self._history.appendleft(action.copy())

    def __call__(self, fields: Mapping[str, float]) -> np.ndarray:
        """The observation `(obs_dim,)` float32; raises MissingFieldError naming every absent source."""
        missing = [source for source in self._fields if source not in fields]
        if missing:
            raise MissingFieldError(missing)
        raw = np.array(
            [
                fields[o.source] if h is None else self._history[h[0]][h[1]]
                for o, h in zip(self.observations, self._sources, strict=True)
            ],
            dtype=np.float64,
        )
        return (raw * self._factors).astype(np.float32)
