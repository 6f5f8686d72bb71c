"""Batched RC car racing: a dynamic single-track car model, closed tracks, the race task and a pure-pursuit
baseline driver."""

from robo_rl.sim.rc_car.dynamics import STATE_NAMES, CarModel, integrate
from robo_rl.sim.rc_car.lap_timing import LapReport, time_laps
from robo_rl.sim.rc_car.params import CarParams, TireParams, car_names, load_car, load_car_file
from robo_rl.sim.rc_car.pure_pursuit import PurePursuit, PurePursuitConfig
from robo_rl.sim.rc_car.race import RCCarRace
from robo_rl.sim.rc_car.race_config import (
    INFO_LAP_TIME,
    INFO_LAPS,
    INFO_OFF_TRACK,
    INFO_PROGRESS,
    INFO_STALLED,
    RaceConfig,
)
from robo_rl.sim.rc_car.randomization import RandomizationConfig
from robo_rl.sim.rc_car.track import Track, TrackProjection, load_track, read_track_csv, track_names

__all__ = [
    "INFO_LAPS",
    "INFO_LAP_TIME",
    "INFO_OFF_TRACK",
    "INFO_PROGRESS",
    "INFO_STALLED",
    "STATE_NAMES",
    "CarModel",
    "CarParams",
    "LapReport",
    "PurePursuit",
    "PurePursuitConfig",
    "RCCarRace",
    "RaceConfig",
    "RandomizationConfig",
    "TireParams",
    "Track",
    "TrackProjection",
    "car_names",
    "integrate",
    "load_car",
    "load_car_file",
    "load_track",
    "read_track_csv",
    "time_laps",
    "track_names",
]
