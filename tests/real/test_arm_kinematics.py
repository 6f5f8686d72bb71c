"""The deploy side's arm kinematics against the simulator's (robo_rl.sim.mujoco.peg_insert.peg_tip_fk, itself checked
against MuJoCo's peg_tip site in tests/sim/mujoco/test_peg_fk.py) and against finite differences."""

from __future__ import annotations

import numpy as np
import pytest

from robo_rl.real.arm_kinematics import ArmGeometry, tip_jacobian, tip_position, tip_step
from robo_rl.sim.mujoco.peg_insert import LINKS, SHOULDER, WRIST_TO_TIP, peg_down_ik, peg_tip_fk

GEOMETRY = ArmGeometry()
RNG = np.random.default_rng(0)
POSES = RNG.uniform([-3.0, -1.6, -2.6, -2.0], [3.0, 1.6, 2.6, 2.0], size=(20, 4))


def test_default_geometry_is_the_simulated_peg_arm() -> None:
    assert (GEOMETRY.upper_arm, GEOMETRY.forearm) == LINKS
    assert GEOMETRY.wrist_to_tip == WRIST_TO_TIP
    assert (0.0, GEOMETRY.shoulder_height) == (SHOULDER[0], SHOULDER[2])
    for q in POSES:
        np.testing.assert_allclose(tip_position(GEOMETRY, q), peg_tip_fk(q[None])[0], atol=1e-12)


@pytest.mark.parametrize("q", POSES[:8])
def test_jacobian_matches_finite_differences(q: np.ndarray) -> None:
    h = 1e-6
    columns = [(tip_position(GEOMETRY, q + h * e) - tip_position(GEOMETRY, q - h * e)) / (2 * h) for e in np.eye(4)]
    np.testing.assert_allclose(tip_jacobian(GEOMETRY, q), np.stack(columns, axis=1), atol=1e-8)


@pytest.mark.parametrize("displacement", [(0.005, 0, 0), (0, 0.005, 0), (0, 0, -0.005), (0.003, -0.002, 0.004)])
def test_a_step_moves_the_tip_by_the_displacement_and_keeps_the_tool_pitch(displacement: tuple[float, ...]) -> None:
    q = peg_down_ik(np.array([[0.42, 0.03, 0.16]]))[0]
    step = tip_step(GEOMETRY, q, np.array(displacement))
    moved = peg_tip_fk((q + step)[None])[0] - peg_tip_fk(q[None])[0]
    np.testing.assert_allclose(moved, displacement, atol=1e-9)
    assert abs(step[1:].sum()) < 1e-12  # the peg stays pointing down


def test_zero_displacement_is_a_zero_step_and_singular_poses_stay_bounded() -> None:
    assert not tip_step(GEOMETRY, POSES[0], np.zeros(3)).any()
    stretched = np.array([0.0, 0.0, 0.0, 0.0])  # arm straight out: no reach further along x
    step = tip_step(GEOMETRY, stretched, np.array([0.005, 0.0, 0.0]))
    assert np.all(np.isfinite(step)) and np.abs(step).max() < 1.0
