"""A joystick or gamepad without ROS: the Linux joystick interface (/dev/input/jsN) and the axes → action mapping.

The kernel's joystick driver (joydev) turns any USB or Bluetooth gamepad into /dev/input/jsN, which reads as a
stream of 8-byte events: `u32 time (ms), s16 value, u8 type, u8 number`. Type 1 is a button (value 0/1), type 2
an axis (value in [-32767, 32767]); the flag 0x80 marks the synthetic events that report the state on open.
`LinuxJoystick` reads them on a background thread and keeps the latest axes (in [-1, 1]) and buttons.

`AxisMapping` is the mapping teleop_node uses as well: action i = clip(offset[i] + scale[i] × axes[axis[i]],
low_i, high_i); absent axes read 0.
"""

from __future__ import annotations

import errno
import math
import os
import select
import struct
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

EVENT = struct.Struct("<IhBB")
BUTTON, AXIS, INIT = 0x01, 0x02, 0x80
AXIS_MAX = 32767.0


@dataclass(frozen=True)
class AxisMapping:
    """Per action: the joystick axis it follows, a scale and an offset (see `expand` for the short forms)."""

    axis: tuple[int, ...]
    scale: tuple[float, ...]
    offset: tuple[float, ...]

    def __post_init__(self) -> None:
        if not len(self.axis) == len(self.scale) == len(self.offset):
            raise ValueError(
                f"AxisMapping: {len(self.axis)} axes, {len(self.scale)} scales, {len(self.offset)} offsets"
            )
        if any(index < 0 for index in self.axis):
            raise ValueError(f"AxisMapping: axis indices must be >= 0, got {list(self.axis)}")

    @classmethod
    def expand(
        cls,
        actions: int,
        axis: Sequence[int] = (-1,),
        scale: Sequence[float] = (1.0,),
        offset: Sequence[float] = (0.0,),
    ) -> AxisMapping:
        """The mapping for `actions` actions: `axis` [-1] maps axis i to action i; a one-element `scale` or
        `offset` applies to every action. Other lengths must equal `actions` (ValueError naming the setting)."""
        axis = list(range(actions)) if list(axis) == [-1] else [int(i) for i in axis]
        scale = [float(scale[0])] * actions if len(scale) == 1 else [float(v) for v in scale]
        offset = [float(offset[0])] * actions if len(offset) == 1 else [float(v) for v in offset]
        for name, values in (("axis_map", axis), ("axis_scale", scale), ("axis_offset", offset)):
            if len(values) != actions:
                raise ValueError(f"{name}: {len(values)} values for {actions} actions")
            if not all(math.isfinite(value) for value in values):
                raise ValueError(f"{name}: values must be finite, got {values}")
        return cls(tuple(axis), tuple(scale), tuple(offset))

    def action(self, axes: Sequence[float], low: np.ndarray, high: np.ndarray) -> np.ndarray:
        """`(actions,)` the operator's action from the axes, clipped to [low, high]."""
        values = np.array([axes[i] if i < len(axes) else 0.0 for i in self.axis], dtype=np.float64)
        return np.clip(np.array(self.offset) + np.array(self.scale) * values, low, high)


class LinuxJoystick:
    """Reads `/dev/input/jsN` (or any file that streams joystick events) on a daemon thread.

    Raises FileNotFoundError / PermissionError with what to do when the device cannot be opened. When the device
    goes away (unplugged, battery), `connected` turns False and the state is zeroed: all buttons released.
    """

    def __init__(self, path: str | Path = "/dev/input/js0") -> None:
        self.path = Path(path)
        self.fd = _open(self.path)
        self.axes: list[float] = []
        self.buttons: list[int] = []
        self.presses: list[int] = []
        self.connected = True
        self.lock = threading.Lock()
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._read, name=f"joystick {self.path}", daemon=True)
        self.thread.start()

    def state(self) -> tuple[list[float], list[int], list[int]]:
        """(axes in [-1, 1], buttons held 0/1, buttons pressed since the last call, each once)."""
        with self.lock:
            presses, self.presses = self.presses, []
            return list(self.axes), list(self.buttons), presses

    def _read(self) -> None:
        pending = b""
        while not self.stop.is_set():
            ready, _, _ = select.select([self.fd], [], [], 0.05)
            if not ready:
                continue
            try:
                chunk = os.read(self.fd, 64 * EVENT.size)
            except BlockingIOError:
                continue
            except OSError as err:  # ENODEV: unplugged
                if err.errno not in (errno.ENODEV, errno.EIO):
                    raise
                chunk = b""
            if not chunk:
                self._disconnect()
                return
            pending += chunk
            whole = len(pending) - len(pending) % EVENT.size
            for offset in range(0, whole, EVENT.size):
                self._apply(*EVENT.unpack_from(pending, offset))
            pending = pending[whole:]

    def _apply(self, _time: int, value: int, kind: int, number: int) -> None:
        with self.lock:
            if (kind & ~INIT) == AXIS:
                _grow(self.axes, number, 0.0)
                self.axes[number] = max(-1.0, value / AXIS_MAX)
            elif (kind & ~INIT) == BUTTON:
                _grow(self.buttons, number, 0)
                if value and not self.buttons[number] and not kind & INIT:
                    self.presses.append(number)
                self.buttons[number] = 1 if value else 0

    def _disconnect(self) -> None:
        with self.lock:
            self.connected = False
            self.axes = [0.0] * len(self.axes)
            self.buttons = [0] * len(self.buttons)

    def close(self) -> None:
        self.stop.set()
        self.thread.join(timeout=1.0)
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1


def _open(path: Path) -> int:
    try:
        return os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except FileNotFoundError:
        found = ", ".join(sorted(str(p) for p in Path("/dev/input").glob("js*"))) or "none"
        raise FileNotFoundError(
            f"no joystick at {path} (joysticks here: {found}); plug one in (joydev module) or name its device"
        ) from None
    except PermissionError:
        raise PermissionError(
            f"cannot read {path}: add yourself to the 'input' group (sudo usermod -aG input $USER, then log in again)"
        ) from None


def _grow(values: list, index: int, fill: float) -> None:
    if index >= len(values):
        values.extend([fill] * (index + 1 - len(values)))
