"""Lap times of a driver (a policy or the pure-pursuit baseline) on `RCCarRace`: one flying lap per car.

Every car of the env starts at a random place of the track (seeded), drives its first lap from there (a
standing start from at most `init_speed`) and then a flying lap: the second lap of the same episode. A car that
leaves the track (or gets stuck) is counted as an off-track (stall) event and starts again (first lap, then
flying lap). Cars are timed
until each has driven its flying lap, or until `max_time` s of driving.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import torch

from robo_rl.sim.rc_car.race import RCCarRace
from robo_rl.sim.rc_car.race_config import INFO_LAP_TIME, INFO_LAPS, INFO_OFF_TRACK, INFO_STALLED

Driver = Callable[[torch.Tensor], torch.Tensor]
"""Maps observations `(N, obs_dim)` to actions `(N, 2)`; a state-based driver may read the env instead."""


@dataclass(frozen=True)
class LapReport:
    """Lap times in s and off-track events of one timing session."""

    flying_laps: tuple[float, ...]
    """The flying lap of each car that drove one, in s."""
    first_laps: tuple[float, ...]
    """The first lap (from the random start) preceding each flying lap, in s."""
    off_track: int
    """Times a car left the track before finishing its flying lap."""
    stalls: int
    """Times a car got stuck (see `RaceConfig.stall_time`) before finishing its flying lap."""
    laps: int
    """Laps completed by all cars (first and flying) before each finished its flying lap."""
    cars: int
    """Cars timed (the env's num_envs)."""

    @property
    def mean_flying_lap(self) -> float:
        """Mean flying lap time in s (NaN without any)."""
        return sum(self.flying_laps) / len(self.flying_laps) if self.flying_laps else math.nan

    def summary(self) -> dict[str, float | int | None]:
        """JSON-ready numbers: mean, median, best and worst flying lap, mean first lap, counts."""
        flying = sorted(self.flying_laps)

        def finite(value: float) -> float | None:
            return round(value, 4) if math.isfinite(value) else None

        return {
            "cars": self.cars,
            "flying_laps": len(flying),
            "mean_flying_lap_s": finite(self.mean_flying_lap),
            "median_flying_lap_s": finite(flying[len(flying) // 2]) if flying else None,
            "best_flying_lap_s": finite(flying[0]) if flying else None,
            "worst_flying_lap_s": finite(flying[-1]) if flying else None,
            "mean_first_lap_s": finite(sum(self.first_laps) / len(self.first_laps)) if self.first_laps else None,
            "laps": self.laps,
            "off_track": self.off_track,
            "stalls": self.stalls,
        }


@torch.no_grad()
def time_laps(env: RCCarRace, driver: Driver, seed: int, max_time: float = 120.0) -> LapReport:
    """Drive every car of `env` until it has completed its flying lap (see the module docstring)."""
    obs = env.reset(seed=seed)
    n = env.num_envs
    flying = torch.full((n,), math.nan, dtype=torch.float64)
    first = torch.full((n,), math.nan, dtype=torch.float64)
    off_track, stalls, laps = 0, 0, 0
    for _ in range(math.ceil(max_time / env.dt)):
        obs, _, _, _, info = env.step(driver(obs))
        pending = torch.isnan(flying)
        lap_time, lap = info[INFO_LAP_TIME].double().cpu(), info[INFO_LAPS].cpu()
        ended = pending & ~torch.isnan(lap_time)
        laps += int(ended.sum())
        first = torch.where(ended & (lap == 1), lap_time, first)
        flying = torch.where(ended & (lap == 2), lap_time, flying)
        off_track += int((pending & info[INFO_OFF_TRACK].cpu()).sum())
        stalls += int((pending & info[INFO_STALLED].cpu() & ~info[INFO_OFF_TRACK].cpu()).sum())
        if not bool(torch.isnan(flying).any()):
            break
    done = ~torch.isnan(flying)
    return LapReport(tuple(flying[done].tolist()), tuple(first[done].tolist()), off_track, stalls, laps, n)
