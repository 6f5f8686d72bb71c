"""Headless 2-D drawing of one pendulum with matplotlib's Agg backend (for `robo-rl play` videos)."""

from __future__ import annotations

import math

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure


class PendulumRenderer:
    """Draws a pendulum of unit length at angle `theta` (rad from upright, counter-clockwise positive), the
    applied torque as an arc, and the time; returns RGB frames of a constant size."""

    def __init__(self, max_torque: float, size: tuple[int, int] = (400, 400)) -> None:
        """`max_torque` (N m) scales the torque arc; `size` is (width, height) in pixels."""
        if max_torque <= 0 or min(size) < 16:
            raise ValueError(f"PendulumRenderer: need max_torque > 0 and size >= 16 px, got {max_torque}, {size}")
        self._max_torque = max_torque
        dpi = 100
        self._figure = Figure(figsize=(size[0] / dpi, size[1] / dpi), dpi=dpi)
        self._canvas = FigureCanvasAgg(self._figure)
        axes = self._figure.add_subplot()
        axes.set_xlim(-1.3, 1.3)
        axes.set_ylim(-1.3, 1.3)
        axes.set_aspect("equal")
        axes.set_xticks([])
        axes.set_yticks([])
        self._rod = axes.plot([], [], color="tab:red", linewidth=8.0, solid_capstyle="round")[0]
        self._torque = axes.plot([], [], color="tab:blue", linewidth=2.0)[0]
        axes.plot([0.0], [0.0], marker="o", color="black")
        self._title = axes.set_title("")

    def draw(self, theta: float, torque: float, time: float) -> np.ndarray:
        """RGB frame `(height, width, 3)` uint8 at angle `theta` rad with `torque` N m at time `time` s."""
        self._rod.set_data([0.0, -math.sin(theta)], [0.0, math.cos(theta)])
        sweep = np.linspace(0.0, 1.5 * math.pi * torque / self._max_torque, 32)
        self._torque.set_data(0.25 * np.cos(sweep + math.pi / 2), 0.25 * np.sin(sweep + math.pi / 2))
        self._title.set_text(f"t = {time:5.2f} s   theta = {math.degrees(theta):6.1f} deg")
        self._canvas.draw()
        return np.asarray(self._canvas.buffer_rgba())[..., :3].copy()
