"""The teacher's task (robo_rl.sim.privileged_actor): its observation is the plain task's observation followed by its
privileged observation, step for step, final observations of ended episodes included."""

from __future__ import annotations

import torch

from robo_rl.envs import INFO_FINAL_OBS, INFO_FINAL_PRIVILEGED_OBS, INFO_PRIVILEGED_OBS
from robo_rl.sim import make
from robo_rl.sim.quadrotor.airframes import AirframeDistribution
from robo_rl.sim.quadrotor.hover import HoverConfig


def test_the_teacher_sees_the_task_observation_then_the_privileged_one() -> None:
    config = HoverConfig(airframes=AirframeDistribution(), episode_length=0.2, backend="torch")
    plain, teacher = make("quadrotor/hover", 16, config=config), make("quadrotor/hover_teacher", 16, config=config)
    assert teacher.obs_spec.names == plain.obs_spec.names + plain.privileged_obs_spec.names
    obs, wrapped = plain.reset(seed=3), teacher.reset(seed=3)
    torch.testing.assert_close(wrapped, torch.cat((obs, plain.privileged_obs), dim=-1))
    ended = 0
    for step in range(30):
        action = torch.sin(torch.arange(64.0).reshape(16, 4) + step)
        obs, _, terminated, truncated, info = plain.step(action)
        wrapped, _, _, _, wrapped_info = teacher.step(action)
        torch.testing.assert_close(wrapped, torch.cat((obs, info[INFO_PRIVILEGED_OBS]), dim=-1))
        final = torch.cat((info[INFO_FINAL_OBS], info[INFO_FINAL_PRIVILEGED_OBS]), dim=-1)
        torch.testing.assert_close(wrapped_info[INFO_FINAL_OBS], final)
        ended += int((terminated | truncated).sum())
    assert ended > 0  # episodes ended (time limit 0.2 s), so final observations differed from the next ones
