"""The arm's constraint (issue 54): mujoco/peg_insert's contact-force cost. Checked against MuJoCo itself: the touch
sensor must read the normal forces `mj_contactForce` gives for the hand's contacts inside the sensing zone, and the
task's per-step peak must be the largest touch reading of the same physics steps run one by one with `mj_step` on a
plain MjData (not through the batched rollout)."""

from __future__ import annotations

import mujoco
import numpy as np
import pytest
import torch

from robo_rl.cost_spec import cost_spec_of
from robo_rl.envs import INFO_COST
from robo_rl.sim.mujoco.model import FULL_PHYSICS
from robo_rl.sim.mujoco.peg_expert import PegSearchExpert
from robo_rl.sim.mujoco.peg_insert import PegInsert, PegInsertConfig


def _zone_normal_force(model: mujoco.MjModel, data: mujoco.MjData) -> float:
    """The normal forces of the contacts of the site's body whose point lies in the peg_touch box, by MuJoCo's own
    contact forces (contact frame: the normal first)."""
    site = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_SITE, "peg_touch")
    body = model.site_bodyid[site]
    rotation = data.site_xmat[site].reshape(3, 3)
    total, wrench = 0.0, np.zeros(6)
    for i in range(data.ncon):
        contact = data.contact[i]
        if body not in (model.geom_bodyid[contact.geom1], model.geom_bodyid[contact.geom2]):
            continue
        local = rotation.T @ (contact.pos - data.site_xpos[site])
        if np.all(np.abs(local) <= model.site_size[site]):
            mujoco.mj_contactForce(model, data, i, wrench)
            total += wrench[0]
    return total


def _pressing_env() -> PegInsert:
    """16 pegs driven by the search expert for 40 steps: approaching, pressing on the block, searching."""
    env = PegInsert(16, config=PegInsertConfig(cost_force_limit=2.0), seed=3)
    expert = PegSearchExpert(env)
    for _ in range(40):
        env.step(expert.action())
    return env


def test_the_cost_is_the_peak_touch_reading_above_the_limit_and_the_touch_is_mujocos_contact_force() -> None:
    """Each env's next control step replayed physics step by physics step on one MjData: at every step the touch
    sensor must equal the zone's normal contact forces, and the task's cost the peak reading less the 2 N limit."""
    env = _pressing_env()
    spec = cost_spec_of(env)
    assert spec is not None and spec.unit == "N"
    model, data = env.model, mujoco.MjData(env.model)
    touch = model.sensor_adr[mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_SENSOR, "peg_touch")]
    start = env.engine.full_state()
    mocap_pos, mocap_quat = env.engine.mocap_pos.copy(), env.engine.mocap_quat.copy()
    action = PegSearchExpert(env).action()
    targets = np.clip(env.engine.qpos + action.numpy(), *env.model.jnt_range.T)
    info = env.step(action)[4]
    pressed = 0
    for index in range(env.num_envs):
        mujoco.mj_setState(model, data, start[index], FULL_PHYSICS)
        data.mocap_pos[:], data.mocap_quat[:] = mocap_pos[index], mocap_quat[index]
        data.ctrl[:] = targets[index]
        peak = 0.0
        for _ in range(env.config.frame_skip):
            mujoco.mj_step(model, data)
            reading = float(data.sensordata[touch])
            assert reading == pytest.approx(_zone_normal_force(model, data), rel=1e-6, abs=1e-9)
            peak = max(peak, reading)
        assert float(info[INFO_COST][index]) == pytest.approx(max(peak - 2.0, 0.0), rel=1e-5, abs=1e-6)
        pressed += peak > 2.0
    assert pressed >= 2  # the check ran on pegs pressing on the block, not only on free ones


def test_without_a_limit_the_peg_declares_no_cost() -> None:
    env = PegInsert(2, seed=0)
    assert cost_spec_of(env) is None and INFO_COST not in env.step(torch.zeros(2, 4))[4]
