"""RC car racing as a `BatchedEnv`: drive laps of a closed track as fast as possible without leaving it.

`RCCarRace`'s settings and info keys are in `robo_rl.sim.rc_car.race_config`, its torch step's reward, observation
and initial states in `robo_rl.sim.rc_car.race_physics`, its numba step in `robo_rl.sim.rc_car.race_numba`. The car
model is `robo_rl.sim.rc_car.dynamics`, its parameters `robo_rl.sim.rc_car.params`, the tracks
`robo_rl.sim.rc_car.track`, the domain randomization `robo_rl.sim.rc_car.randomization`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

import robo_rl.sim.rc_car.race_physics as physics
from robo_rl.actuator import DriveActuator
from robo_rl.cost_spec import CostSpec, speed_near_edge
from robo_rl.envs import (
    INFO_COST,
    SpaceSpec,
    StepResult,
)
from robo_rl.sim.batched_task import BatchedTask
from robo_rl.sim.numba_dispatch import KernelRun, kernel_seed, uses_numba
from robo_rl.sim.rc_car.dynamics import STATE_DIM, VX, YAW, YAW_RATE, CarModel, integrate, speed_setpoint
from robo_rl.sim.rc_car.params import SPEED_MODE, CarParams, load_car
from robo_rl.sim.rc_car.race_config import (
    INFO_LAP_TIME,
    INFO_LAPS,
    INFO_OFF_TRACK,
    INFO_PROGRESS,
    INFO_STALLED,
    RACE_CAMERAS,
    RaceConfig,
    observation_spec,
)
from robo_rl.sim.rc_car.race_physics import RaceTensors
from robo_rl.sim.rc_car.randomization import FRICTION, LATENCY, MASS_SCALE, EpisodeSampler
from robo_rl.sim.rc_car.track import Track, TrackProjection, load_track

__all__ = [
    "INFO_LAPS",
    "INFO_LAP_TIME",
    "INFO_OFF_TRACK",
    "INFO_PROGRESS",
    "INFO_STALLED",
    "RACE_CAMERAS",
    "RCCarRace",
    "RaceConfig",
]

DEFAULT_CONFIG = RaceConfig()

if TYPE_CHECKING:  # numba loads only for the numba step
    from robo_rl.sim.rc_car.race_numba import RaceKernel


def speed_near_edge_spec(config: RaceConfig) -> CostSpec:
    """The cost `RaceConfig.cost_speed_limit` declares."""
    return speed_near_edge(config.cost_speed_limit, config.cost_edge_distance)


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
        config: RaceConfig = DEFAULT_CONFIG,
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
        self.obs_spec = observation_spec(config, self._params)
        self.action_spec = SpaceSpec(("steering", "drive"), (-1.0, -1.0), (1.0, 1.0), ("1", "1"))
        self.privileged_obs_spec = self._sampler.spec
        self.cost_spec = None if config.cost_speed_limit <= 0 else speed_near_edge_spec(config)
        self._lookahead = config.lookahead_spacing * torch.arange(
            1, config.lookahead_points + 1, device=self.device, dtype=self.dtype
        )
        self._renderer: Any = None
        self._fused: RaceKernel | None = None
        self._fused_seed = self._fused_steps = 0
        if uses_numba(config.backend, self.device.type == "cpu" and not config.numba_unsupported()):
            self._fused = self._numba_kernel()
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
            self._fused_seed = kernel_seed(self._generator)
        return self._observe().T.contiguous()

    def step(self, action: torch.Tensor) -> StepResult:
        """Apply actions `(num_envs, 2)` in [-1, 1] for `dt`; auto-resets envs whose episode is over."""
        if self._fused is not None:
            return self._numba_step(self._fused, action)
        action = action.to(device=self.device, dtype=self.dtype).reshape(self.num_envs, 2).T.clamp(-1.0, 1.0)
        draws = self._draw()  # before anything else: the random stream does not depend on the outcome
        previous_steering = self._last_action[0]
        self._advance(action)
        progress = self._track.progress(self._s_before, self._projection.s).nan_to_num(0.0)
        lap_time = self._count_laps(progress)
        off_track, stalled = self._off_track(), self._stalled()
        cost = self._speed_near_edge() if self.cost_spec is not None else None
        terminated = off_track | stalled
        reward = physics.reward(self.config, progress, action, previous_steering, off_track, stalled)
        truncated = self._truncated(terminated)
        success = truncated & (self._laps >= self.config.success_laps)
        laps = self._laps.clone()
        final_obs, final_privileged = self._observe(), self._episode.T.contiguous()
        if self.episode_end_hook is not None:
            self.episode_end_hook()
        obs = self._auto_reset(terminated | truncated, final_obs, *draws)
        self.privileged_obs = self._episode.T.contiguous()
        outcome = physics.StepOutcome(success, lap_time, laps, off_track, stalled, progress)
        info = physics.step_info(final_obs, self.privileged_obs, final_privileged, outcome)
        if cost is not None:
            info[INFO_COST] = cost
        return obs.T.contiguous(), reward, terminated, truncated, info

    @property
    def kernel_run(self) -> KernelRun | None:
        """The numba step's kernel run (its `threads` may be set), or None where the torch step runs."""
        return None if self._fused is None else self._fused.run

    def _numba_kernel(self) -> RaceKernel:
        """The numba step (`robo_rl.sim.rc_car.race_numba`) of this env."""
        if self.device.type != "cpu":
            raise ValueError("RaceConfig.backend='numba' runs on the CPU only")
        from robo_rl.sim.rc_car.race_numba import RaceKernel

        latency, delay = self._sampler.max_latency, self._drive_delay
        model, n, dim = self._nominal, self.num_envs, self.obs_spec.dim
        return RaceKernel(self.config, self._params, model, self._track, latency, delay, n, dim)

    def _numba_step(self, kernel: RaceKernel, action: torch.Tensor) -> StepResult:
        """`step` by the numba kernel: the same outcome as the torch ops (to float rounding) but for reset draws."""
        self._fused_steps += 1
        tensors = RaceTensors(
            self._state, self._buffer, self._history, self._last_action, self._steps, self._laps, self._slow_steps,
            self._distance, self._lap_start,
        )  # fmt: skip
        seed, counter = self._fused_seed, self._fused_steps
        result, self._projection = kernel.step(tensors, self._projection, action, seed, counter, self.privileged_obs)
        return result

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
        self._drive_command = state_dict["drive_command"].to(device=self.device, dtype=self.dtype).clone()
        self._laps = state_dict["laps"].to(device=self.device, dtype=torch.long).clone()
        self._slow_steps = state_dict["slow_steps"].to(device=self.device, dtype=torch.long).clone()
        self._fused_seed = int(state_dict["fused_seed"])
        self._fused_steps = int(state_dict["fused_steps"])
        self._apply_episode()
        self._state = state_dict["state"].to(device=self.device, dtype=self.dtype).T.contiguous()
        segment = state_dict["segment"].to(device=self.device, dtype=torch.long)
        # The projection as it was (a numba step's projection is not bit-equal to a torch re-projection).
        rows = state_dict["projection"].to(device=self.device, dtype=self.dtype).clone()
        s, offset, heading, half_width = rows.unbind(0)
        self._projection = TrackProjection(s, offset, heading, half_width, segment.clone())
        self.privileged_obs = self._episode.T.contiguous()

    # ------------------------------------------------------------------------------------------------ internals

    @property
    def _buffer_depth(self) -> int:
        """Rows of the action buffer: the largest latency plus the drive's extra delay, plus the newest action."""
        return self._sampler.max_latency + self._drive_delay + 1

    def _draw(self) -> tuple[torch.Tensor, torch.Tensor | None]:
        """U(0, 1) draws of one step: initial states `(4, N)`, then episode parameters `(3, N)` if randomized."""
        generator, n = self._generator, self.num_envs
        init = torch.rand(physics.RESET_DRAWS, n, generator=generator, device=self.device, dtype=self.dtype)
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

    def _speed_near_edge(self) -> torch.Tensor:
        """`(N,)` this step's cost: forward speed above `cost_speed_limit` (m/s) within `cost_edge_distance` of an
        edge (off the track counts as near it), 0 elsewhere."""
        p, c = self._projection, self.config
        near = (p.half_width - p.lateral_offset.abs() < c.cost_edge_distance).nan_to_num(True)
        excess = (self._state[VX] - c.cost_speed_limit).clamp_min(0.0).nan_to_num(0.0)
        return excess * near

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

    def _observe(self) -> torch.Tensor:
        """Component-major observation `(obs_dim, N)` of the current states."""
        return physics.observe(self._state, self._projection, self._track, self._lookahead, self._history)

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
        return physics.initial_state(self.config, self._track, uniform)

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
