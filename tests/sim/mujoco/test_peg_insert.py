"""mujoco/peg_insert: the model's numbers, IK, contract, seeds, resume, hole randomization, and the contact physics
(a scripted inserter succeeds; a peg off the axis by more than the clearance rests on the block, never succeeds)."""

from __future__ import annotations

import math
from collections.abc import Callable

import mujoco
import numpy as np
import pytest
import torch

from robo_rl.envs import INFO_FINAL_OBS, INFO_SUCCESS, RenderableEnv, check_step_result
from robo_rl.sim import make
from robo_rl.sim.mujoco.model import data_at
from robo_rl.sim.mujoco.peg_insert import (
    HOLE_DEPTH,
    HOLE_HEIGHT,
    HOLE_RADIUS,
    PEG_LENGTH,
    PEG_RADIUS,
    PegInsert,
    PegInsertConfig,
    peg_down_ik,
)

NAME = "mujoco/peg_insert"


def _random_actions(env: PegInsert, steps: int, seed: int) -> torch.Tensor:
    low, high = env.action_spec.low_tensor(), env.action_spec.high_tensor()
    return low + (high - low) * torch.rand(steps, env.num_envs, 4, generator=torch.Generator().manual_seed(seed))


def _scripted_step(env: PegInsert, offset: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One step of a scripted inserter aiming at the true hole axis + `offset` `(N, 2)` m: the peg, straight down,
    goes 2 cm above the aim point, then (once within 0.5 mm of it sideways) down towards 28 mm below the mouth; each
    step's waypoint is at most 1 cm away, and from 5 mm above the mouth on at most 3 mm down (so a blocked peg is
    pressed by servo targets 3 mm below it: harder pushes in joint space have a sideways part that slides the peg
    over the block). Returns the tip before the step `(N, 3)`, the reward and `info["success"]`."""
    hole = env.hole_pose().numpy()
    tip = env.peg_tip_position().numpy()
    aim = hole[:, :3] + np.concatenate((offset, np.zeros((env.num_envs, 1))), axis=1)
    above = aim + np.array([0.0, 0.0, 0.02])
    aligned = (np.hypot(*(tip[:, :2] - above[:, :2]).T) < 5e-4) | (tip[:, 2] < above[:, 2] - 1e-3)
    goal = np.where(aligned[:, None], aim - [0.0, 0.0, 0.028], above)
    down = np.where(tip[:, 2] < aim[:, 2] + 0.005, 0.003, 0.01)
    waypoint = tip + np.clip(goal - tip, np.stack((-0.01 + 0 * down, -0.01 + 0 * down, -down), axis=1), 0.01)
    action = torch.tensor(peg_down_ik(waypoint) - env.engine.qpos, dtype=torch.float32)
    _, reward, *_, info = env.step(action)
    return tip - hole[:, :3], reward.numpy(), info[INFO_SUCCESS].numpy()


def test_the_model_has_the_documented_peg_and_hole() -> None:
    model = PegInsert(1, seed=0).model
    peg = model.geom("peg")
    assert peg.type[0] == mujoco.mjtGeom.mjGEOM_CYLINDER
    assert peg.size[0] == PEG_RADIUS and 2 * peg.size[1] == pytest.approx(PEG_LENGTH)
    walls = [model.geom(f"wall{k:02d}") for k in range(16)]
    # Each wall's inner face is HOLE_RADIUS from the axis; together they span the hole's depth below the mouth.
    inner = [np.hypot(*w.pos[:2]) - w.size[0] for w in walls]
    np.testing.assert_allclose(inner, HOLE_RADIUS, atol=1e-6)
    assert {round(w.pos[2] + w.size[2], 9) for w in walls} == {0.0}
    assert {round(w.pos[2] - w.size[2], 9) for w in walls} == {-HOLE_DEPTH}
    floor = model.geom("base_plate")
    assert floor.pos[2] + floor.size[2] == pytest.approx(-HOLE_DEPTH)
    assert model.body("block").pos[2] == pytest.approx(HOLE_HEIGHT)
    # Only the peg and the block touch: contype/conaffinity pair them and nothing else.
    colliding = [g for g in range(model.ngeom) if model.geom_contype[g] or model.geom_conaffinity[g]]
    assert {model.geom(g).name for g in colliding} == {"peg", "base_plate"} | {w.name for w in walls}


def test_ik_puts_the_tip_where_asked_with_the_peg_straight_down() -> None:
    env = PegInsert(1, seed=0)
    rng = np.random.default_rng(0)
    tips = np.array([0.40, 0.0, 0.12]) + rng.uniform(-0.05, 0.05, size=(20, 3))
    qpos = peg_down_ik(tips)
    data = mujoco.MjData(env.model)
    for q, tip in zip(qpos, tips, strict=True):
        data.qpos[:] = q
        mujoco.mj_kinematics(env.model, data)
        np.testing.assert_allclose(data.site_xpos[env.model.site("peg_tip").id], tip, atol=1e-9)
        axis = data.geom_xmat[env.model.geom("peg").id].reshape(3, 3)[:, 2]  # a cylinder's axis is its local z
        assert abs(abs(axis[2]) - 1.0) < 1e-9
    assert (qpos >= env.model.jnt_range[:, 0]).all() and (qpos <= env.model.jnt_range[:, 1]).all()


def test_step_result_follows_the_contract_with_si_units() -> None:
    env = make(NAME, 3, seed=0)
    assert isinstance(env, RenderableEnv)
    assert env.obs_spec.dim == 11 and env.action_spec.dim == 4 and env.action_spec.is_bounded
    assert env.obs_spec.units == ("rad",) * 4 + ("rad/s",) * 4 + ("m",) * 3
    assert env.action_spec.units == ("rad",) * 4
    assert env.action_spec.high == (PegInsertConfig().max_joint_step,) * 4
    assert env.dt == pytest.approx(0.1) and env.max_episode_steps == 150
    result = env.step(torch.zeros(3, 4))
    check_step_result(env, result)
    assert result[1].tolist() == [0.0, 0.0, 0.0]  # sparse: nothing until inserted


def test_gymnasium_env_checker_passes(checked_task: Callable[[str], list[str]]) -> None:
    assert checked_task(NAME) == []


def test_seeds_reproduce_and_differ() -> None:
    env = PegInsert(8, seed=0)
    actions = _random_actions(env, 10, seed=3)

    def rollout(seed: int) -> torch.Tensor:
        return torch.stack([env.reset(seed=seed)] + [env.step(a)[0] for a in actions])

    first, again, other = rollout(5), rollout(5), rollout(6)
    torch.testing.assert_close(first, again, rtol=0, atol=0)
    assert not torch.equal(first[0], other[0])


def test_state_dict_resumes_the_same_stream_across_resets() -> None:
    env = PegInsert(3, config=PegInsertConfig(episode_length=0.3), seed=1)
    actions = _random_actions(env, 8, seed=2)
    env.step(actions[0])
    saved = env.state_dict()
    first = torch.stack([env.step(a)[0] for a in actions[1:]])  # crosses two truncations (new holes)
    env.load_state_dict(saved)
    again = torch.stack([env.step(a)[0] for a in actions[1:]])
    torch.testing.assert_close(first, again, rtol=0, atol=0)


def test_holes_and_estimates_are_drawn_in_their_ranges_and_the_blocks_follow() -> None:
    c = PegInsertConfig()
    env = PegInsert(1000, seed=3)
    hole = env.hole_pose().numpy()
    offset = hole[:, :2] - np.array(c.hole_position)
    assert (np.abs(offset) <= c.hole_xy_range).all() and (np.abs(offset) > 0.9 * c.hole_xy_range).any()
    assert (np.abs(hole[:, 3]) <= math.radians(10)).all() and (np.abs(hole[:, 3]) > math.radians(9)).any()
    assert (hole[:, 2] == HOLE_HEIGHT).all()
    error = env.hole_estimate().numpy() - hole[:, :3]
    assert error.std(axis=0) == pytest.approx([c.hole_estimate_noise] * 3, rel=0.1)
    torch.testing.assert_close(
        env.reset(seed=3)[:, 8:], torch.from_numpy(env.peg_tip_position().numpy() - env.hole_estimate().numpy()).float()
    )
    # The simulated block is where the task says: its mouth's centre and yaw.
    data = mujoco.MjData(env.model)
    for i in (0, 1, 2):
        data.mocap_quat[:] = env.engine.mocap_quat[i]
        data_at(env.model, data, env.engine.full_state()[i], env.engine.mocap_pos[i])
        np.testing.assert_allclose(data.site_xpos[env.model.site("hole").id], hole[i, :3], atol=1e-12)
        wall = data.geom_xmat[env.model.geom("wall00").id].reshape(3, 3)
        assert math.atan2(wall[1, 0], wall[0, 0]) == pytest.approx(hole[i, 3], abs=1e-9)


def test_a_scripted_inserter_succeeds_at_depth_in_every_random_hole() -> None:
    env = PegInsert(16, config=PegInsertConfig(episode_length=100.0), seed=4)
    succeeded = np.zeros(16, dtype=bool)
    radial_inside = []
    for _ in range(40):
        offset, reward, success = _scripted_step(env, np.zeros((16, 2)))
        inside = offset[:, 2] < -0.002
        radial_inside += list(np.hypot(offset[inside, 0], offset[inside, 1]))
        assert (reward == success).all()  # sparse: 1 exactly where it succeeded
        succeeded |= success
        if succeeded.all():
            break
    assert succeeded.all()
    # Inside the hole the walls hold the peg: its axis strays no further than the clearance (+ soft contact).
    assert max(radial_inside) < HOLE_RADIUS / math.cos(math.pi / 16) - PEG_RADIUS + 3e-4


@pytest.mark.parametrize("off_axis", [0.0005, 0.0015, 0.003])
def test_no_peg_enters_further_off_the_axis_than_the_clearance(off_axis: float) -> None:
    # The scripted inserter aims off the axis (8 directions) and pushes down for 3 s. Whatever happens, the tip is
    # never below the mouth (beyond the soft contact's sinking) while the peg's axis is off by more than the hole's
    # clearance: a peg enters only once the walls have it. Within the clearance (0.5 mm) every peg goes in; at
    # 3 mm every peg rests on the top surface; at 1.5 mm the arm's compliance may slide a peg over the edge's 0.5 mm
    # and into the hole, or leave it on top.
    clearance = HOLE_RADIUS / math.cos(math.pi / 16) - PEG_RADIUS  # 1.2 mm at the 16-gon's corners
    env = PegInsert(8, config=PegInsertConfig(episode_length=100.0), seed=5)
    angle = np.linspace(0, 2 * math.pi, 8, endpoint=False)
    offset = off_axis * np.stack((np.cos(angle), np.sin(angle)), axis=1)
    lowest, succeeded = np.full(8, np.inf), np.zeros(8, dtype=bool)
    for _ in range(40):  # about 10 steps to get there, then 3 s of pushing down
        tip, _, success = _scripted_step(env, offset)
        below = tip[:, 2] < -5e-4
        assert (np.hypot(tip[below, 0], tip[below, 1]) < clearance + 3e-4).all()
        lowest, succeeded = np.minimum(lowest, tip[:, 2]), succeeded | success
    assert np.isfinite(env.engine.qvel).all()
    if off_axis == 0.003:
        assert not succeeded.any()
        assert np.abs(env.engine.qvel).max() < 0.05  # pressed on the block, (nearly) at rest: a stable contact
        # Pressed on the top surface: it sinks into it less than half a millimetre (soft contact), never in.
        assert lowest.min() > -5e-4 and lowest.max() < 5e-4
    if off_axis < HOLE_RADIUS - PEG_RADIUS:
        assert succeeded.all()


def test_aiming_at_the_noisy_estimate_mostly_fails() -> None:
    # The task's point: with the default 2 mm estimate noise (twice the clearance) the scripted inserter that
    # succeeds on the true axis every time mostly fails when it aims where the observation says the hole is
    # (measured: 12 of these 64 episodes succeed; with 1 mm noise 64% of 128).
    env = PegInsert(64, config=PegInsertConfig(episode_length=1000.0), seed=0)
    error = (env.hole_estimate() - env.hole_pose()[:, :3]).numpy()[:, :2]
    succeeded = np.zeros(64, dtype=bool)
    for _ in range(40):
        succeeded |= _scripted_step(env, error)[2]
    assert 0.0 < succeeded.mean() < 0.5


def test_shaped_reward_adds_minus_the_distance_to_the_goal() -> None:
    env = PegInsert(2, config=PegInsertConfig(reward="shaped", distance_weight=2.0), seed=6)
    _, reward, *_ = env.step(torch.zeros(2, 4))
    goal = env.hole_pose().numpy()[:, :3] - [0.0, 0.0, PegInsertConfig().success_depth]
    expected = -2.0 * np.linalg.norm(env.peg_tip_position().numpy() - goal, axis=1)
    np.testing.assert_allclose(reward.numpy(), expected, rtol=1e-6)


def test_success_terminates_and_resets_with_a_new_hole() -> None:
    env = PegInsert(1, config=PegInsertConfig(episode_length=100.0), seed=7)
    pose = env.hole_pose().numpy()[0]
    inside = pose[:3] - [0.0, 0.0, 0.025]
    env.set_joint_state(torch.from_numpy(peg_down_ik(inside[None])), torch.zeros(1, 4))
    obs, reward, terminated, truncated, info = env.step(torch.zeros(1, 4))
    assert terminated.tolist() == [True] and truncated.tolist() == [False] and reward.tolist() == [1.0]
    assert info[INFO_SUCCESS].tolist() == [True]
    assert info[INFO_FINAL_OBS][0, 10].item() < -0.02  # the final obs: the tip deep below the estimated mouth
    assert obs[0, 10].item() > 0.03 and not np.array_equal(env.hole_pose().numpy()[0], pose)


def test_render_draws_the_arm_and_the_block() -> None:
    env = PegInsert(1, seed=0)
    frame = env.render(0)
    assert frame.shape == (480, 640, 3) and frame.dtype == np.uint8 and frame.std() > 10
    env.close()


@pytest.mark.parametrize(
    "field,value",
    [("reward", "dense"), ("frame_skip", 0), ("success_depth", 0.05), ("max_joint_step", 0.0)],
)
def test_config_rejects_bad_values_naming_the_field(field: str, value: object) -> None:
    with pytest.raises(ValueError, match=field):
        PegInsertConfig(**{field: value})
