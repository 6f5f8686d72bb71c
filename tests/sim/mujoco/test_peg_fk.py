"""The peg tip's closed-form forward kinematics (peg_tip_fk) against the model's own peg_tip site, and the topic view
(peg_view) that gives the peg operator what a PegInsert gives it."""

from __future__ import annotations

import numpy as np
import torch

from robo_rl.sim.mujoco.peg_expert import PegSearchExpert
from robo_rl.sim.mujoco.peg_insert import PegInsert, peg_down_ik, peg_tip_fk
from robo_rl.sim.mujoco.peg_view import JOINT_FIELDS, OFFSET_FIELDS, PegTopicView


def test_forward_kinematics_is_the_models_peg_tip_on_random_joint_states() -> None:
    env = PegInsert(16, seed=0)
    rng = np.random.default_rng(3)
    low, high = env.model.jnt_range.T
    qpos = rng.uniform(low, high, (16, 4))
    env.set_joint_state(torch.from_numpy(qpos), torch.zeros(16, 4))
    np.testing.assert_allclose(peg_tip_fk(env.engine.qpos), env.peg_tip_position().numpy(), atol=1e-6)


def test_forward_kinematics_inverts_the_peg_down_ik() -> None:
    rng = np.random.default_rng(4)
    tips = np.stack((rng.uniform(0.3, 0.5, 32), rng.uniform(-0.1, 0.1, 32), rng.uniform(0.1, 0.2, 32)), 1)
    np.testing.assert_allclose(peg_tip_fk(peg_down_ik(tips)), tips, atol=1e-9)


def test_the_topic_view_gives_the_expert_what_the_env_gives_it() -> None:
    env = PegInsert(1, seed=5)
    view = PegTopicView()
    assert not view.update({}, None)
    on_env, on_view = PegSearchExpert(env), PegSearchExpert(view)
    for _ in range(40):
        qpos = env.engine.qpos[0]
        offset = (env.peg_tip_position() - env.hole_estimate()).numpy()[0]
        fields = dict(zip(JOINT_FIELDS, qpos, strict=True)) | dict(zip(OFFSET_FIELDS, offset, strict=True))
        assert view.update(fields, env.hole_pose().numpy()[0].tolist())
        np.testing.assert_allclose(view.hole_estimate().numpy(), env.hole_estimate().numpy(), atol=1e-6)
        assert bool(on_view.unsafe()[0]) == bool(on_env.unsafe()[0])
        assert bool(on_view.recovered()[0]) == bool(on_env.recovered()[0])
        action = on_env.action()
        torch.testing.assert_close(on_view.action(), action, atol=1e-5, rtol=0)
        env.step(action)
