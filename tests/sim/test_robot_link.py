"""SimLink: RobotEnv on the profile's task simulator in simulated time, with the simulated operator."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from robo_rl.real.profile import load_profile
from robo_rl.robot.env import RobotEnv
from robo_rl.robot.operator import OperatorConfig, PursuitDriver, SimulatedOperator
from robo_rl.robot.rewards import reward_for
from robo_rl.sim.robot_link import SimLink

PROFILE = load_profile("rc_car")


def _env(operator: SimulatedOperator | None, seed: int = 0) -> tuple[RobotEnv, SimLink]:
    link = SimLink(PROFILE, seed=seed, operator=operator)
    return RobotEnv(PROFILE, link, reward_for(PROFILE), clock=link.clock, say=link.say), link


def test_the_clock_is_simulated_one_period_per_step_and_the_command_reaches_the_simulator() -> None:
    env, link = _env(SimulatedOperator(OperatorConfig(reset_delay_s=0.5)))
    env.reset()
    steps, start = link.steps, link.clock()
    driver = PursuitDriver()
    for _ in range(50):  # the car stays on the track
        obs = env.step(torch.as_tensor(driver(link.fields())).float().unsqueeze(0))[0]
    assert env.episodes == 0
    assert link.steps - steps == 50 and link.clock() - start == pytest.approx(50 * PROFILE.dt)
    last_command = obs[0, PROFILE.obs_names.index("previous_steering_0") :][:2].numpy()
    assert np.allclose(link.action, last_command, atol=1e-5)  # through the profile's command fields and back
    assert link.fields()["odom.twist.twist.linear.x"] > 0.5  # the car drives


def test_a_pursuit_policy_laps_cleanly_and_the_operator_s_laps_are_not_clean() -> None:
    env, link = _env(SimulatedOperator(OperatorConfig(reset_delay_s=0.5)))
    env.reset()
    driver = PursuitDriver()
    for _ in range(1500):  # 30 s: two laps at the driver's cruise speed
        env.step(torch.as_tensor(driver(link.fields())).float().unsqueeze(0))[0]
    stats = link.stats()
    assert stats["laps"] >= 1 and stats["clean_laps"] == stats["laps"] and env.interventions == 0
    assert 0 < stats["first_clean_lap_s"] < 30
    env, link = _env(SimulatedOperator(OperatorConfig(always=True, reset_delay_s=0.5)))
    env.reset()
    for _ in range(1500):
        env.step(torch.zeros(1, 2))
    assert link.laps >= 1 and link.stats()["clean_laps"] == 0 and env.interventions == 1500
    assert math.isnan(link.stats()["first_clean_lap_s"])


def test_the_operator_answers_the_reset_prompt_after_its_delay() -> None:
    env, link = _env(SimulatedOperator(OperatorConfig(reset_delay_s=1.0)))
    resets = link.sim_resets
    env.reset()  # the first episode waits for the operator: it puts the car back, then presses reset
    assert link.sim_resets == resets + 1 and env.episode.human_resets == 1
    assert link.clock() >= 1.0


def test_the_operator_takes_over_near_the_border_after_its_reaction_time_and_hands_back_when_centred() -> None:
    operator = SimulatedOperator(OperatorConfig(reaction_s=0.1))
    fields = {f"track.lookahead[{i}]": 0.0 for i in range(20)} | {"track.lookahead[0]": 1.0, "track.lookahead[2]": 1.5}
    fields |= {"odom.twist.twist.linear.x": 2.0, "track.heading_error": 0.0, "track.half_width": 0.7}
    assert operator.action(fields | {"track.lateral_offset": 0.3}, 0.0) is None
    near = fields | {"track.lateral_offset": 0.6}
    assert operator.action(near, 1.0) is None  # seen, not yet reacted
    action = operator.action(near, 1.1)
    assert action is not None and operator.takeovers == 1 and np.all(np.abs(action) <= 1.0)
    assert operator.action(fields | {"track.lateral_offset": 0.3}, 1.2) is not None  # not yet centred
    assert operator.action(fields | {"track.lateral_offset": 0.1}, 1.3) is None
    assert OperatorConfig(estop=((1.0, 2.0),)) and SimulatedOperator(OperatorConfig(estop=((1.0, 2.0),))).estopped(1.5)


def test_pursuit_steers_towards_a_look_ahead_point_on_the_left() -> None:
    fields = {f"track.lookahead[{i}]": 0.0 for i in range(20)}
    for k in range(10):
        fields[f"track.lookahead[{2 * k}]"], fields[f"track.lookahead[{2 * k + 1}]"] = 0.5 * (k + 1), 0.1 * (k + 1)
    steering, drive = PursuitDriver()(fields | {"odom.twist.twist.linear.x": 0.0})
    assert steering > 0  # left (FLU)
    # The drive action is the ESC's speed setpoint, 2.2 m/s / 5 m/s (the profile's scale), whatever the speed now:
    # the car's speed loop brakes or accelerates to it.
    assert drive == pytest.approx(2.2 / 5.0)
    assert PursuitDriver()(fields | {"odom.twist.twist.linear.x": 5.0})[1] == pytest.approx(2.2 / 5.0)


def test_record_demos_on_the_simulated_robot_keeps_the_operator_s_driving(tmp_path) -> None:
    from robo_rl.cli.main import main
    from robo_rl.hil.demos import read_meta

    out = tmp_path / "lap.npz"
    argv = ["record-demos", "rc_car/race", "--robot", "rc_car", "--robot-link", "sim", "--seconds", "4", "-o", str(out)]
    assert main(argv) == 0
    with np.load(out) as data:
        assert len(data["rewards"]) == 200 and data["intervened"].all() and data["is_demo"].all()
        assert data["rewards"].sum() > 2.0  # 4 s of driving along the track at about 2 m/s
    meta = read_meta(out)
    assert meta["obs_names"] == list(PROFILE.obs_names) and meta["source"] == "robot=rc_car link=sim"


def test_a_keyboard_at_the_trainer_takes_over_and_its_e_stop_holds_until_its_reset() -> None:
    import os
    import threading
    import time

    from robo_rl.hil.keyboard import KeyboardTeleop

    master, slave = os.openpty()
    keyboard = KeyboardTeleop(1, torch.tensor([-1.0, -1.0]), torch.tensor([1.0, 1.0]), stream=os.fdopen(slave, "r"))
    env, link = _env(SimulatedOperator(OperatorConfig(reset_delay_s=0.2, corrects=False)))
    env.attach_teleop(keyboard)
    sent: list[dict[str, float]] = []
    send = link.send
    link.send = lambda fields: (sent.append(dict(fields)), send(fields))  # type: ignore[method-assign]
    try:
        env.reset()
        os.write(master, b" dd")  # take over, drive 0.2
        deadline = time.monotonic() + 5.0
        while not keyboard.active and time.monotonic() < deadline:  # the keyboard's reader thread
            time.sleep(0.01)
        time.sleep(0.1)
        info = env.step(torch.zeros(1, 2))[4]
        # the keyboard's action, through the drive's rate limit (5/s at 50 Hz: 0.1 per step towards 0.2)
        assert bool(info["intervened"][0]) and float(info["executed_action"][0, 1]) == pytest.approx(0.1, abs=1e-6)
        os.write(master, b" x")  # let go, e-stop
        time.sleep(0.3)
        sent.clear()
        threading.Timer(1.0, os.write, (master, b"r")).start()  # a second later: the keyboard's reset
        result = env.step(torch.zeros(1, 2))  # the e-stop ends the episode; the reset waits for the release
        assert bool(result[3][0]) and not bool(result[4]["valid"][0]) and env.estop_presses == 1
        assert env.episodes == 1 and env.episode.human_resets == 2 and env.episode.phase == "running"
        drives = [f for f in sent if f]
        assert len(drives) > 10 and all(abs(v) < 1e-9 for f in drives[:10] for v in f.values())  # held safe
        assert env.episode.events[-1].name == "reset"
    finally:
        keyboard.close()
        os.close(master)
