"""The peg insertion operator (robo_rl.sim.mujoco.peg_expert): its press is a vertical force (checked against
MuJoCo's own Jacobian), it acts on what the policy sees, it inserts where aiming at the estimate fails, and it steps
in and hands back where a person watching would."""

from __future__ import annotations

import mujoco
import numpy as np
import torch

from robo_rl.hil.simulated import SimulatedHuman, SimulatedHumanConfig
from robo_rl.sim import make_expert
from robo_rl.sim.mujoco.arm_reach import use_position_servos
from robo_rl.sim.mujoco.model import load_model
from robo_rl.sim.mujoco.peg_expert import PegSearchExpert, vertical_jacobian
from robo_rl.sim.mujoco.peg_insert import HOLE_HEIGHT, PegInsert, PegInsertConfig, peg_down_ik

HOLE = np.array([0.40, 0.0, HOLE_HEIGHT])


def _tips(count: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return np.stack((rng.uniform(0.3, 0.5, count), rng.uniform(-0.1, 0.1, count), rng.uniform(0.1, 0.2, count)), 1)


def test_the_vertical_jacobian_is_mujocos_tip_jacobian_z_row() -> None:
    # the source we did not write: MuJoCo's mj_jacSite on the task's own model
    model = load_model("peg_insert")
    data = mujoco.MjData(model)
    site = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_SITE, "peg_tip")
    qpos = peg_down_ik(_tips(8, seed=0))
    ours = vertical_jacobian(qpos)
    for q, row in zip(qpos, ours, strict=True):
        data.qpos[:4] = q
        mujoco.mj_forward(model, data)
        jacp = np.zeros((3, model.nv))
        mujoco.mj_jacSite(model, data, jacp, None, site)
        np.testing.assert_allclose(row, jacp[2, :4], atol=1e-9)


class _Arm:
    """One MjData of the task's model with its servos; control steps of 0.1 s toward measured angles + a step."""

    def __init__(self, start: np.ndarray) -> None:
        self.model = load_model("peg_insert")
        use_position_servos(self.model, 30.0, 3.0)
        self.data = mujoco.MjData(self.model)
        self.data.mocap_pos[0] = HOLE
        self.data.qpos[:4] = self.data.ctrl[:] = peg_down_ik((HOLE + start)[None])[0]
        mujoco.mj_forward(self.model, self.data)
        self.site = mujoco.mj_name2id(self.model, mujoco.mjtObj.mjOBJ_SITE, "peg_tip")

    def tip(self) -> np.ndarray:
        return self.data.site_xpos[self.site] - HOLE

    def step(self, joint_step: np.ndarray) -> None:
        self.data.ctrl[:] = self.data.qpos[:4] + np.clip(joint_step, -0.05, 0.05)
        for _ in range(50):
            mujoco.mj_step(self.model, self.data)

    def go(self, relative: np.ndarray) -> None:
        self.step(peg_down_ik((HOLE + relative)[None])[0] - self.data.qpos[:4])

    def press(self) -> None:
        self.step(-0.05 * vertical_jacobian(self.data.qpos[None, :4])[0])


def _on_the_block(off_axis: float) -> _Arm:
    arm = _Arm(np.array([off_axis, 0.0, 0.003]))
    for k in range(3):
        arm.go(np.array([off_axis, 0.0, 0.003 - 0.0012 * (k + 1)]))
    return arm


def test_a_press_along_the_jacobian_holds_the_peg_where_a_push_below_the_surface_slides_it() -> None:
    pressed, pushed = _on_the_block(0.006), _on_the_block(0.006)
    start = pressed.tip().copy()
    for _ in range(5):
        pressed.press()
        pushed.go(pushed.tip() - (0.0, 0.0, 0.004))
    # both rest on the top surface (not in the hole, 6 mm off its axis with 1 mm of clearance)
    assert abs(pressed.tip()[2]) < 5e-4 and abs(pushed.tip()[2]) < 5e-4
    assert np.linalg.norm(pressed.tip()[:2] - start[:2]) < 3e-4
    assert np.linalg.norm(pushed.tip()[:2] - start[:2]) > 2e-3


def test_the_search_moves_of_a_pressed_peg_go_through_with_the_task_collider() -> None:
    # MuJoCo's native collider trapped the peg pressed at the mouth partly over the hole (0.39 of 4.8 mm moved,
    # bench/peg_contacts.py); the model selects the MPR collider, with which it moves
    assert load_model("peg_insert").opt.disableflags & int(mujoco.mjtDisableBit.mjDSBL_NATIVECCD)
    arm = _on_the_block(0.0046)
    arm.press()
    start = arm.tip().copy()
    for _ in range(4):
        tip = arm.tip()
        arm.go(np.array([tip[0], tip[1] + 0.0012, 0.0003]))
        arm.press()
    assert np.linalg.norm(arm.tip()[:2] - start[:2]) > 2e-3


def test_its_actions_depend_only_on_what_the_policy_observes() -> None:
    # two envs with the same estimate (mouth + error) but true holes 3 mm apart: the same joint steps
    env = PegInsert(2, config=PegInsertConfig(num_threads=1), seed=0)
    above = np.tile(HOLE + np.array([0.0, 0.0, 0.03]), (2, 1))
    env.set_joint_state(torch.from_numpy(peg_down_ik(above)), torch.zeros(2, 4))
    pose = torch.tensor([[0.40, 0.0, HOLE_HEIGHT, 0.0], [0.403, 0.0, HOLE_HEIGHT, 0.1]], dtype=torch.float64)
    env.set_hole(pose, torch.tensor([[0.003, 0.0, 0.0], [0.0, 0.0, 0.0]], dtype=torch.float64))
    expert = PegSearchExpert(env)
    for _ in range(5):
        action = expert.action()
        assert torch.equal(action[0], action[1])
        assert action.abs().max() <= env.config.max_joint_step
        env.step(action)


def _success_rate(env: PegInsert, act: object) -> float:
    done = np.zeros(env.num_envs, dtype=bool)
    won = np.zeros(env.num_envs, dtype=bool)
    for _ in range(env.max_episode_steps):
        *_, terminated, truncated, info = env.step(act())  # type: ignore[operator]
        won |= info["success"].numpy() & ~done
        done |= terminated.numpy() | truncated.numpy()
    return float(won.mean())


def test_it_inserts_most_pegs_where_aiming_at_the_estimate_mostly_fails() -> None:
    # 32 random holes with the task's 2 mm estimate noise; measured 77 % of 64 at seed 0 (the straight-down inserter
    # aimed at the estimate: 12 of 64, tests/sim/mujoco/test_peg_insert.py)
    env = PegInsert(32, config=PegInsertConfig(num_threads=1), seed=0)
    expert = make_expert("mujoco/peg_insert", env)
    assert isinstance(expert, PegSearchExpert)
    assert _success_rate(env, expert.action) >= 0.6


def _placed(tip: np.ndarray) -> PegSearchExpert:
    """An env per row of `tip` `(N, 3)` (relative to a hole at the nominal place, the estimate exact), at rest."""
    env = PegInsert(len(tip), config=PegInsertConfig(num_threads=1), seed=0)
    pose = torch.tensor([[*HOLE, 0.0]] * len(tip), dtype=torch.float64)
    env.set_hole(pose)
    env.set_joint_state(torch.from_numpy(peg_down_ik(HOLE + tip)), torch.zeros(len(tip), 4))
    return PegSearchExpert(env)


def test_it_steps_in_where_the_policy_heads_wrong_and_hands_back_once_the_peg_is_in() -> None:
    tips = np.array(
        [
            [0.0, 0.0, 0.06],  # where episodes start: high above the hole, fine
            [0.015, 0.0, 0.001],  # scraping the block 15 mm off the axis: step in
            [0.0, 0.0, 0.12],  # leaving upwards: step in
            [0.07, 0.0, 0.05],  # straying sideways: step in
            [0.001, 0.0, 0.002],  # over the mouth: fine, but not yet in
            [0.0005, 0.0, -0.015],  # 15 mm down the hole: hand back
        ]
    )
    expert = _placed(tips)
    assert expert.unsafe().tolist() == [False, True, True, True, False, False]
    assert expert.recovered().tolist() == [False, False, False, False, False, True]


def test_it_steps_in_when_the_peg_is_not_in_after_its_patience_and_waits_again_in_a_new_episode() -> None:
    expert = _placed(np.array([[0.005, 0.0, 0.002], [0.0, 0.0, 0.03]]))  # low 5 mm off; high over the hole
    patience = expert.config.patience
    verdicts = [expert.unsafe().tolist() for _ in range(patience + 1)]
    assert not any(any(v) for v in verdicts[:patience]) and verdicts[patience] == [True, True]
    # the simulated human tells it where episodes start over (robo_rl.hil.simulated.SimulatedHuman.episode_reset)
    human = SimulatedHuman(expert, -torch.ones(4), torch.ones(4), 2, SimulatedHumanConfig(action_noise=0.0))
    human.episode_reset(torch.tensor([True, False]))
    assert expert.unsafe().tolist() == [False, True]
