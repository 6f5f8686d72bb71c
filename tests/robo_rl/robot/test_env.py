"""RobotEnv (a robot as a BatchedEnv from its profile) over a scripted link: the grid, invalid steps, the operator,
the e-stop, the episode buttons and the cameras. The ROS link itself is tested with sim_bridge in tests/real/ros."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from importlib import resources

import numpy as np
import pytest
import torch
import yaml

from robo_rl.algorithms.drq import PixelSAC
from robo_rl.algorithms.sac import SAC, SACConfig
from robo_rl.envs import INFO_FINAL_OBS, INFO_SUCCESS, INFO_VALID, check_step_result, image_specs_of
from robo_rl.hil.intervention import INFO_EXECUTED_ACTION, INFO_INTERVENED
from robo_rl.image_spec import STATE_KEY, ImageSpec
from robo_rl.real.command import select_command
from robo_rl.real.profile import CommandSpec, RobotProfile, history_source, load_profile, profile_from_dict
from robo_rl.robot.env import RobotEnv, RobotEnvConfig
from robo_rl.robot.rewards import rc_car_progress, reward_for
from robo_rl.runners.off_policy import OffPolicyRunner
from robo_rl.runners.off_policy_config import OFF_POLICY_LOOP, OffPolicyRunnerConfig


def _car_fields(profile: RobotProfile, speed: float = 2.0) -> dict[str, float]:
    fields = {o.source: 0.1 for o in profile.observations if history_source(o.source) is None}
    fields |= {"odom.twist.twist.linear.x": speed, "track.heading_error": 0.0, "track.lateral_offset": 0.0}
    return fields | {"track.half_width": 0.8}


@dataclass
class ScriptedLink:
    """A robot whose messages the test writes: time moves only in `wait_until`; `on_tick` may change the fields."""

    profile: RobotProfile
    now: float = 100.0
    stale: list[str] = field(default_factory=list)
    latest: dict[str, float] = field(default_factory=dict)
    sent: list[dict[str, float]] = field(default_factory=list)
    waits: list[float] = field(default_factory=list)
    operator: np.ndarray | None = None
    pressed: list[str] = field(default_factory=lambda: ["reset"])  # the operator starts the first episode
    estop: bool = False
    compute: float = 0.0
    answer_deadlines: list[float] = field(default_factory=list)
    state_at: Callable[[float], float] | None = None
    """When the robot's state message nearest a tick arrives (None: the link steps on the env's grid)."""
    spec: CommandSpec = field(init=False)

    def __post_init__(self) -> None:
        self.spec = select_command(self.profile, lambda pkg: True)
        self.latest = _car_fields(self.profile)

    def clock(self) -> float:
        return self.now

    def fields(self) -> dict[str, float]:
        return dict(self.latest)

    def stale_inputs(self) -> list[str]:
        return list(self.stale)

    def send(self, fields: dict[str, float]) -> None:
        self.sent.append(fields)

    def estopped(self) -> bool:
        return self.estop

    def intervention(self) -> np.ndarray | None:
        return self.operator

    def answer(self, deadline: float) -> np.ndarray | None:
        self.answer_deadlines.append(deadline)
        return self.operator

    def next_input(self, earliest: float, deadline: float) -> float | None:
        """The state message at `state_at(tick)` when that is within the window, else none (the tick stands)."""
        tick = 0.5 * (earliest + deadline)
        arrival = None if self.state_at is None else self.state_at(tick)
        if arrival is None or not earliest < arrival <= deadline:
            self.wait_until(tick)
            return None
        self.wait_until(arrival)
        return arrival

    def events(self) -> list[str]:
        events, self.pressed = self.pressed, []
        return events

    def wait_until(self, deadline: float) -> None:
        self.waits.append(deadline)
        self.now = max(self.now + self.compute, deadline)

    def close(self) -> None:
        pass


def _env(max_steps: int = 100) -> tuple[RobotEnv, ScriptedLink]:
    profile = load_profile("rc_car")
    link = ScriptedLink(profile)
    env = RobotEnv(profile, link, rc_car_progress, RobotEnvConfig(max_steps=max_steps), clock=link.clock)
    return env, link


def test_specs_are_the_profiles_and_steps_follow_the_dt_grid() -> None:
    env, link = _env()
    profile = link.profile
    assert env.obs_spec.names == profile.obs_names and env.action_spec.names == profile.action_names
    env.reset()
    start = link.now
    for _ in range(5):
        env.step(torch.zeros(1, 2))
    assert link.waits[-5:] == pytest.approx([start + k * 0.02 for k in range(1, 6)])
    link.compute = 0.05  # steps that overrun by more than a period: counted, the grid moves on
    for _ in range(3):
        env.step(torch.zeros(1, 2))
    assert env.missed_ticks >= 2


def test_the_command_goes_through_the_safety_filter_and_the_reward_is_progress() -> None:
    env, link = _env()
    env.reset()
    _, reward, terminated, truncated, info = env.step(torch.tensor([[0.0, 5.0]]))  # beyond the bounds
    assert link.sent[-1]["drive.speed"] <= 5.0 * 0.1 + 1e-9  # clipped to 1 and rate limited to 5/s * 0.02
    assert reward.item() == pytest.approx(2.0 * 0.02)  # 2 m/s along the track for 20 ms
    assert bool(info[INFO_VALID]) and not terminated and not truncated


def test_a_stale_step_is_invalid_and_not_stored_by_the_runner() -> None:
    env, link = _env(max_steps=10_000)
    env.reset()
    _, _, _, _, info = env.step(torch.zeros(1, 2))
    assert bool(info[INFO_VALID])
    link.stale = ["odom"]
    _, reward, _, _, info = env.step(torch.zeros(1, 2))
    assert not bool(info[INFO_VALID]) and reward.item() == 0.0 and env.invalid_steps == 1
    link.stale = []
    del link.latest["drive_state.steering_angle"]  # a field missing is the same
    assert not bool(env.step(torch.zeros(1, 2))[4][INFO_VALID])
    link.latest = _car_fields(link.profile)

    sac = SAC(
        env.obs_spec.dim, env.obs_spec.dim, env.action_spec.low_tensor(), env.action_spec.high_tensor(), SACConfig()
    )
    runner = OffPolicyRunner(
        env, sac, OffPolicyRunnerConfig(loop=replace(OFF_POLICY_LOOP, max_iterations=12), learning_starts=100), seed=0
    )
    runner.learn()
    stored_before = len(runner.buffer)
    link.stale = ["track"]
    runner.cfg = OffPolicyRunnerConfig(loop=replace(OFF_POLICY_LOOP, max_iterations=18), learning_starts=100)
    runner.learn()
    assert stored_before == 12 and len(runner.buffer) == 12 and runner.invalid_steps == 6


def test_the_operator_action_is_executed_flagged_and_reported() -> None:
    env, link = _env()
    env.reset()
    link.operator = np.array([0.05, 0.05])
    _, _, _, _, info = env.step(torch.tensor([[-1.0, -1.0]]))
    assert bool(info[INFO_INTERVENED]) and env.interventions == 1
    np.testing.assert_allclose(info[INFO_EXECUTED_ACTION].numpy()[0], [0.05, 0.05], atol=1e-6)
    assert link.sent[-1]["drive.steering_angle"] == pytest.approx(0.05 * 0.4189)


def test_the_estop_ends_the_episode_and_holds_the_safe_command_until_released() -> None:
    env, link = _env()
    env.reset()
    env.step(torch.tensor([[0.5, 0.5]]))
    link.estop = True
    released_after = [6]

    def wait(deadline: float) -> None:
        link.waits.append(deadline)
        link.now = deadline
        released_after[0] -= 1
        if released_after[0] == 0:  # the operator releases the e-stop, then presses reset
            link.estop = False
            link.pressed = ["reset"]

    link.wait_until = wait  # type: ignore[method-assign]
    sent_before = len(link.sent)
    _, _, terminated, truncated, _ = env.step(torch.tensor([[0.5, 0.5]]))
    # an interruption, not a terminal state of the task: a time-out for bootstrapping
    assert bool(truncated) and not bool(terminated) and env.episodes == 1 and env.estop_presses == 1
    safe = link.sent[sent_before + 1 :]
    assert len(safe) >= 3 and all(c == {"drive.steering_angle": 0.0, "drive.speed": 0.0} for c in safe)
    assert env.episode.phase == "running" and env.episode.human_resets == 2  # the start, and after the e-stop


def test_buttons_end_episodes_success_terminates_discard_is_not_stored() -> None:
    env, link = _env()
    env.reset()
    link.pressed = ["success"]
    _, _, terminated, truncated, info = env.step(torch.zeros(1, 2))
    assert bool(terminated) and not bool(truncated) and bool(info[INFO_SUCCESS])
    link.pressed = ["discard"]
    _, _, terminated, truncated, info = env.step(torch.zeros(1, 2))
    assert bool(truncated) and not bool(info[INFO_VALID])
    assert env.episodes == 2


def test_max_steps_truncates() -> None:
    env, _ = _env(max_steps=3)
    env.reset()
    done = [bool(env.step(torch.zeros(1, 2))[3]) for _ in range(3)]
    assert done == [False, False, True]


def test_reset_waits_for_fresh_inputs_and_gives_up_naming_them() -> None:
    env, link = _env()
    link.stale = ["odom", "track"]
    env.cfg = RobotEnvConfig(ready_timeout=0.1)
    with pytest.raises(RuntimeError, match="no odom, track"):
        env.reset()
    assert all(c == {"drive.steering_angle": 0.0, "drive.speed": 0.0} for c in link.sent)
    assert math.isfinite(link.now)


def test_leaving_the_workspace_ends_the_episode_and_the_car_recovers_by_reversing() -> None:
    """The rc_car profile: |lateral offset| > 0.6 m ends the episode; the recovery reverses at drive -0.2 with
    straight wheels (75 steps), stops (25), and retries once back inside the box."""
    env, link = _env()
    said: list[str] = []
    env.say = said.append
    link.pressed = []

    def operator_presses_reset(deadline: float) -> None:
        link.now = deadline
        link.pressed = ["reset"]

    link.wait_until = operator_presses_reset  # type: ignore[method-assign]
    env.reset()
    assert "then press reset" in said[0] and "episode starts" in said[1]  # the first episode waits for the operator
    link.latest["track.lateral_offset"] = 0.7
    sent_before = len(link.sent)
    calls = [0]

    def wait(deadline: float) -> None:
        link.now = deadline
        calls[0] += 1
        if calls[0] == 40:  # reversing brings the car back inside
            link.latest["track.lateral_offset"] = 0.1

    link.wait_until = wait  # type: ignore[method-assign]
    _, _, terminated, _, _ = env.step(torch.tensor([[0.0, 0.5]]))
    assert bool(terminated) and env.episode.recoveries == 1 and env.episode.phase == "running"
    recovery = link.sent[sent_before + 1 :]
    assert len(recovery) == 100  # 75 reversing + 25 stopped, then ready (the box holds)
    speeds = [c["drive.speed"] for c in recovery]
    assert min(speeds) == pytest.approx(-0.2 * 5.0) and speeds[-1] == pytest.approx(0.0)
    assert all(c["drive.steering_angle"] == pytest.approx(0.0) for c in recovery)


def test_the_action_box_narrows_the_learning_actions() -> None:
    env, link = _env()
    env.reset()
    for _ in range(20):  # rate limited: 0.1 per step
        env.step(torch.tensor([[0.0, 1.0]]))
    assert link.sent[-1]["drive.speed"] == pytest.approx(0.6 * 5.0)  # rc_car's action_box: drive <= 0.6


def test_a_success_detector_ends_the_episode_as_a_success() -> None:
    """A learned classifier plugs in as `success(obs)`: here one that sees success once the car is fast."""
    profile = load_profile("rc_car")
    link = ScriptedLink(profile)
    speed = profile.obs_names.index("vx")
    env = RobotEnv(profile, link, rc_car_progress, clock=link.clock, success=lambda obs: bool(obs[speed] > 3.0))
    env.reset()
    assert not bool(env.step(torch.zeros(1, 2))[2])
    link.latest["odom.twist.twist.linear.x"] = 3.5
    _, _, terminated, truncated, info = env.step(torch.zeros(1, 2))
    assert bool(terminated) and not bool(truncated) and bool(info[INFO_SUCCESS])
    assert env.episode.successes == 1


def test_a_learned_detector_can_be_the_reward_too() -> None:
    """`success_reward`: HIL-SERL's learned reward, 1 at the step the detector fires, whatever the profile's reward
    function says there (here the car's progress)."""
    profile = load_profile("rc_car")
    link = ScriptedLink(profile)
    speed = profile.obs_names.index("vx")
    detector = lambda obs: bool(obs[speed] > 3.0)  # noqa: E731
    env = RobotEnv(profile, link, rc_car_progress, clock=link.clock, success=detector, success_reward=True)
    env.reset()
    assert env.step(torch.zeros(1, 2))[1].item() == 0.0  # progress is positive, the learned reward is 0
    link.latest["odom.twist.twist.linear.x"] = 3.5
    _, reward, terminated, _, _ = env.step(torch.zeros(1, 2))
    assert reward.item() == 1.0 and bool(terminated)


@pytest.mark.parametrize("phase", [0.3, 0.7])
def test_steps_lock_onto_the_robot_s_state_messages_whatever_their_phase(phase: float) -> None:
    """trigger=input: each step reads its observation when the robot's state message arrives (one per period,
    `phase` of a period after the link's own grid), so its command answers that state at once; trigger=timer: on
    the env's grid, whatever the state messages' phase."""
    for trigger in ("input", "timer"):
        profile = load_profile("rc_car")
        link = ScriptedLink(profile)
        dt, start = profile.dt, link.now
        arrival = lambda tick: start + dt * (round((tick - start) / dt - phase) + phase)  # noqa: B023, E731
        link.state_at = arrival
        env = RobotEnv(profile, link, rc_car_progress, RobotEnvConfig(trigger=trigger), clock=link.clock)
        env.reset()
        first = env.tick
        for _ in range(6):
            env.step(torch.zeros(1, 2))
        waits = link.waits[-5:]
        assert np.diff(waits) == pytest.approx([dt] * 4)  # the control rate either way
        if trigger == "input":
            assert waits == pytest.approx([arrival(w) for w in waits])  # at the state messages
        else:
            grid = [first + dt * round((w - first) / dt) for w in waits]
            assert waits == pytest.approx(grid) and min(abs(w - arrival(w)) for w in waits) > 0.2 * dt


def test_during_a_takeover_the_step_waits_for_the_operator_s_answer_until_its_deadline() -> None:
    """The step asks the link for the operator's answer to this observation with a deadline of
    `operator_wait` periods after the tick (RosLink waits for it there; tests/real/ros/test_operator_answer.py)."""
    env, link = _env()
    env.reset()
    tick = env.tick
    env.step(torch.zeros(1, 2))
    assert link.answer_deadlines[-1] == pytest.approx(tick + 0.3 * env.dt)


ARM_POSE = (0.3, 0.6, -0.8, 0.2)  # yaw, shoulder, elbow, wrist (rad), where the arm is
ARM_HOME = (0.0, 0.5, -1.0, 0.5)  # the arm profile's `safe` values


def _arm_positions(command: dict[str, float]) -> list[float]:
    return [command[f"points[0].positions[{i}]"] for i in range(4)]


def _arm_duration(command: dict[str, float]) -> float:
    return command["points[0].time_from_start.sec"] + command["points[0].time_from_start.nanosec"] * 1e-9


@dataclass
class ArmLink(ScriptedLink):
    """The scripted link of an arm; `safe_command` records what its stall watchdog would send."""

    stall_hold: list[dict[str, float]] = field(default_factory=list)

    def __post_init__(self) -> None:
        super().__post_init__()
        self.latest = {o.source: 0.1 for o in self.profile.observations if history_source(o.source) is None}
        self.latest |= {f"joint_states.position[{i}]": angle for i, angle in enumerate(ARM_POSE)}
        self.latest |= {f"joint_states.velocity[{i}]": 0.0 for i in range(4)}

    def safe_command(self, fields: dict[str, float]) -> None:
        self.stall_hold.append(fields)


def test_the_arms_safe_command_holds_its_measured_pose_and_never_sends_home() -> None:
    """The arm profile (`safe_command: hold_measured`) with the operator's resets: the ready wait, the e-stop and
    the stall watchdog hold the measured joints; the rate limits start from them."""
    data = yaml.safe_load(resources.files("robo_rl.real").joinpath("profiles", "arm.yaml").read_text())
    del data["episode"]  # the operator resets (the scripted reset's move home is a filtered, rate-limited action)
    profile = profile_from_dict(data)
    link = ArmLink(profile)
    env = RobotEnv(profile, link, lambda fields, dt: 0.0, RobotEnvConfig(max_steps=100), clock=link.clock)
    assert link.stall_hold == []  # nothing to hold before a measurement: not the home pose
    link.stale = ["target"]
    waits = [0]

    def target_after_two_periods(deadline: float) -> None:
        link.waits.append(deadline)
        link.now = deadline
        waits[0] += 1
        link.stale = [] if waits[0] >= 2 else ["target"]

    link.wait_until = target_after_two_periods  # type: ignore[method-assign]
    env.reset()  # waits for the target: holding the measured joints meanwhile
    assert len(link.sent) == 2 and all(_arm_positions(c) == pytest.approx(ARM_POSE) for c in link.sent)
    assert link.stall_hold[-1] == link.sent[-1]
    env.step(torch.tensor([[1.0, 0.6, -0.8, 0.2]]))  # the yaw 2 rad/s x 20 ms from the measured 0.3, not from 0
    assert _arm_positions(link.sent[-1]) == pytest.approx([0.34, 0.6, -0.8, 0.2])
    assert _arm_duration(link.sent[-1]) == pytest.approx(0.02)
    link.estop = True
    released_after = [3]

    def wait(deadline: float) -> None:
        link.waits.append(deadline)
        link.now = deadline
        released_after[0] -= 1
        if released_after[0] == 0:
            link.estop, link.pressed = False, ["reset"]

    link.wait_until = wait  # type: ignore[method-assign]
    sent_before = len(link.sent)
    env.step(torch.tensor([[1.0, 0.6, -0.8, 0.2]]))
    held = link.sent[sent_before:]
    assert held and all(_arm_positions(c) == pytest.approx(ARM_POSE) for c in held)
    # Timed from the filter's last command (this step's, yaw 0.38, replaced by the hold): 0.08 rad at 2 rad/s.
    assert _arm_duration(held[0]) == pytest.approx(0.08 / 2.0)
    assert not any(_arm_positions(c) == pytest.approx(ARM_HOME) for c in link.sent)


CAMERAS = (ImageSpec("wrist", 16, 16, 3), ImageSpec("side", 16, 16, 3))
"""arm_peg_pixels' cameras (at a size of the test's choosing: the link decodes frames to it)."""


@dataclass
class CameraArmLink(ArmLink):
    """The arm_peg_pixels arm with its cameras: every period brings new frames whose pixels are the period's number;
    `hidden` cameras deliver none."""

    periods: int = 0
    shown: dict[str, np.ndarray] = field(default_factory=dict)
    hidden: set[str] = field(default_factory=set)

    def wait_until(self, deadline: float) -> None:
        super().wait_until(deadline)
        self.periods += 1
        self.shown = {
            c.name: np.full(c.shape, self.periods % 256, np.uint8) for c in CAMERAS if c.name not in self.hidden
        }

    def frames(self) -> dict[str, np.ndarray]:
        return dict(self.shown)


def _camera_env() -> tuple[RobotEnv, CameraArmLink]:
    profile = load_profile("arm_peg_pixels")
    link = CameraArmLink(profile)
    env = RobotEnv(profile, link, reward_for(profile), RobotEnvConfig(max_steps=10_000), link.clock, cameras=CAMERAS)
    return env, link


def _shown(obs: dict[str, torch.Tensor]) -> dict[str, int]:
    """The period each camera's frame of an observation was taken in (its pixels' value)."""
    return {name: int(frames[0, 0, 0, 0]) for name, frames in obs.items() if name != STATE_KEY}


def test_with_cameras_each_observation_is_the_state_and_each_camera_s_newest_frame() -> None:
    env, link = _camera_env()
    assert image_specs_of(env) == CAMERAS
    obs = env.reset()
    assert isinstance(obs, dict) and set(obs) == {STATE_KEY, "wrist", "side"}
    assert _shown(obs) == {"wrist": link.periods, "side": link.periods} and link.periods >= 1
    np.testing.assert_array_equal(obs[STATE_KEY][0].numpy(), env.obs)  # obs stays the state vector
    for _ in range(3):
        result = env.step(torch.zeros(1, 4))
        check_step_result(env, result)  # the camera env contract: shapes, uint8 frames, final_obs a dict too
        next_obs, _, _, _, info = result
        assert bool(info[INFO_VALID]) and env.obs.shape == (11,)
        assert _shown(next_obs) == _shown(info[INFO_FINAL_OBS]) == {"wrist": link.periods, "side": link.periods}


def test_a_stale_or_missing_camera_frame_makes_the_step_invalid_and_it_is_not_stored() -> None:
    env, link = _camera_env()
    last = _shown(env.reset())
    link.stale = ["wrist_image"]  # its newest frame is older than the staleness timeout (by its stamp, on RosLink)
    obs, reward, _, _, info = env.step(torch.zeros(1, 4))
    assert not bool(info[INFO_VALID]) and reward.item() == 0.0 and env.invalid_steps == 1
    assert _shown(obs) == last  # nothing new: the last observation repeated, frames included
    link.stale, link.hidden = [], {"side"}  # a camera that sent nothing yet is the same
    assert not bool(env.step(torch.zeros(1, 4))[4][INFO_VALID]) and env.invalid_steps == 2
    link.hidden = set()
    assert bool(env.step(torch.zeros(1, 4))[4][INFO_VALID])

    link.pressed = ["reset"]  # the runner starts a new episode: the operator's reset (arm_peg_pixels' episodes)
    encoder = replace(SACConfig().encoder, channels=8)
    sac = PixelSAC(
        11, 11, env.action_spec.low_tensor(), env.action_spec.high_tensor(), SACConfig(encoder=encoder), CAMERAS
    )
    runner = OffPolicyRunner(
        env, sac, OffPolicyRunnerConfig(loop=replace(OFF_POLICY_LOOP, max_iterations=5), learning_starts=100), seed=0
    )
    runner.learn()
    assert len(runner.buffer) == 5 and runner.buffer.image_specs == CAMERAS  # the frames are stored with the state
    link.stale = ["side_image"]
    runner.cfg = OffPolicyRunnerConfig(loop=replace(OFF_POLICY_LOOP, max_iterations=9), learning_starts=100)
    runner.learn()
    assert len(runner.buffer) == 5 and runner.invalid_steps == 4


def test_reset_waits_for_every_camera_and_gives_up_naming_a_silent_one() -> None:
    env, link = _camera_env()
    link.hidden = {"wrist"}
    waits = len(link.waits)

    def wrist_after_three_periods(deadline: float) -> None:
        CameraArmLink.wait_until(link, deadline)
        if len(link.waits) - waits >= 3:
            link.hidden = set()

    link.wait_until = wrist_after_three_periods  # type: ignore[method-assign]
    obs = env.reset()
    assert len(link.waits) - waits == 4 and _shown(obs)["wrist"] == link.periods  # held until its first frame
    env.cfg = RobotEnvConfig(ready_timeout=0.3)
    link.stale, link.pressed = ["side_image"], ["reset"]  # the operator's reset, then a camera falls silent
    with pytest.raises(RuntimeError, match="no side_image"):
        env.reset()


def test_the_cameras_must_be_those_the_profile_s_image_inputs_feed_from_a_link_with_frames() -> None:
    pixels, arm_peg = load_profile("arm_peg_pixels"), load_profile("arm_peg")
    with pytest.raises(ValueError, match="'wrist_image' feeds camera 'wrist'"):  # frames dropped: a state-only policy
        RobotEnv(pixels, CameraArmLink(pixels), reward_for(pixels))
    with pytest.raises(ValueError, match=r"camera 'side'.*no image input"):
        RobotEnv(arm_peg, CameraArmLink(arm_peg), reward_for(arm_peg), cameras=CAMERAS[1:])
    with pytest.raises(ValueError, match="frames"):
        RobotEnv(pixels, ArmLink(pixels), reward_for(pixels), cameras=CAMERAS)
    link = CameraArmLink(pixels)
    env = RobotEnv(
        pixels, link, reward_for(pixels), clock=link.clock, cameras=(CAMERAS[0], replace(CAMERAS[1], width=8))
    )
    with pytest.raises(ValueError, match="camera side: a uint8 frame"):
        env.reset()
