"""GamepadTeleop drives one env of a real simulator while the dead-man button is held.

The joystick is a FIFO carrying the kernel's js_event records (see tests/real/test_joystick.py): there is no
/dev/input in CI.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest
import torch

from robo_rl.cli.main import main
from robo_rl.devices.joystick import AXIS, BUTTON, EVENT
from robo_rl.hil import INFO_EXECUTED_ACTION, INFO_INTERVENED, InterventionEnv
from robo_rl.hil.gamepad import GamepadConfig, GamepadTeleop
from robo_rl.sim import make


def _send(writer: int, kind: int, number: int, value: int) -> None:
    os.write(writer, EVENT.pack(0, value, kind, number))


def _wait(condition: Callable[[], bool], timeout: float = 30.0) -> None:
    """Poll until `condition()`; it usually holds within milliseconds, the long deadline is for a loaded machine."""
    deadline = time.monotonic() + timeout
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.005)
    assert condition()


def test_held_button_drives_env_zero_estop_once_and_unplugging_hands_back(tmp_path: Path) -> None:
    path = tmp_path / "js0"
    os.mkfifo(path)
    writer = os.open(path, os.O_RDWR)
    env = make("pendulum", num_envs=3, seed=0)
    low, high = env.action_spec.low_tensor(), env.action_spec.high_tensor()  # torque in [-2, 2]
    pad = GamepadTeleop(3, low, high, GamepadConfig(device=str(path), axis_scale=(4.0,)))
    wrapped = InterventionEnv(env, pad)
    wrapped.reset(seed=0)
    policy = torch.full((3, 1), -0.3)
    try:
        _send(writer, AXIS, 0, 8192)  # stick a quarter up: 4 × 0.25 = 1.0 N·m
        _wait(lambda: pad.joystick.axes[:1] == [8192 / 32767])
        info = wrapped.step(policy)[4]
        assert not bool(info[INFO_INTERVENED].any())  # the stick alone does nothing
        _send(writer, BUTTON, 4, 1)
        _wait(lambda: pad.joystick.buttons[4:5] == [1])
        info = wrapped.step(policy)[4]
        assert info[INFO_INTERVENED].tolist() == [True, False, False]
        torch.testing.assert_close(info[INFO_EXECUTED_ACTION][:, 0], torch.tensor([4 * 8192 / 32767, -0.3, -0.3]))
        _send(writer, AXIS, 0, 32767)  # full stick: clipped to the bound
        _send(writer, BUTTON, 1, 1)
        _wait(lambda: pad.joystick.buttons[1:2] == [1] and pad.joystick.axes[0] == 1.0)
        command = pad.poll(torch.zeros(3, 3))
        assert command.buttons == {"estop": True} and float(command.action[0, 0]) == 2.0
        assert pad.poll(torch.zeros(3, 3)).buttons == {}
        _send(writer, BUTTON, 4, 0)
        _wait(lambda: pad.joystick.buttons[4] == 0)
        assert not bool(wrapped.step(policy)[4][INFO_INTERVENED].any())
        _send(writer, BUTTON, 4, 1)  # held again, then the pad goes away
        _wait(lambda: pad.joystick.buttons[4] == 1)
        os.close(writer)
        _wait(lambda: not pad.joystick.connected)
        with pytest.warns(UserWarning, match="disconnected: the policy drives"):
            command = pad.poll(torch.zeros(3, 3))
        assert not bool(command.active.any()) and command.buttons == {"disconnected": True}
        assert pad.poll(torch.zeros(3, 3)).buttons == {}
    finally:
        pad.close()


def test_bad_settings_and_a_missing_pad_are_one_line_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(ValueError, match="need different buttons"):
        GamepadConfig(takeover_button=2, reset_button=2)
    argv = ["train", "pendulum_sac", "--teleop", "gamepad", "--set", f"hil.gamepad.device={tmp_path / 'js3'}"]
    assert main([*argv, "--runs-root", str(tmp_path / "runs")]) == 2
    assert "hil.teleop=gamepad: no joystick at" in capsys.readouterr().err


def test_record_demos_runs_in_real_time_and_a_pad_that_goes_away_records_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """record-demos with a person at the pad: paced to the task's dt (RealTimeEnv, 200 steps of 0.05 s), and when the
    pad stops sending mid-episode, one line and no file: what it recorded was not driven by anyone."""
    path, output = tmp_path / "js0", tmp_path / "demos.npz"
    os.mkfifo(path)
    writer = os.open(path, os.O_RDWR)
    _send(writer, AXIS, 0, 8192)

    def unplug() -> None:
        time.sleep(0.3)
        os.close(writer)

    threading.Thread(target=unplug, daemon=True).start()
    argv = ["record-demos", "pendulum", "--teleop", "gamepad", "--gamepad", str(path), "-o", str(output)]
    assert main(argv) == 2
    out, err = capsys.readouterr()
    assert "gamepad: one step every 0.05 s, in real time" in out
    assert err.count("\n") == 1 and f"--gamepad {path}: the joystick stopped sending" in err, err
    assert not output.exists()
