"""SimLink plays mujoco/peg_insert through the arm_peg profile: joint-angle steps sent as absolute JointTrajectory
angles (measured + step), read back against the simulator's measured angles."""

from __future__ import annotations

import numpy as np
import torch

from robo_rl.real.fault import Fault, FaultKind
from robo_rl.real.profile import load_profile
from robo_rl.robot.env import RobotEnv
from robo_rl.robot.operator import OperatorConfig, SimulatedOperator
from robo_rl.robot.rewards import reward_for
from robo_rl.sim.robot_link import SimLink

PROFILE = load_profile("arm_peg")
POSITIONS = [f"points[0].positions[{i}]" for i in range(4)]
MEASURED = [f"joint_states.position[{i}]" for i in range(4)]


class RecordingLink(SimLink):
    """SimLink that keeps (fields measured when a command was sent, the command's fields)."""

    def __init__(self) -> None:
        super().__init__(PROFILE, seed=3, operator=SimulatedOperator(OperatorConfig(corrects=False, reset_delay_s=0.5)))
        self.sent: list[tuple[dict[str, float], dict[str, float]]] = []

    def send(self, fields: dict[str, float]) -> None:
        self.sent.append((self.fields(), dict(fields)))
        super().send(fields)


def test_the_commanded_angles_are_the_measured_ones_plus_the_executed_steps() -> None:
    link = RecordingLink()
    env = RobotEnv(PROFILE, link, reward_for(PROFILE), clock=link.clock, say=link.say)
    env.reset()
    rng = np.random.default_rng(0)
    start = np.array([link.fields()[m] for m in MEASURED])
    for _ in range(30):
        action = rng.uniform(-0.03, 0.03, size=4)
        info = env.step(torch.as_tensor(action, dtype=torch.float32).unsqueeze(0))[4]
        measured, command = link.sent[-1]
        executed = info["executed_action"][0].numpy().astype(np.float64)
        np.testing.assert_allclose(executed, action, atol=1e-6)  # within the bounds and rate limits: as asked
        angles = np.array([command[p] for p in POSITIONS])
        np.testing.assert_allclose(angles, [measured[m] for m in MEASURED] + executed, atol=1e-6)
        assert bool(info["valid"][0])
    assert env.episodes == 0 and env.invalid_steps == 0
    moved = np.array([link.fields()[m] for m in MEASURED]) - start
    assert np.max(np.abs(moved)) > 0.01  # the steps reached the simulator


def test_the_safe_command_holds_the_measured_pose_in_the_simulator() -> None:
    link = RecordingLink()
    env = RobotEnv(PROFILE, link, reward_for(PROFILE), clock=link.clock, say=link.say)
    env.reset()
    for _ in range(5):
        env.step(torch.full((1, 4), 0.03))
    env._send(env.safety.safe_command(Fault(FaultKind.STALE)))
    _, held = link.sent[-1]
    target = np.array([held[p] for p in POSITIONS])
    np.testing.assert_allclose(target, [link.fields()[m] for m in MEASURED], atol=1e-9)  # the pose measured now
    link.wait_until(link.clock() + 2.0)  # 20 periods on the held command: the arm stays (no drift by steps)
    np.testing.assert_allclose([link.fields()[m] for m in MEASURED], target, atol=3e-3)


def test_an_inserted_peg_ends_the_robot_episode_as_a_success() -> None:
    """arm_peg's `episode.success: reward`: where the on-robot reward's condition holds (the tip 15 mm below the
    estimated mouth, near its axis) RobotEnv ends the episode as a success, as mujoco/peg_insert's success
    terminates it in simulation; above the mouth it does not."""
    from robo_rl.robot.rewards import success_for
    from robo_rl.sim.mujoco.peg_insert import peg_down_ik

    detect = success_for(PROFILE)
    assert detect is not None
    assert success_for(load_profile("rc_car")) is None and success_for(load_profile("arm")) is None  # lap on, hold
    link = RecordingLink()
    env = RobotEnv(PROFILE, link, reward_for(PROFILE), clock=link.clock, say=link.say, success=detect)
    env.reset()
    task = link.env
    hole = task.hole_pose().numpy()[0, :3]
    for depth, ends in ((-0.03, False), (0.025, True)):  # m below the true mouth: above it, then inserted
        qpos = peg_down_ik((hole - [0.0, 0.0, depth])[None])
        task.set_joint_state(torch.from_numpy(qpos), torch.zeros(1, 4))
        _, reward, terminated, _, info = env.step(torch.zeros(1, 4))
        assert bool(terminated[0]) is ends and bool(info["success"][0]) is ends
        assert float(reward[0]) == float(ends)
