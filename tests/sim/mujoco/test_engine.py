"""Batched MuJoCo engine: equal to stepping each env alone with mj_step (per-env mocap poses too), threads, resets,
state layout, FK."""

from __future__ import annotations

import mujoco
import numpy as np
import pytest

from robo_rl.sim.mujoco import RolloutEngine, SiteKinematics, StateLayout, load_model, use_position_servos
from robo_rl.sim.mujoco.engine import MIN_ENVS_PER_THREAD, make_engine
from robo_rl.sim.mujoco.model import FULL_PHYSICS
from robo_rl.sim.mujoco.peg_insert import peg_down_ik


def _random_states(model: mujoco.MjModel, n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """qpos within the joint limits (both limits reached now and then) and random velocities."""
    low, high = model.jnt_range.T
    unlimited = ~model.jnt_limited.astype(bool)
    low, high = np.where(unlimited, -np.pi, low), np.where(unlimited, np.pi, high)
    qpos = rng.uniform(low, high, size=(n, model.nq))
    return qpos, rng.uniform(-2.0, 2.0, size=(n, model.nv))


def _single_datas(model: mujoco.MjModel, qpos: np.ndarray, qvel: np.ndarray) -> list[mujoco.MjData]:
    datas = []
    for q, v in zip(qpos, qvel, strict=True):
        data = mujoco.MjData(model)
        data.qpos[:], data.qvel[:] = q, v
        datas.append(data)
    return datas


@pytest.mark.parametrize("asset,position_servos", [("cartpole", False), ("arm_reach", False), ("arm_reach", True)])
def test_batched_steps_equal_plain_mj_step_per_env(asset: str, position_servos: bool) -> None:
    model = load_model(asset)
    if position_servos:
        use_position_servos(model, kp=30.0, kd=3.0)
    n, frame_skip, rng = 6, 3, np.random.default_rng(0)
    qpos, qvel = _random_states(model, n, rng)
    engine = RolloutEngine(model, n, frame_skip, num_threads=0)
    engine.reset(np.arange(n), qpos, qvel)
    singles = _single_datas(model, qpos, qvel)
    low, high = model.actuator_ctrlrange.T
    constrained = 0
    for _ in range(40):
        ctrl = rng.uniform(low, high, size=(n, model.nu))
        engine.step(ctrl)
        for i, data in enumerate(singles):
            data.ctrl[:] = ctrl[i]
            mujoco.mj_step(model, data, frame_skip)
            constrained += data.nefc
            np.testing.assert_allclose(engine.qpos[i], data.qpos, rtol=0, atol=1e-9)
            np.testing.assert_allclose(engine.qvel[i], data.qvel, rtol=0, atol=1e-9)
            np.testing.assert_allclose(engine.sensordata[i], data.sensordata, rtol=0, atol=1e-9)
    if asset == "arm_reach" and not position_servos:
        assert constrained > 0  # random torques hit the joint limits: the constraint solver took part


def test_threaded_engine_equals_single_threaded_engine() -> None:
    model = load_model("arm_reach")
    n = 2 * MIN_ENVS_PER_THREAD
    threaded, single = RolloutEngine(model, n, 2, num_threads=2), RolloutEngine(model, n, 2, num_threads=0)
    assert (threaded.num_threads, single.num_threads) == (2, 0)
    rng = np.random.default_rng(1)
    qpos, qvel = _random_states(model, n, rng)
    for engine in (threaded, single):
        engine.reset(np.arange(n), qpos, qvel)
    for _ in range(5):
        ctrl = rng.uniform(*model.actuator_ctrlrange.T, size=(n, model.nu))
        threaded.step(ctrl)
        single.step(ctrl)
    np.testing.assert_array_equal(threaded.full_state(), single.full_state())
    threaded.close()
    assert RolloutEngine(model, MIN_ENVS_PER_THREAD, 2, num_threads=2).num_threads == 0  # small batch: one thread


def test_reset_restarts_only_the_given_envs_at_time_zero() -> None:
    model = load_model("cartpole")
    engine = RolloutEngine(model, 3, 2)
    engine.step(np.full((3, 1), 5.0))
    before = engine.full_state()
    engine.reset(np.array([1]), np.array([[0.3, 2.0]]), np.array([[0.1, -0.2]]))
    after = engine.full_state()
    layout = engine.layout
    np.testing.assert_array_equal(after[[0, 2]], before[[0, 2]])
    assert after[1, layout.time] == 0.0 and before[1, layout.time] == pytest.approx(2 * model.opt.timestep)
    np.testing.assert_array_equal(after[1, layout.qpos], [0.3, 2.0])
    np.testing.assert_array_equal(after[1, layout.qvel], [0.1, -0.2])


def test_state_layout_matches_mj_get_state() -> None:
    model = load_model("arm_reach")
    data = mujoco.MjData(model)
    data.time, data.qpos[:], data.qvel[:] = 1.25, [0.1, 0.2, 0.3, 0.4], [-1.0, -2.0, -3.0, -4.0]
    state = np.empty(mujoco.mj_stateSize(model, FULL_PHYSICS))
    mujoco.mj_getState(model, data, state, FULL_PHYSICS)
    layout = StateLayout.of(model)
    assert layout.size == state.size == 1 + model.nq + model.nv + model.na
    assert state[layout.time] == 1.25
    np.testing.assert_array_equal(state[layout.qpos], data.qpos)
    np.testing.assert_array_equal(state[layout.qvel], data.qvel)


def test_site_kinematics_equals_mj_kinematics() -> None:
    model = load_model("arm_reach")
    kinematics = SiteKinematics(model, "end_effector")
    qpos = np.random.default_rng(2).uniform(-np.pi, np.pi, size=(20, model.nq))
    positions = kinematics(qpos)
    data = mujoco.MjData(model)
    site = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_SITE, "end_effector")
    for q, position in zip(qpos, positions, strict=True):
        data.qpos[:] = q
        mujoco.mj_kinematics(model, data)
        np.testing.assert_allclose(position, data.site_xpos[site], rtol=0, atol=1e-12)
    # Hand check: at qpos = 0 the arm points along +x at shoulder height, 0.30 + 0.25 + 0.10 m out.
    np.testing.assert_allclose(kinematics(np.zeros((1, 4)))[0], [0.65, 0.0, 0.30], atol=1e-12)
    with pytest.raises(ValueError, match="no site named 'nope'"):
        SiteKinematics(model, "nope")


def test_unknown_backend_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown physics backend 'warp'"):
        make_engine(load_model("cartpole"), 2, 1, backend="warp")  # type: ignore[arg-type]


def test_per_env_mocap_poses_are_felt_as_with_plain_mj_step() -> None:
    # Four pegs pressed down at the same place onto four blocks placed differently: on the axis (it goes in), on the
    # block's top (it stops), turned; each env must feel its own block exactly as one MjData with that mocap pose.
    model = load_model("peg_insert")
    use_position_servos(model, kp=30.0, kd=3.0)
    # The engine does not carry the contact solver's warm start between control steps (module doc); without warm
    # starts on both sides the comparison is exact, with them the solver's tolerance (~1e-6 rad here) shows.
    model.opt.disableflags |= mujoco.mjtDisableBit.mjDSBL_WARMSTART
    n, frame_skip = 4, 10
    hole = np.array([[0.40, 0.0, 0.10], [0.403, 0.0, 0.10], [0.40, 0.004, 0.10], [0.395, -0.003, 0.10]])
    yaw = np.array([0.0, 0.1, -0.15, 0.05])
    quat = np.stack((np.cos(yaw / 2), 0 * yaw, 0 * yaw, np.sin(yaw / 2)), axis=1)
    qpos = peg_down_ik(np.tile([0.40, 0.0, 0.102], (n, 1)))
    ctrl = peg_down_ik(np.tile([0.40, 0.0, 0.08], (n, 1)))
    engine = RolloutEngine(model, n, frame_skip, num_threads=0, mocap=True)
    engine.reset(np.arange(n), qpos, np.zeros((n, 4)))
    engine.mocap_pos[:, 0], engine.mocap_quat[:, 0] = hole, quat
    singles = _single_datas(model, qpos, np.zeros((n, 4)))
    contacts = np.zeros(n, dtype=int)
    for _ in range(20):
        engine.step(ctrl)
        for i, data in enumerate(singles):
            data.ctrl[:], data.mocap_pos[0], data.mocap_quat[0] = ctrl[i], hole[i], quat[i]
            mujoco.mj_step(model, data, frame_skip)
            contacts[i] += data.ncon
            np.testing.assert_allclose(engine.qpos[i], data.qpos, rtol=0, atol=1e-9)
    assert (contacts > 0).all()
    assert len({round(float(z), 4) for z in engine.qpos[:, 1]}) > 1  # the blocks' places made a difference
