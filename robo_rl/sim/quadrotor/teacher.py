"""`quadrotor/hover_teacher`: the hover task whose actor also observes the episode's hidden parameters (the drawn
airframe with `HoverConfig.airframes`): the teacher a memory student is distilled from (`robo_rl.sim.privileged_actor`,
`robo_rl.algorithms.distill`)."""

from __future__ import annotations

import torch

from robo_rl.sim.privileged_actor import ObservePrivileged
from robo_rl.sim.quadrotor.hover import QuadrotorHover
from robo_rl.sim.quadrotor.hover_config import HoverConfig

DEFAULT = HoverConfig()


class QuadrotorHoverTeacher(ObservePrivileged):
    """`QuadrotorHover(num_envs, device, config, seed)` whose observation ends with its privileged observation."""

    def __init__(
        self, num_envs: int, device: str | torch.device = "cpu", config: HoverConfig = DEFAULT, seed: int | None = None
    ) -> None:
        super().__init__(QuadrotorHover(num_envs, device, config, seed))
