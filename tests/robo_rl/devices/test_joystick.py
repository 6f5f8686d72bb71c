"""The Linux joystick interface read from a FIFO carrying the kernel's 8-byte js_event records, and the mapping.

There is no joystick (nor /dev/input) in CI; a FIFO gives `LinuxJoystick` the same byte stream the joydev driver
gives a reader of /dev/input/jsN, including the state events on open (flag 0x80) and the end of the stream when the
device goes away.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import pytest

from robo_rl.devices.joystick import AXIS, BUTTON, EVENT, INIT, AxisMapping, LinuxJoystick


def _event(kind: int, number: int, value: int, ms: int = 0) -> bytes:
    return EVENT.pack(ms, value, kind, number)


def _wait(condition: Callable[[], bool], timeout: float = 2.0) -> bool:
    deadline = time.monotonic() + timeout
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.005)
    return condition()


@pytest.fixture
def fifo(tmp_path: Path) -> Iterator[tuple[Path, int]]:
    path = tmp_path / "js0"
    os.mkfifo(path)
    writer = os.open(path, os.O_RDWR)  # a FIFO opened read-write never blocks and keeps the stream open
    yield path, writer
    try:
        os.close(writer)
    except OSError:
        pass


def test_axis_mapping_defaults_short_forms_and_errors() -> None:
    mapping = AxisMapping.expand(3)
    assert mapping.axis == (0, 1, 2) and mapping.scale == (1.0,) * 3 and mapping.offset == (0.0,) * 3
    mapping = AxisMapping.expand(3, axis=[4, 0, 9], scale=[0.5], offset=[0.1, 0.0, 0.0])
    low, high = np.full(3, -1.0), np.full(3, 1.0)
    action = mapping.action([1.0, -0.2, 0.0, 0.0, -0.6], low, high)
    np.testing.assert_allclose(action, [0.1 - 0.3, 0.5, 0.0])  # axis 9 is absent and reads 0
    np.testing.assert_allclose(AxisMapping.expand(1, scale=[5.0]).action([0.9], low[:1], high[:1]), [1.0])
    with pytest.raises(ValueError, match="axis_scale: 2 values for 3 actions"):
        AxisMapping.expand(3, scale=[1.0, 2.0])
    with pytest.raises(ValueError, match="axis indices must be >= 0"):
        AxisMapping.expand(2, axis=[0, -3])
    with pytest.raises(ValueError, match=r"axis_scale: values must be finite, got \[nan, nan\]"):
        AxisMapping.expand(2, scale=[float("nan")])
    with pytest.raises(ValueError, match=r"axis_offset: values must be finite, got \[0.0, inf\]"):
        AxisMapping.expand(2, offset=[0.0, float("inf")])


def test_events_become_axes_buttons_and_single_presses(fifo: tuple[Path, int]) -> None:
    path, writer = fifo
    # the state on open: button 1 already held, axis 0 off centre; neither counts as a press
    os.write(writer, _event(BUTTON | INIT, 1, 1) + _event(AXIS | INIT, 0, 16384) + _event(AXIS | INIT, 2, 0))
    joystick = LinuxJoystick(path)
    try:
        assert _wait(lambda: len(joystick.state()[0]) == 3)
        axes, buttons, presses = joystick.state()
        assert axes[0] == pytest.approx(16384 / 32767) and buttons == [0, 1] and presses == []
        record = _event(BUTTON, 0, 1, ms=5) + _event(AXIS, 2, -32767, ms=6) + _event(AXIS, 0, -32768, ms=7)
        os.write(writer, record[:5])  # an event split across reads
        time.sleep(0.05)
        os.write(writer, record[5:] + _event(BUTTON, 0, 0) + _event(BUTTON, 0, 1) + _event(AXIS, 1, 32767))
        assert _wait(lambda: joystick.axes[1] == 1.0)  # the last event is in
        axes, buttons, presses = joystick.state()
        assert axes == [-1.0, 1.0, -1.0] and buttons == [1, 1] and presses == [0, 0]
    finally:
        joystick.close()


def test_presses_are_reported_once_and_release_is_not_a_press(fifo: tuple[Path, int]) -> None:
    path, writer = fifo
    joystick = LinuxJoystick(path)
    try:
        os.write(writer, _event(BUTTON, 3, 1) + _event(BUTTON, 3, 0) + _event(BUTTON, 3, 1) + _event(AXIS, 1, -32768))
        assert _wait(lambda: len(joystick.axes) == 2)  # the last event is in
        axes, buttons, presses = joystick.state()
        assert presses == [3, 3] and buttons == [0, 0, 0, 1] and axes == [0.0, -1.0]  # -32768 clipped to -1
        assert joystick.state()[2] == []
        os.write(writer, _event(BUTTON, 3, 0))
        assert _wait(lambda: joystick.buttons[3] == 0) and joystick.state()[2] == []
    finally:
        joystick.close()


def test_unplugging_releases_every_button(fifo: tuple[Path, int]) -> None:
    path, writer = fifo
    joystick = LinuxJoystick(path)
    try:
        os.write(writer, _event(BUTTON, 4, 1) + _event(AXIS, 0, 20000))
        assert _wait(lambda: joystick.buttons[4:5] == [1])
        assert joystick.connected
        os.close(writer)  # the end of the stream, as when the device node goes away
        assert _wait(lambda: not joystick.connected)
        axes, buttons, _ = joystick.state()
        assert buttons == [0] * 5 and axes == [0.0]
    finally:
        joystick.close()


def test_a_missing_device_says_what_to_do(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match=r"no joystick at .*js7.*plug one in"):
        LinuxJoystick(tmp_path / "js7")
