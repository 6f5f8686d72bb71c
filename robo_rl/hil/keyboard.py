"""KeyboardTeleop: take over one env from a terminal, no GUI (a TeleopDevice).

Keys are read from the terminal in cbreak mode by a background thread (POSIX termios; the terminal is restored on
`close`). Each action has a pair of keys that nudge it by `step` (clipped to its bounds); `c` centres every
action on `center`. Space toggles the takeover; `x` presses the `estop` button, `y` the `success` button and `r`
the `reset` button (each reported once, at the next poll). The operator controls env `env_index` only.

Default pairs, up/down: w/s, d/a, i/k, l/j, then t/g, h/f (at most 6 actions).
"""

from __future__ import annotations

import atexit
import os
import select
import sys
import termios
import threading
import tty
from collections.abc import Sequence
from typing import IO

import torch

from robo_rl.hil.device import TeleopCommand

DEFAULT_KEYS = (("w", "s"), ("d", "a"), ("i", "k"), ("l", "j"), ("t", "g"), ("h", "f"))
BUTTONS = {"x": "estop", "y": "success", "r": "reset"}


class KeyboardTeleop:
    """See the module docstring; `stream` is the terminal (stdin by default)."""

    def __init__(
        self,
        num_envs: int,
        low: torch.Tensor,
        high: torch.Tensor,
        center: Sequence[float] | None = None,
        step: float = 0.1,
        env_index: int = 0,
        keys: Sequence[tuple[str, str]] = DEFAULT_KEYS,
        stream: IO[str] | None = None,
    ) -> None:
        dim = low.shape[0]
        if dim > len(keys):
            raise ValueError(f"KeyboardTeleop: {dim} actions but only {len(keys)} key pairs")
        if not 0 <= env_index < num_envs:
            raise ValueError(f"KeyboardTeleop: env_index {env_index} outside 0..{num_envs - 1}")
        self.num_envs, self.low, self.high, self.step, self.env_index = num_envs, low, high, step, env_index
        self.center = torch.zeros_like(low) if center is None else torch.as_tensor(center, dtype=low.dtype)
        self.value = self.center.clone()
        pairs = enumerate(keys[:dim])
        self.bindings = {key: (i, sign) for i, pair in pairs for key, sign in zip(pair, (1, -1), strict=True)}
        self.active = False
        self.pressed: set[str] = set()
        self.lock = threading.Lock()
        self.stream = stream if stream is not None else sys.stdin
        self.stop = threading.Event()
        self.saved = self._cbreak()
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()
        atexit.register(self.close)  # the terminal comes back even when training stops on an exception

    def _cbreak(self) -> list | None:
        fd = self.stream.fileno()
        if not os.isatty(fd):
            raise ValueError("KeyboardTeleop needs a terminal on stdin (run in a terminal, not through a pipe)")
        saved = termios.tcgetattr(fd)
        tty.setcbreak(fd)
        return saved

    def _read(self) -> None:
        fd = self.stream.fileno()
        while not self.stop.is_set():
            ready, _, _ = select.select([fd], [], [], 0.05)
            if ready:
                for char in os.read(fd, 64).decode(errors="ignore"):
                    self.key(char)

    def key(self, char: str) -> None:
        """Apply one key press (the reader thread calls this; tests and GUIs may too)."""
        with self.lock:
            if char == " ":
                self.active = not self.active
            elif char == "c":
                self.value = self.center.clone()
            elif char in BUTTONS:
                self.pressed.add(BUTTONS[char])
            elif char in self.bindings:
                index, sign = self.bindings[char]
                value = self.value[index] + sign * self.step
                self.value[index] = value.clamp(self.low[index], self.high[index])

    def poll(self, obs: torch.Tensor) -> TeleopCommand:
        with self.lock:
            action = torch.zeros(self.num_envs, self.low.shape[0], dtype=self.low.dtype, device=obs.device)
            action[self.env_index] = self.value.to(obs.device)
            active = torch.zeros(self.num_envs, dtype=torch.bool, device=obs.device)
            active[self.env_index] = self.active
            buttons = {name: True for name in self.pressed}
            self.pressed.clear()
        return TeleopCommand(action, active, buttons)

    def episode_reset(self, done: torch.Tensor) -> None:
        """The takeover outlives episodes (the operator lets go with space)."""

    def close(self) -> None:
        """Stop reading and restore the terminal."""
        self.stop.set()
        self.thread.join(timeout=1.0)
        if self.saved is not None:
            termios.tcsetattr(self.stream.fileno(), termios.TCSADRAIN, self.saved)
            self.saved = None
