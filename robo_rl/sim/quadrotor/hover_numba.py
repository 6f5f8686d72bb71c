"""The hover task's numba backend (`HoverConfig.backend="numba"`): one env batch's constants and its kernel run.

`QuadrotorHover` hands its tensors to `HoverKernel.step`, which runs `robo_rl.sim.quadrotor.fused` on them in place
and returns what the torch step returns; which backend runs is `robo_rl.sim.numba_dispatch`'s choice. Imports
numba (through the kernel): the task loads this module only when it takes the numba step.
"""

from __future__ import annotations

import torch

from robo_rl.envs import (
    INFO_FINAL_OBS,
    INFO_FINAL_PRIVILEGED_OBS,
    INFO_PRIVILEGED_OBS,
    INFO_SUCCESS,
    INFO_TRACKING_ERROR,
    StepResult,
)
from robo_rl.sim.numba_dispatch import KernelRun
from robo_rl.sim.quadrotor.actions import MotorActionMap
from robo_rl.sim.quadrotor.equations import Geometry
from robo_rl.sim.quadrotor.fused import constants, step, with_fraction
from robo_rl.sim.quadrotor.hover_config import HoverConfig
from robo_rl.sim.quadrotor.hover_physics import HoverTensors
from robo_rl.sim.quadrotor.params import QuadrotorParams
from robo_rl.sim.quadrotor.randomization import EpisodeSampler


class HoverKernel:
    """The numba step of one batch of hover envs on the CPU: "motor" actions, a fixed hover point (`HoverConfig.
    numba_unsupported` says what else it needs)."""

    def __init__(
        self,
        config: HoverConfig,
        params: QuadrotorParams,
        action_map: MotorActionMap,
        geometry: Geometry,
        sampler: EpisodeSampler,
        num_envs: int,
        obs_dim: int,
    ) -> None:
        self.config = config
        self.run = KernelRun(step, num_envs)
        self.constants = constants(config, params, action_map, geometry, sampler)
        self.obs_dim = obs_dim
        self.draws_episodes = config.randomization.enabled or config.airframes is not None
        """Whether an ended episode draws new parameters (then the final privileged observation keeps a copy)."""

    def step(self, tensors: HoverTensors, action: torch.Tensor, seed: int, counter: int, fraction: float) -> StepResult:
        """`QuadrotorHover.step` by the kernel: the same outcome as the torch step (to float rounding) but for the
        reset draws, counter-based from (`seed`, `counter`, env); `fraction` the curriculum's now. The step's
        privileged observation is `info[INFO_PRIVILEGED_OBS]`."""
        n, dim = tensors.state.shape[1], self.obs_dim
        action = action.to(device="cpu", dtype=tensors.state.dtype).reshape(n, 4).contiguous()
        c = with_fraction(self.constants, self.config, fraction)
        final_obs, obs = torch.empty(dim, n), torch.empty(dim, n)
        reward, distance = torch.empty(n), torch.empty(n)
        done, terminated, truncated, success = (torch.empty(n, dtype=torch.bool) for _ in range(4))
        rotor, rotor_now = torch.empty(4, n), torch.empty(4, n)
        outcome = (final_obs, reward, done, terminated, truncated, success, distance, rotor)
        # The kernel draws new episode parameters in place where an episode ends: keep the ended ones.
        final_episode = tensors.episode.clone() if self.draws_episodes else tensors.episode
        self.run(c, *tensors, action, seed, counter, outcome, obs, rotor_now)
        info = {
            INFO_FINAL_OBS: final_obs.T.contiguous(),
            INFO_PRIVILEGED_OBS: torch.cat((tensors.episode, rotor_now)).T.contiguous(),
            INFO_FINAL_PRIVILEGED_OBS: torch.cat((final_episode, rotor)).T.contiguous(),
            INFO_SUCCESS: success,
            INFO_TRACKING_ERROR: distance,
        }
        return obs.T.contiguous(), reward, terminated, truncated, info
