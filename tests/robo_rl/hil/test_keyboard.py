"""KeyboardTeleop reads a real terminal (a pseudo-terminal here): keys nudge actions, space takes over env 0."""

from __future__ import annotations

import os
import termios
import time

import pytest
import torch

from robo_rl.hil.keyboard import KeyboardTeleop


def _wait(condition: object, timeout: float = 30.0) -> None:
    """Poll until `condition()`; it usually holds within milliseconds, the long deadline is for a loaded machine."""
    deadline = time.monotonic() + timeout
    while not condition() and time.monotonic() < deadline:  # type: ignore[operator]
        time.sleep(0.01)


def test_keys_from_a_terminal_drive_one_env_and_the_terminal_is_restored() -> None:
    master, slave = os.openpty()
    with os.fdopen(slave, "r") as stream:
        before = termios.tcgetattr(slave)
        device = KeyboardTeleop(3, -torch.ones(2), torch.ones(2), step=0.1, stream=stream)
        assert termios.tcgetattr(slave)[3] & termios.ICANON == 0  # cbreak: keys arrive without Enter
        os.write(master, b" wwwa")
        _wait(lambda: device.active and abs(float(device.value[1]) + 0.1) < 1e-6)
        command = device.poll(torch.zeros(3, 5))
        assert command.active.tolist() == [True, False, False]
        torch.testing.assert_close(command.action[0], torch.tensor([0.3, -0.1]))
        assert float(command.action[1:].abs().sum()) == 0.0 and command.buttons == {}
        os.write(master, b"w" * 15 + b"x")  # clipped at the bound; e-stop reported once
        _wait(lambda: "estop" in device.pressed)
        command = device.poll(torch.zeros(3, 5))
        assert float(command.action[0, 0]) == 1.0 and command.buttons == {"estop": True}
        assert device.poll(torch.zeros(3, 5)).buttons == {}
        os.write(master, b"c ")
        _wait(lambda: not device.active)
        assert not bool(device.poll(torch.zeros(3, 5)).active.any()) and float(device.value.abs().sum()) == 0.0
        device.close()
        assert termios.tcgetattr(slave) == before
    os.close(master)


def test_not_a_terminal_is_a_clear_error() -> None:
    read, write = os.pipe()
    with os.fdopen(read, "r") as stream, pytest.raises(ValueError, match="needs a terminal"):
        KeyboardTeleop(1, -torch.ones(2), torch.ones(2), stream=stream)
    os.close(write)
