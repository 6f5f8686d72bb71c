"""The race's numba backend (`RaceConfig.backend="numba"`): one env batch's constants and its kernel run.

`RCCarRace` hands its tensors to `RaceKernel.step`, which runs `robo_rl.sim.rc_car.fused` on them in place and
returns what the torch step returns; which backend runs is `robo_rl.sim.numba_dispatch`'s choice. Imports numba
(through the kernel): the task loads this module only when it takes the numba step.
"""

from __future__ import annotations

import torch

from robo_rl.envs import StepResult
from robo_rl.sim.numba_dispatch import KernelRun
from robo_rl.sim.rc_car.dynamics import CarModel
from robo_rl.sim.rc_car.fused import constants, step
from robo_rl.sim.rc_car.params import CarParams
from robo_rl.sim.rc_car.race_config import (
    RaceConfig,
)
from robo_rl.sim.rc_car.race_physics import RaceTensors, StepOutcome, step_info
from robo_rl.sim.rc_car.track import Track, TrackProjection


class RaceKernel:
    """The numba step of one batch of race envs on the CPU, without domain randomization (the car's own fixed
    latency is kept)."""

    def __init__(
        self,
        config: RaceConfig,
        params: CarParams,
        model: CarModel,
        track: Track,
        latency: int,
        drive_delay: int,
        num_envs: int,
        obs_dim: int,
    ) -> None:
        """`model` the nominal car, `latency` and `drive_delay` (the speed loop's dead time) in control steps."""
        self.run = KernelRun(step, num_envs)
        self.constants = constants(config, params, model, track, latency, drive_delay)
        self.table = track.segment_table.numpy()
        self.obs_dim = obs_dim

    def step(
        self,
        tensors: RaceTensors,
        projection: TrackProjection,
        action: torch.Tensor,
        seed: int,
        counter: int,
        privileged_obs: torch.Tensor,
    ) -> tuple[StepResult, TrackProjection]:
        """`RCCarRace.step` by the kernel: the same outcome as the torch step (to float rounding) but for the reset
        draws, counter-based from (`seed`, `counter`, env). Returns it and the cars' new projection onto the track
        (`projection` is where they were); `privileged_obs` `(N, 3)` is the episode parameters, fixed here."""
        n, dim = tensors.state.shape[1], self.obs_dim
        action = action.to(device="cpu", dtype=tensors.state.dtype).reshape(n, 2).contiguous()
        rows = torch.stack(tuple(projection[:4]))
        segment = projection.segment.clone()
        obs, final_obs = torch.empty(dim, n), torch.empty(dim, n)
        reward, lap_time, progress = torch.empty(n), torch.empty(n), torch.empty(n)
        flags, laps = torch.empty(5, n, dtype=torch.bool), torch.empty(n, dtype=torch.long)
        state, buffer, history, last_action, steps, lap_count, slow_steps, distance, lap_start = tensors
        counts = (steps, lap_count, slow_steps, segment)
        outcome = (obs, final_obs, reward, flags, lap_time, laps, progress)
        self.run(
            self.constants, self.table, state, buffer, history, last_action, counts, (distance, lap_start), rows,
            action, seed, counter, outcome,
        )  # fmt: skip
        s, offset, heading, half_width = rows.unbind(0)
        terminated, truncated, off_track, stalled, success = flags
        reported = StepOutcome(success, lap_time, laps, off_track, stalled, progress)
        info = step_info(final_obs, privileged_obs, privileged_obs.clone(), reported)
        result = (obs.T.contiguous(), reward, terminated, truncated, info)
        return result, TrackProjection(s, offset, heading, half_width, segment)
