"""`RaceConfig`, the settings of the RC car race, the info keys the race reports, and the observation space they
imply: car, track, simulation, observation, reward, initial states, randomization and which backend steps the
envs."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from robo_rl.envs import SpaceSpec
from robo_rl.sim.numba_dispatch import Backend, check_backend
from robo_rl.sim.rc_car.params import CarParams
from robo_rl.sim.rc_car.randomization import RandomizationConfig
from robo_rl.sim.rc_car.track import DEFAULT_SPACING

INFO_LAP_TIME = "lap_time"
"""info key: `(num_envs,)` float, duration in s of the lap completed at this step (NaN where none was)."""
INFO_LAPS = "laps"
"""info key: `(num_envs,)` long, laps completed so far in the episode (for a finished episode: its total)."""
INFO_OFF_TRACK = "off_track"
"""info key: `(num_envs,)` bool, the car left the track at this step (the episode terminated)."""
INFO_STALLED = "stalled"
"""info key: `(num_envs,)` bool, the car has been stuck (slower than `stall_speed` for `stall_time`) and the
episode terminated at this step."""
INFO_PROGRESS = "progress"
"""info key: `(num_envs,)` float, distance driven along the center line at this step in m (negative backwards)."""
RACE_CAMERAS = ("front",)
"""The race's camera: forward, on the car's nose (`robo_rl.sim.rc_car.track_scene`)."""


@dataclass(frozen=True)
class RaceConfig:
    """Car, track, simulation, observation, reward, initial states and randomization of the race task."""

    car: str = "f1tenth"
    """Bundled car name (see `robo_rl.sim.rc_car.params.car_names`) or path to a car YAML file."""
    track: str = "kidney"
    """Bundled track name ("oval", "kidney", "technical") or path to a track CSV file (see `track`)."""
    track_spacing: float = DEFAULT_SPACING
    """Length in m of the segments the center line is resampled to."""
    dt: float = 0.02
    """Control period in s."""
    substeps: int = 4
    """Semi-implicit Euler steps per control period."""
    episode_length: float = 30.0
    """Episode duration in s before truncation (max_episode_steps = episode_length / dt, rounded)."""
    lookahead_points: int = 10
    """Center-line points ahead of the car in the observation."""
    lookahead_spacing: float = 0.5
    """Distance along the center line in m between look-ahead points (the first is this far ahead)."""
    action_history: int = 2
    """Previous actions in the observation (2 values each, newest first); at least the action latency in steps
    keeps the observation Markov."""
    progress_weight: float = 1.0
    """Reward per m driven along the center line (negative when driving backwards)."""
    action_weight: float = 0.0
    """Reward penalty per squared unit of action (steering and drive, each in [-1, 1]) per step."""
    steering_rate_weight: float = 0.01
    """Reward penalty per squared change of the steering action from the previous step."""
    off_track_penalty: float = 5.0
    """Reward penalty charged once, at the step that leaves the track."""
    off_track_margin: float = 0.0
    """The car is off the track when its CoG is farther than half the track width plus this many m from the
    center line (negative values keep the whole car body on the track)."""
    stall_speed: float = 0.25
    """A car slower than this many m/s..."""
    stall_time: float = 2.0
    """...for this many s on end is stuck: the episode terminates, as a failure (0 disables). Without it a policy
    may learn to stop where driving on looks risky, and stand still for the rest of the episode."""
    stall_penalty: float = 5.0
    """Reward penalty charged once, at the step a stuck car's episode terminates."""
    init_offset: float = 0.5
    """Initial lateral offset: U(-r, r) times half the track width."""
    init_heading: float = 0.3
    """Initial heading relative to the center line: U(-r, r) rad."""
    init_speed: float = 2.0
    """Initial forward speed: U(0, r) m/s (no sideways velocity or yaw rate, wheels straight)."""
    success_laps: int = 1
    """An episode succeeds when it runs to the time limit without leaving the track and has completed at least
    this many laps (a lap: one track length of progress, counted from the episode's start point)."""
    cost_speed_limit: float = 0.0
    """A constraint for safe RL (`info["cost"]`, issue 54): a step costs the car's forward speed above this (m/s)
    while it is within `cost_edge_distance` of the track's edge, summed over the episode. 0: no cost (the task
    declares none)."""
    cost_edge_distance: float = 0.3
    """Where the speed limit holds: within this many m of either edge of the track."""
    randomization: RandomizationConfig = field(default_factory=RandomizationConfig)
    """Domain randomization (friction, mass, latency), all off by default."""
    backend: Backend = "torch"
    """"torch": tensor ops (CPU or CUDA). "numba": the whole step in one compiled per-env CPU loop
    (`robo_rl.sim.rc_car.fused`, the same equations), without domain randomization (the car's own latency is
    kept); its reset draws come from a counter-based generator inside the kernel, so its episodes differ from the
    torch backend's (same distribution). Compiled once into a disk cache (see `robo_rl.sim.numba_support`).
    "auto": numba where it applies (and is installed), else torch: what the race preset evaluates on."""
    cameras: tuple[str, ...] = ()
    """Observation cameras: ("front",) for the forward camera on a textured track drawn by MuJoCo. Non-empty only for
    the camera env `robo_rl.sim.rc_car.race_pixels.RCCarRacePixels` (task rc_car/race_pixels), which steps the torch
    backend; `RCCarRace` itself observes the state vector and refuses cameras."""
    image_size: int = 64
    """Height and width in pixels of each camera's square frames (with `cameras`)."""
    camera_state: tuple[str, ...] = ()
    """With `cameras`: the names of the state vector (`observation_spec`) the camera car still observes, e.g.
    ("vx",) for a car that sees its camera and its speed; the whole vector becomes privileged (a critic's or a
    teacher's input, `robo_rl.sim.camera_task`). () observes the whole vector."""

    def __post_init__(self) -> None:
        check_backend("RaceConfig", self.backend, self.numba_unsupported())
        positive: tuple[str, ...] = ("track_spacing", "dt", "episode_length", "lookahead_spacing")
        bad = [name for name in positive if not getattr(self, name) > 0]
        non_negative: tuple[str, ...] = ("progress_weight", "action_weight", "steering_rate_weight")
        non_negative += ("off_track_penalty",)
        non_negative += ("stall_speed", "stall_time", "stall_penalty")
        non_negative += ("init_offset", "init_heading", "init_speed", "cost_speed_limit", "cost_edge_distance")
        bad += [name for name in non_negative if not getattr(self, name) >= 0]
        if bad:
            raise ValueError(f"RaceConfig fields out of range (must be positive, or >= 0 for weights/ranges): {bad}")
        if any(name not in RACE_CAMERAS for name in self.cameras) or len(set(self.cameras)) != len(self.cameras):
            raise ValueError(f"RaceConfig.cameras must be distinct names of {RACE_CAMERAS}, got {self.cameras!r}")
        if self.camera_state and not self.cameras:
            raise ValueError(f"RaceConfig.camera_state={self.camera_state!r} needs cameras (the rest is seen there)")
        integers = (("substeps", 1), ("lookahead_points", 1), ("action_history", 0), ("success_laps", 1))
        for name, low in (*integers, ("image_size", 1)):
            value = getattr(self, name)
            if not isinstance(value, int) or value < low:
                raise ValueError(f"RaceConfig.{name} must be an int >= {low}, got {value}")
        if self.init_offset > 1:
            raise ValueError(f"RaceConfig.init_offset is a fraction of the half width, <= 1; got {self.init_offset}")
        if self.max_episode_steps < 1:
            raise ValueError(f"RaceConfig.episode_length must be at least dt, got {self.episode_length}")

    def numba_unsupported(self) -> list[str]:
        """What this configuration would need for the numba step (empty: it applies, on the CPU)."""
        unsupported = ["no domain randomization (friction, mass, latency)"] if self.randomized else []
        return unsupported + (["no cost (cost_speed_limit 0)"] if self.cost_speed_limit > 0 else [])

    @property
    def randomized(self) -> bool:
        """Whether each episode draws its own friction, mass or latency (the numba step has none)."""
        return self.randomization.randomizes_dynamics or self.randomization.randomizes_latency

    @property
    def max_episode_steps(self) -> int:
        return round(self.episode_length / self.dt)

    @property
    def stall_steps(self) -> int:
        """Control steps below `stall_speed` after which a car is stuck (0: never)."""
        return max(1, round(self.stall_time / self.dt)) if self.stall_time > 0 else 0


def observation_spec(config: RaceConfig, params: CarParams) -> SpaceSpec:
    """The observation's names, bounds and units (`RCCarRace`)."""
    inf, c, p = math.inf, config, params
    groups: list[tuple[list[str], float, float, str]] = [
        ([f"lookahead_{k}_{axis}" for k in range(1, c.lookahead_points + 1) for axis in "xy"], -inf, inf, "m"),
        (["vx", "vy"], -inf, inf, "m/s"),
        (["yaw_rate"], -inf, inf, "rad/s"),
        (["steer"], -p.max_steer, p.max_steer, "rad"),
        (["lateral_offset"], -inf, inf, "m"),
        (["heading_error"], -math.pi, math.pi, "rad"),
        (["half_width"], 0.0, inf, "m"),
        ([f"previous_{name}_{k}" for k in range(c.action_history) for name in ("steering", "drive")], -1, 1, "1"),
    ]
    return SpaceSpec(
        names=tuple(name for g in groups for name in g[0]),
        low=tuple(float(g[1]) for g in groups for _ in g[0]),
        high=tuple(float(g[2]) for g in groups for _ in g[0]),
        units=tuple(g[3] for g in groups for _ in g[0]),
    )
