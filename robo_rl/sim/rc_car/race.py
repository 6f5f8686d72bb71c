"""RC car racing as a `BatchedEnv`: drive laps of a closed track as fast as possible without leaving it.

The car model is `robo_rl.sim.rc_car.dynamics`, its parameters `robo_rl.sim.rc_car.params`, the tracks
`robo_rl.sim.rc_car.track`, the domain randomization `robo_rl.sim.rc_car.randomization`.
"""

from __future__ import annotations

import importlib.util
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import torch

from robo_rl.actuator import DriveActuator
from robo_rl.envs import (
    INFO_FINAL_OBS,
    INFO_FINAL_PRIVILEGED_OBS,
    INFO_PRIVILEGED_OBS,
    INFO_SUCCESS,
    SpaceSpec,
    StepResult,
)
from robo_rl.sim.batched_task import BatchedTask
from robo_rl.sim.rc_car.dynamics import (
    STATE_DIM,
    VX,
    YAW,
    YAW_RATE,
    CarModel,
    integrate,
    speed_setpoint,
    wrap_angle,
)
from robo_rl.sim.rc_car.params import SPEED_MODE, CarParams, load_car
from robo_rl.sim.rc_car.randomization import FRICTION, LATENCY, MASS_SCALE, EpisodeSampler, RandomizationConfig
from robo_rl.sim.rc_car.track import DEFAULT_SPACING, Track, TrackProjection, load_track

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
_RESET_DRAWS = 4
"""Uniform draws per env at reset: arc length, lateral offset, heading error, speed."""


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
    randomization: RandomizationConfig = field(default_factory=RandomizationConfig)
    """Domain randomization (friction, mass, latency), all off by default."""
    backend: Literal["torch", "numba", "auto"] = "torch"
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

    def __post_init__(self) -> None:
        if self.backend not in ("torch", "numba", "auto"):
            raise ValueError(f"RaceConfig.backend must be 'torch', 'numba' or 'auto', got {self.backend!r}")
        if self.backend == "numba" and self.randomized:
            raise ValueError("RaceConfig.backend='numba' needs no domain randomization (friction, mass, latency)")
        positive = ("track_spacing", "dt", "episode_length", "lookahead_spacing")
        bad = [name for name in positive if not getattr(self, name) > 0]
        non_negative = ("progress_weight", "action_weight", "steering_rate_weight", "off_track_penalty")
        non_negative += ("stall_speed", "stall_time", "stall_penalty")
        non_negative += ("init_offset", "init_heading", "init_speed")
        bad += [name for name in non_negative if not getattr(self, name) >= 0]
        if bad:
            raise ValueError(f"RaceConfig fields out of range (must be positive, or >= 0 for weights/ranges): {bad}")
        if any(name not in RACE_CAMERAS for name in self.cameras) or len(set(self.cameras)) != len(self.cameras):
            raise ValueError(f"RaceConfig.cameras must be distinct names of {RACE_CAMERAS}, got {self.cameras!r}")
        integers = (("substeps", 1), ("lookahead_points", 1), ("action_history", 0), ("success_laps", 1))
        for name, low in (*integers, ("image_size", 1)):
            value = getattr(self, name)
            if not isinstance(value, int) or value < low:
                raise ValueError(f"RaceConfig.{name} must be an int >= {low}, got {value}")
        if self.init_offset > 1:
            raise ValueError(f"RaceConfig.init_offset is a fraction of the half width, <= 1; got {self.init_offset}")
        if self.max_episode_steps < 1:
            raise ValueError(f"RaceConfig.episode_length must be at least dt, got {self.episode_length}")

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


class RCCarRace(BatchedTask):
    """`num_envs` RC cars racing on one track, implementing the `BatchedEnv` and `RenderableEnv` protocols.

    Observation `(num_envs, 2 * lookahead_points + 7 + 2 * action_history)`, in the car's body frame (x forward,
    y left): the center-line points `lookahead_spacing`, 2 `lookahead_spacing`, ... m ahead of the car's
    projection (x, y each, m); vx, vy (m/s), yaw rate (rad/s), wheel angle (rad); lateral offset from the center
    line (m, positive left), heading error to it (rad, car yaw minus center-line direction), half the track
    width there (m); the previous actions (newest first).
    Action `(num_envs, 2)` in [-1, 1] (clipped): steering command (fraction of max_steer, positive left) and
    drive, by the car's `command_mode`: the ESC's speed setpoint, drive * speed_scale m/s (negative: brake, then
    reverse; 0: stop), or throttle (> 0) / brake (< 0) as fractions of the full force; applied after the action
    latency (the drive also after the speed loop's dead time). `actuator` states the meaning for the policy
    artifact.

    Reward: `progress_weight` * metres driven along the center line - `action_weight` |a|^2
    - `steering_rate_weight` (steering action - previous one)^2, minus `off_track_penalty` when leaving the track
    and `stall_penalty` when stuck.
    Terminated when the CoG leaves the track (|lateral offset| > half width + `off_track_margin`; non-finite
    states too) or the car is stuck (slower than `stall_speed` for `stall_time`); truncated after
    `max_episode_steps`; finished envs reset inside `step` at a uniformly random point of the track, so a batch
    covers the whole lap.
    `info["success"]`: truncated (neither off track nor stuck) with at least `success_laps` laps. Also in info:
    `lap_time` (s, NaN where no lap ended at this step), `laps`, `off_track`, `stalled`, `progress` (see the
    `INFO_*` keys here). Lap times of the first lap include the start from the initial speed.

    Privileged (critic) observation `(num_envs, 3)`: this episode's friction coefficient, mass scale and action
    latency in control steps (`randomization.EPISODE_NAMES`).

    Internally the car state is component-major `(7, num_envs)` (see `robo_rl.sim.rc_car.dynamics`);
    everything the env returns or accepts is batch-major `(num_envs, ...)`.
    """

    component_major = True

    def __init__(
        self,
        num_envs: int,
        device: str | torch.device = "cpu",
        config: RaceConfig = RaceConfig(),
        seed: int | None = None,
    ) -> None:
        """Build the envs and reset them; `seed` is passed to `reset`, None draws a non-deterministic seed."""
        if config.cameras:
            raise ValueError(
                "RCCarRace observes the state vector only; cameras need RCCarRacePixels (task rc_car/race_pixels), "
                f"got cameras={config.cameras!r}"
            )
        super().__init__(num_envs, device, config.dt, config.max_episode_steps, seed)
        self.episode_end_hook: Callable[[], None] | None = None
        """Called by the torch `step` after the transition, before finished envs restart (every car still in the
        state its step ended in; the numba step has no such point): a camera env keeps the cars' poses there."""
        self.config = config
        self._params = load_car(config.car)
        self._track = load_track(config.track, config.track_spacing, self.device, self.dtype)
        nominal_latency = round(self._params.latency / config.dt)
        self._drive_delay = round(self._params.speed_loop_delay / config.dt) if self.speed_mode else 0
        self._sampler = EpisodeSampler(
            config.randomization, self._params.friction, nominal_latency, self.device, self.dtype
        )
        self._nominal = CarModel.nominal(self._params, num_envs, self.device, self.dtype)
        self.obs_spec = self._obs_spec()
        self.action_spec = SpaceSpec(("steering", "drive"), (-1.0, -1.0), (1.0, 1.0), ("1", "1"))
        self.privileged_obs_spec = self._sampler.spec
        self._lookahead = config.lookahead_spacing * torch.arange(
            1, config.lookahead_points + 1, device=self.device, dtype=self.dtype
        )
        self._renderer: Any = None
        self._fused: Any = None
        self._fused_seed = self._fused_steps = 0
        numba_applies = self.device.type == "cpu" and not config.randomized and importlib.util.find_spec("numba")
        if config.backend == "numba" or (config.backend == "auto" and numba_applies):
            self._fused = self._fused_kernel()
        self.reset(seed)

    # ----------------------------------------------------------------------------------------------- public API

    @property
    def params(self) -> CarParams:
        """Nominal parameters of the car."""
        return self._params

    @property
    def speed_mode(self) -> bool:
        """Whether `drive` is the ESC's speed setpoint (`CarParams.command_mode` "speed"), not throttle/brake."""
        return self._params.command_mode == SPEED_MODE

    @property
    def drive_command(self) -> torch.Tensor:
        """`(num_envs,)` the drive action the car applied in the last step (after its delays), clipped to [-1, 1]."""
        if self._fused is not None:
            return self._buffer[self._sampler.max_latency + self._drive_delay, 1].clone()
        return self._drive_command.clone()

    @property
    def speed_setpoint(self) -> torch.Tensor:
        """`(num_envs,)` the ESC's speed setpoint in m/s of the last step (speed mode: `drive_command` times
        `speed_scale`, within the ESC's limits); ValueError in throttle mode, which has none."""
        if not self.speed_mode:
            raise ValueError(f"car {self._params.name!r} takes throttle (command_mode), not a speed setpoint")
        return speed_setpoint(self.drive_command, self._params)

    @property
    def actuator(self) -> DriveActuator:
        """What the drive action means physically (`robo_rl.actuator.DriveActuator`), as a run records it."""
        p = self._params
        speed = self.speed_mode
        return DriveActuator(
            mode=p.command_mode, action="drive", scale=p.speed_scale if speed else 1.0,
            max_reverse_speed=p.max_reverse_speed if speed else 0.0,
            time_constant=p.speed_time_constant if speed else 0.0,
            delay=(self._drive_delay + round(p.latency / self.dt)) * self.dt,
            max_acceleration=p.max_acceleration if speed else 0.0,
            max_deceleration=p.max_deceleration if speed else 0.0, car=p.name,
        )  # fmt: skip

    @property
    def track(self) -> Track:
        """The track every env drives on."""
        return self._track

    @property
    def state(self) -> torch.Tensor:
        """`(num_envs, 7)` copy of the car states, columns `robo_rl.sim.rc_car.dynamics.STATE_NAMES`."""
        return self._state.T.contiguous()

    @property
    def projection(self) -> TrackProjection:
        """Where each car is on the track now: arc length, lateral offset, center-line heading, half width,
        segment; `(num_envs,)` each (copies)."""
        return TrackProjection(*(value.clone() for value in self._projection))

    @property
    def episode_params(self) -> torch.Tensor:
        """`(num_envs, 3)` copy of this episode's randomized parameters (`randomization.EPISODE_NAMES`)."""
        return self._episode.T.contiguous()

    @property
    def laps(self) -> torch.Tensor:
        """`(num_envs,)` laps completed in the current episodes."""
        return self._laps.clone()

    def set_state(self, state: torch.Tensor) -> None:
        """Overwrite the car states `(num_envs, 7)` and find them on the track again (searching the whole track);
        step counters, lap counts and episode parameters are kept."""
        self._state = state.to(device=self.device, dtype=self.dtype).reshape(self.num_envs, STATE_DIM).T.contiguous()
        self._projection = self._track.project(self._state[:2].T)
        self.privileged_obs = self._episode.T.contiguous()

    def _reset_all(self) -> torch.Tensor:
        """Every car at a random place on the track."""
        n, c = self.num_envs, self.config
        self._episode = self._sampler.nominal(n)
        self._state = torch.zeros(STATE_DIM, n, device=self.device, dtype=self.dtype)
        self._projection = self._track.project(self._state[:2].T)
        self._distance = torch.zeros(n, device=self.device, dtype=self.dtype)
        self._laps = torch.zeros(n, dtype=torch.long, device=self.device)
        self._lap_start = torch.zeros(n, device=self.device, dtype=self.dtype)
        self._slow_steps = torch.zeros(n, dtype=torch.long, device=self.device)
        self._history = torch.zeros(2 * c.action_history, n, device=self.device, dtype=self.dtype)
        self._last_action = torch.zeros(2, n, device=self.device, dtype=self.dtype)
        self._buffer = torch.zeros(self._buffer_depth, 2, n, device=self.device, dtype=self.dtype)
        self._drive_command = torch.zeros(n, device=self.device, dtype=self.dtype)
        self._reset_where(torch.ones(n, dtype=torch.bool, device=self.device), *self._draw())
        self.privileged_obs = self._episode.T.contiguous()
        if self._fused is not None:  # the seed of the kernel's counter-based draws, from this reset's generator
            self._fused_seed = int(torch.randint(2**62, (1,), generator=self._generator))
        return self._observe().T.contiguous()

    def step(self, action: torch.Tensor) -> StepResult:
        """Apply actions `(num_envs, 2)` in [-1, 1] for `dt`; auto-resets envs whose episode is over."""
        if self._fused is not None:
            return self._fused_step(action)
        action = action.to(device=self.device, dtype=self.dtype).reshape(self.num_envs, 2).T.clamp(-1.0, 1.0)
        draws = self._draw()  # before anything else: the random stream does not depend on the outcome
        previous_steering = self._last_action[0]
        self._advance(action)
        progress = self._track.progress(self._s_before, self._projection.s).nan_to_num(0.0)
        lap_time = self._count_laps(progress)
        off_track, stalled = self._off_track(), self._stalled()
        terminated = off_track | stalled
        reward = self._reward(progress, action, previous_steering, off_track, stalled)
        truncated = self._truncated(terminated)
        success = truncated & (self._laps >= self.config.success_laps)
        laps = self._laps.clone()
        final_obs, final_privileged = self._observe(), self._episode.T.contiguous()
        if self.episode_end_hook is not None:
            self.episode_end_hook()
        obs = self._auto_reset(terminated | truncated, final_obs, *draws)
        self.privileged_obs = self._episode.T.contiguous()
        info = {
            INFO_FINAL_OBS: final_obs.T.contiguous(),
            INFO_PRIVILEGED_OBS: self.privileged_obs,
            INFO_FINAL_PRIVILEGED_OBS: final_privileged,
            INFO_SUCCESS: success,
            INFO_LAP_TIME: lap_time,
            INFO_LAPS: laps,
            INFO_OFF_TRACK: off_track,
            INFO_STALLED: stalled,
            INFO_PROGRESS: progress,
        }
        return obs.T.contiguous(), reward, terminated, truncated, info

    def _fused_kernel(self) -> Any:
        """The numba step (`robo_rl.sim.rc_car.fused`) and its constants."""
        if self.device.type != "cpu":
            raise ValueError("RaceConfig.backend='numba' runs on the CPU only")
        from robo_rl.sim.numba_support import FUSED_PARALLEL_ENVS
        from robo_rl.sim.rc_car import fused

        # Below a few hundred envs one thread beats waking numba's pool (sim_bridge steps one env in real time).
        self._fused_threads = torch.get_num_threads() if self.num_envs >= FUSED_PARALLEL_ENVS else 1
        latency = self._sampler.max_latency
        self._fused_constants = fused.constants(
            self.config, self._params, self._nominal, self._track, latency, self._drive_delay
        )
        self._fused_table = self._track.segment_table.numpy()
        return fused

    def _fused_step(self, action: torch.Tensor) -> StepResult:
        """`step` by the numba kernel: the same outcome as the torch ops (to float rounding) but for reset draws."""
        n, dim = self.num_envs, self.obs_spec.dim
        action = action.to(device="cpu", dtype=self.dtype).reshape(n, 2).contiguous()
        self._fused_steps += 1
        projection = torch.stack(tuple(self._projection[:4]))
        segment = self._projection.segment.clone()
        obs, final_obs = torch.empty(dim, n), torch.empty(dim, n)
        reward, lap_time, progress = torch.empty(n), torch.empty(n), torch.empty(n)
        flags, laps = torch.empty(5, n, dtype=torch.bool), torch.empty(n, dtype=torch.long)
        counts = (self._steps, self._laps, self._slow_steps, segment)
        self._fused.step(
            self._fused_threads,
            self._fused_constants, self._fused_table, self._state.numpy(), self._buffer.numpy(),
            self._history.numpy(), self._last_action.numpy(), tuple(t.numpy() for t in counts),
            (self._distance.numpy(), self._lap_start.numpy()), projection.numpy(), action.numpy(), self._fused_seed,
            self._fused_steps, tuple(t.numpy() for t in (obs, final_obs, reward, flags, lap_time, laps, progress)),
        )  # fmt: skip
        self._projection = TrackProjection(*projection, segment)
        terminated, truncated, off_track, stalled, success = flags
        info = {
            INFO_FINAL_OBS: final_obs.T.contiguous(),
            INFO_PRIVILEGED_OBS: self.privileged_obs,
            INFO_FINAL_PRIVILEGED_OBS: self.privileged_obs.clone(),
            INFO_SUCCESS: success,
            INFO_LAP_TIME: lap_time,
            INFO_LAPS: laps,
            INFO_OFF_TRACK: off_track,
            INFO_STALLED: stalled,
            INFO_PROGRESS: progress,
        }
        return obs.T.contiguous(), reward, terminated, truncated, info

    def render(self, index: int = 0) -> np.ndarray:
        """RGB frame `(480, 640, 3)` uint8: the whole track from above and car `index` on it."""
        if not 0 <= index < self.num_envs:
            raise IndexError(f"env index {index} out of range for {self.num_envs} envs")
        if self._renderer is None:
            from robo_rl.sim.rc_car.render import RaceRenderer  # matplotlib only when drawing

            self._renderer = RaceRenderer(self._track, self._params)
        x, y, yaw, vx = (float(v) for v in self._state[[0, 1, YAW, VX], index].cpu())
        label = f"{self._track.name}  {vx:4.1f} m/s  lap {int(self._laps[index]) + 1}"
        return self._renderer.draw(x, y, yaw, label)

    def _physics_state(self) -> dict[str, Any]:
        """Its "state" entry is `(num_envs, 7)`, the others are internal (component-major)."""
        return {
            "state": self.state,
            "segment": self._projection.segment.clone(),
            "projection": torch.stack(tuple(self._projection[:4])),
            "episode": self._episode.clone(),
            "distance": self._distance.clone(),
            "laps": self._laps.clone(),
            "lap_start": self._lap_start.clone(),
            "slow_steps": self._slow_steps.clone(),
            "history": self._history.clone(),
            "last_action": self._last_action.clone(),
            "action_buffer": self._buffer.clone(),
            "drive_command": self._drive_command.clone(),
            "fused_seed": self._fused_seed,
            "fused_steps": self._fused_steps,
        }

    def _load_physics_state(self, state_dict: dict[str, Any]) -> None:
        for name, attribute in (("episode", "_episode"), ("distance", "_distance"), ("lap_start", "_lap_start")):
            setattr(self, attribute, state_dict[name].to(device=self.device, dtype=self.dtype).clone())
        self._history = state_dict["history"].to(device=self.device, dtype=self.dtype).clone()
        self._last_action = state_dict["last_action"].to(device=self.device, dtype=self.dtype).clone()
        self._buffer = state_dict["action_buffer"].to(device=self.device, dtype=self.dtype).clone()
        drive_command = state_dict.get("drive_command", torch.zeros(self.num_envs))
        self._drive_command = drive_command.to(device=self.device, dtype=self.dtype).clone()
        self._laps = state_dict["laps"].to(device=self.device, dtype=torch.long).clone()
        self._slow_steps = state_dict["slow_steps"].to(device=self.device, dtype=torch.long).clone()
        self._fused_seed = int(state_dict.get("fused_seed", 0))
        self._fused_steps = int(state_dict.get("fused_steps", 0))
        self._apply_episode()
        self._state = state_dict["state"].to(device=self.device, dtype=self.dtype).T.contiguous()
        segment = state_dict["segment"].to(device=self.device, dtype=torch.long)
        rows = state_dict.get("projection")
        if rows is None:  # written before the projection was saved: find the cars on the track again
            self._projection = self._track.project(self._state[:2].T, hint=segment)
        else:  # as it was (a numba step's projection is not bit-equal to a torch re-projection)
            self._projection = TrackProjection(*rows.to(device=self.device, dtype=self.dtype).clone(), segment.clone())
        self.privileged_obs = self._episode.T.contiguous()

    # ------------------------------------------------------------------------------------------------ internals

    @property
    def _buffer_depth(self) -> int:
        """Rows of the action buffer: the largest latency plus the drive's extra delay, plus the newest action."""
        return self._sampler.max_latency + self._drive_delay + 1

    def _obs_spec(self) -> SpaceSpec:
        inf, c, p = math.inf, self.config, self._params
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

    def _draw(self) -> tuple[torch.Tensor, torch.Tensor | None]:
        """U(0, 1) draws of one step: initial states `(4, N)`, then episode parameters `(3, N)` if randomized."""
        generator, n = self._generator, self.num_envs
        init = torch.rand(_RESET_DRAWS, n, generator=generator, device=self.device, dtype=self.dtype)
        randomization = self.config.randomization
        episode = None
        if randomization.randomizes_dynamics or randomization.randomizes_latency:
            episode = torch.rand(3, n, generator=generator, device=self.device, dtype=self.dtype)
        return init, episode

    def _advance(self, action: torch.Tensor) -> None:
        """Apply the clipped action `(2, N)` (after its latency) for one control period and re-project."""
        command = self._delayed(action)
        self._drive_command = command[1]
        self._state = integrate(
            self._state, command[0] * self._params.max_steer, command[1], self._model, self.dt, self.config.substeps
        )
        if self.config.action_history > 0:
            self._history = torch.cat((action, self._history[:-2]))
        self._last_action = action
        self._tick()
        self._s_before = self._projection.s
        self._projection = self._track.project(self._state[:2].T, hint=self._projection.segment)

    def _delayed(self, action: torch.Tensor) -> torch.Tensor:
        """The action `(2, N)` to apply now: `action` delayed by each env's latency in control steps (the drive
        also by the speed loop's dead time)."""
        if self._buffer_depth == 1:
            return action
        self._buffer = torch.cat((action.unsqueeze(0), self._buffer[:-1]))
        return self._buffer.gather(0, self._latency_index).squeeze(0)

    def _count_laps(self, progress: torch.Tensor) -> torch.Tensor:
        """Add `progress` (m) to each episode's distance; returns the lap times `(N,)` in s of laps completed at
        this step (the crossing time interpolated within the step), NaN elsewhere."""
        before = self._distance
        self._distance = before + progress
        target = (self._laps + 1).to(self.dtype) * self._track.length
        completed = self._distance >= target
        fraction = ((target - before) / progress.clamp(min=1e-9)).clamp(0.0, 1.0)
        crossing = (self._steps.to(self.dtype) - 1.0 + fraction) * self.dt
        lap_time = torch.where(completed, crossing - self._lap_start, torch.nan)
        self._lap_start = torch.where(completed, crossing, self._lap_start)
        self._laps += completed.long()
        return lap_time

    def _off_track(self) -> torch.Tensor:
        # Written as "not within bounds" so that non-finite states count as off track.
        p = self._projection
        within = p.lateral_offset.abs() <= p.half_width + self.config.off_track_margin
        return ~(within & self._state[VX].isfinite() & self._state[YAW_RATE].isfinite())

    def _stalled(self) -> torch.Tensor:
        """`(N,)` whether each car has now been slower than `stall_speed` for `stall_steps` steps."""
        slow = self._state[VX].abs() < self.config.stall_speed
        self._slow_steps = (self._slow_steps + 1) * slow
        if self.config.stall_steps == 0:
            return torch.zeros_like(slow)
        return self._slow_steps >= self.config.stall_steps

    def _reward(
        self,
        progress: torch.Tensor,
        action: torch.Tensor,
        previous_steering: torch.Tensor,
        off_track: torch.Tensor,
        stalled: torch.Tensor,
    ) -> torch.Tensor:
        c = self.config
        reward = progress * c.progress_weight - c.off_track_penalty * off_track.to(self.dtype)
        reward = reward - c.stall_penalty * (stalled & ~off_track).to(self.dtype)
        if c.action_weight > 0:
            reward = reward - c.action_weight * action.square().sum(0)
        if c.steering_rate_weight > 0:
            reward = reward - c.steering_rate_weight * (action[0] - previous_steering).square()
        return reward

    def _observe(self) -> torch.Tensor:
        """Component-major observation `(obs_dim, N)` of the current states."""
        state, p = self._state, self._projection
        ahead = self._track.point_at(p.s.unsqueeze(-1) + self._lookahead)  # (N, K, 2)
        cos, sin = torch.cos(state[YAW]).unsqueeze(-1), torch.sin(state[YAW]).unsqueeze(-1)
        dx, dy = ahead[..., 0] - state[0].unsqueeze(-1), ahead[..., 1] - state[1].unsqueeze(-1)
        local = torch.stack((cos * dx + sin * dy, cos * dy - sin * dx), dim=-1).flatten(1).T  # (2K, N)
        heading_error = wrap_angle(state[YAW] - p.heading)
        track = torch.stack((p.lateral_offset, heading_error, p.half_width))
        return torch.cat((local, state[VX:STATE_DIM], track, self._history))

    def _reset_where(self, done: torch.Tensor, init: torch.Tensor, episode: torch.Tensor | None) -> None:
        if episode is not None:
            self._episode = torch.where(done, self._sampler.from_uniform(episode), self._episode)
        self._apply_episode()
        fresh, segment = self._initial_state(init)
        self._state = torch.where(done, fresh, self._state)
        hint = torch.where(done, segment, self._projection.segment)
        self._projection = self._track.project(self._state[:2].T, hint=hint)
        self._distance.masked_fill_(done, 0.0)
        self._laps.masked_fill_(done, 0)
        self._lap_start.masked_fill_(done, 0.0)
        self._slow_steps.masked_fill_(done, 0)
        self._history = self._history.masked_fill(done, 0.0)
        self._last_action = self._last_action.masked_fill(done, 0.0)
        self._buffer = self._buffer.masked_fill(done, 0.0)

    def _first_obs(self, done: torch.Tensor, init: torch.Tensor, episode: torch.Tensor | None) -> torch.Tensor:
        return self._observe()

    def _initial_state(self, uniform: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(`(7, N)` states at random places of the track from U(0, 1) `(4, N)`, their segments `(N,)`)."""
        c, track = self.config, self._track
        s = uniform[0] * track.length
        heading = track.heading_at(s)
        offset = (2 * uniform[1] - 1) * c.init_offset * track.half_width_at(s)
        centre = track.point_at(s)
        x = centre[:, 0] - offset * torch.sin(heading)
        y = centre[:, 1] + offset * torch.cos(heading)
        yaw = wrap_angle(heading + (2 * uniform[2] - 1) * c.init_heading)
        vx = uniform[3] * c.init_speed
        zero = torch.zeros_like(vx)
        return torch.stack((x, y, yaw, vx, zero, zero, zero)), track.locate(s)[0]

    def _apply_episode(self) -> None:
        """Derive the car model and the latencies from the episode parameters."""
        episode = self._episode
        if self.config.randomization.randomizes_dynamics:
            friction_scale = episode[FRICTION] / self._params.friction
            self._model = self._nominal.scaled(episode[MASS_SCALE], friction_scale)
        else:
            self._model = self._nominal
        latency = episode[LATENCY].long()
        self._latency_index = torch.stack((latency, latency + self._drive_delay)).unsqueeze(0)
