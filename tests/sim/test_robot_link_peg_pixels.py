"""Training on the peg arm through its cameras in simulated robot time: SimLink plays mujoco/peg_insert_pixels (at 16 x
16 pixels) through the arm_peg_pixels profile, RobotEnv returns each camera's frame beside the state, and `robo-rl
train --robot arm_peg_pixels --robot-link sim` trains a camera policy that the profile's runtime accepts."""

from __future__ import annotations

import contextlib
import io
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

from robo_rl.api.envs import checked_cameras, robot_cameras, robot_env_factory
from robo_rl.cli.main import main
from robo_rl.config import ConfigError
from robo_rl.envs import INFO_FINAL_OBS, INFO_SUCCESS, INFO_VALID, check_step_result, image_specs_of
from robo_rl.hil.peg_operator import PegFieldOperator
from robo_rl.image_spec import STATE_KEY
from robo_rl.real.profile import load_profile
from robo_rl.real.runtime import PolicyRuntime
from robo_rl.robot.env import RobotEnv
from robo_rl.robot.operator import OperatorConfig, SimulatedOperator
from robo_rl.robot.rewards import reward_for, success_for
from robo_rl.sim.mujoco.peg_insert import peg_down_ik
from robo_rl.sim.robot_link import SimLink

PROFILE = load_profile("arm_peg_pixels")
TASK = "mujoco/peg_insert_pixels"
SMALL = ["image_size=16"]
CAMERAS = ("wrist", "side")


def _env(success: bool = False) -> tuple[RobotEnv, SimLink]:
    operator = SimulatedOperator(OperatorConfig(corrects=False, reset_delay_s=0.5))  # answers the reset prompts
    link = SimLink(PROFILE, SMALL, seed=3, operator=operator)
    detect = success_for(PROFILE) if success else None
    env = RobotEnv(
        PROFILE, link, reward_for(PROFILE), clock=link.clock, say=link.say, success=detect, cameras=link.cameras
    )
    return env, link


def _difference(a: torch.Tensor | np.ndarray, b: torch.Tensor | np.ndarray) -> float:
    """Mean absolute pixel difference of two frames."""
    return float(np.abs(np.asarray(a, dtype=np.float64) - np.asarray(b, dtype=np.float64)).mean())


def test_the_frames_beside_the_state_are_the_simulator_s_of_the_state_the_fields_report() -> None:
    env, link = _env()
    assert [(c.name, c.height, c.width, c.channels) for c in image_specs_of(env)] == [
        ("wrist", 16, 16, 3),
        ("side", 16, 16, 3),
    ]
    obs = env.reset()
    assert isinstance(obs, dict)
    first = obs["wrist"].clone()
    rng = np.random.default_rng(0)
    for _ in range(10):
        result = env.step(torch.as_tensor(rng.uniform(-0.05, 0.05, 4), dtype=torch.float32)[None])
        check_step_result(env, result)
        obs, _, _, _, info = result
        assert isinstance(obs, dict) and bool(info[INFO_VALID][0])
        rendered = link.env.frames()  # the simulator's cameras at its current state (no episode ended)
        for camera in CAMERAS:
            assert torch.equal(obs[camera], rendered[camera])
        np.testing.assert_allclose(obs[STATE_KEY][0].numpy(), link.obs, atol=1e-6)
        np.testing.assert_array_equal(env.obs, obs[STATE_KEY][0].numpy())  # obs stays the state vector
    assert _difference(obs["wrist"], first) > 1.0  # the wrist camera moved with the hand


def test_an_inserted_peg_shows_its_final_frames_for_the_period_it_ended_in() -> None:
    """The simulator ends the episode at the insertion and restarts at once; the link reports the last period's
    state and frames (as the robot's sensors show the inserted peg), and RobotEnv ends its episode there as a
    success, with those frames in `final_obs`, before the operator's reset."""
    env, link = _env(success=True)
    env.reset()
    task = link.env.task
    hole = task.hole_pose().numpy()[0, :3]
    task.set_joint_state(torch.from_numpy(peg_down_ik((hole - [0.0, 0.0, 0.025])[None])), torch.zeros(1, 4))
    inserted = link.env.frames()
    link.wait_until(link.clock() + PROFILE.dt)  # one simulated period on the held command: inserted, restarted
    restarted = link.env.frames()
    assert not np.array_equal(link.obs, link.state)  # the simulator restarted; the fields report the insertion
    for camera in CAMERAS:
        shown = link.frames()[camera]
        assert _difference(shown, inserted[camera][0]) < 0.25 * _difference(shown, restarted[camera][0])

    hole = task.hole_pose().numpy()[0, :3]  # the restarted episode's
    task.set_joint_state(torch.from_numpy(peg_down_ik((hole - [0.0, 0.0, 0.025])[None])), torch.zeros(1, 4))
    inserted = link.env.frames()
    next_obs, reward, terminated, _, info = env.step(torch.zeros(1, 4))
    assert bool(terminated[0]) and bool(info[INFO_SUCCESS][0]) and float(reward[0]) == 1.0
    final, now = info[INFO_FINAL_OBS], link.env.frames()
    assert isinstance(final, dict) and isinstance(next_obs, dict)
    for camera in CAMERAS:  # final_obs: the insertion; the returned obs: the next episode's start, after the reset
        assert not torch.equal(final[camera], next_obs[camera])
        assert torch.equal(next_obs[camera], now[camera])
    # the wrist camera, looking along the peg, sees it in the hole: in the frame the step ended in, not the start's
    assert _difference(final["wrist"], inserted["wrist"]) < 0.25 * _difference(final["wrist"], next_obs["wrist"])


def test_the_factory_trains_on_the_config_s_cameras_checked_against_the_profile() -> None:
    make = robot_env_factory("arm_peg_pixels", link="sim", operator="simulated")
    env = make(TASK, 1, seed=3, params=SMALL)
    assert isinstance(env, RobotEnv) and isinstance(env.link, SimLink)
    assert image_specs_of(env) == env.link.cameras and env.link.cameras[0].height == 16
    operator = env.link.operator
    assert isinstance(operator, PegFieldOperator)  # the peg benchmark's operator: it sees the state task's hole
    assert operator.hole() == env.link.env.task.hole_pose()[0].tolist()
    # the ROS link's cameras come from the same task, built for its specs only
    assert robot_cameras(PROFILE, SMALL, None) == env.link.cameras
    assert robot_cameras(load_profile("arm_peg"), SMALL, None) == ()
    with pytest.raises(ConfigError, match="'side_image' feeds camera 'side'"):
        checked_cameras(PROFILE, env.link.cameras[:1])


def test_train_on_the_simulated_camera_arm_gives_a_policy_the_profile_s_runtime_takes(tmp_path: Path) -> None:
    # The profile's default preset (robot_arm_peg_pixels_sac) trains its task and cameras; smaller frames here.
    settings = ["task.config.image_size=16", "sac.encoder.strides=[2,2]"]
    settings += ["off_policy.learning_starts=20", "off_policy.batch_size=16", "sac.encoder.channels=8"]
    settings += ["sac.num_critics=2"]
    argv = ["train", "--robot", "arm_peg_pixels", "--robot-link", "sim"]
    argv += ["--operator", "resets", "--max-iterations", "40", "--threads", "1", "--runs-root", str(tmp_path)]
    argv += ["--quiet", *(x for item in settings for x in ("--set", item))]
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        assert main(argv) == 0
        (run,) = (tmp_path / "robot_arm_peg_pixels_sac").iterdir()
        assert main(["export", str(run)]) == 0
    runtime = PolicyRuntime(run / "policy.onnx", PROFILE)  # any mismatch with the profile raises
    assert [(c.name, c.height) for c in runtime.cameras] == [("wrist", 16), ("side", 16)]
    env, _ = _env()
    obs = env.reset()
    assert isinstance(obs, dict)
    action = runtime(obs[STATE_KEY][0].numpy(), {camera: obs[camera][0].numpy() for camera in CAMERAS})
    assert action.shape == (4,) and np.abs(action).max() <= 0.05 + 1e-6


def test_closing_the_robot_env_frees_the_simulated_cameras_gl_context() -> None:
    env, link = _env()
    env.reset()
    sim: Any = link.env
    assert sim.cameras._renderer is not None, "a frame was drawn: the GL context exists"
    env.close()
    assert sim.cameras._renderer is None
    env.close()  # a second close is harmless
