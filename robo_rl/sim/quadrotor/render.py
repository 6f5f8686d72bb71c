"""Headless 3-D drawing of one quadrotor with matplotlib's Agg backend (for `robo-rl play` videos)."""

from __future__ import annotations

from collections import deque

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

_CORNERS = np.array([[1.0, 1.0, 0.0], [1.0, -1.0, 0.0], [-1.0, -1.0, 0.0], [-1.0, 1.0, 0.0]]) / np.sqrt(2.0)


class QuadrotorRenderer:
    """Draws the body (two crossed arms in blue, the body x axis in red, the thrust axis in green), the reference
    point and the recent path of one quadrotor in a fixed 3-D box; returns RGB frames of a constant size.

    The body is drawn with an arm length of at least 6 % of the box width so that a 5 cm Crazyflie stays visible
    in a 2 m box; positions and the path are to scale.
    """

    def __init__(
        self,
        arm_length: float,
        center: tuple[float, float, float],
        half_width: float,
        size: tuple[int, int] = (480, 480),
        trail_steps: int = 300,
    ) -> None:
        """`center` and `half_width` (m) fix the box shown; `size` is (width, height) in pixels; the path keeps
        the last `trail_steps` drawn positions."""
        if half_width <= 0 or trail_steps < 1 or min(size) < 16:
            raise ValueError(f"QuadrotorRenderer: need half_width > 0, trail_steps >= 1, size >= 16 px, got "
                             f"{half_width}, {trail_steps}, {size}")  # fmt: skip
        self._arm = max(arm_length, 0.12 * half_width)
        self._trail: deque[np.ndarray] = deque(maxlen=trail_steps)
        dpi = 100
        self._figure = Figure(figsize=(size[0] / dpi, size[1] / dpi), dpi=dpi)
        self._canvas = FigureCanvasAgg(self._figure)
        axes = self._figure.add_subplot(projection="3d")
        for axis, c in zip("xyz", center, strict=True):
            getattr(axes, f"set_{axis}lim")(c - half_width, c + half_width)
            getattr(axes, f"set_{axis}label")(f"{axis} (m)")
        axes.set_box_aspect((1.0, 1.0, 1.0))
        self._path = axes.plot([], [], [], color="0.6", linewidth=1.0)[0]
        self._arms = [axes.plot([], [], [], color="tab:blue", linewidth=3.0)[0] for _ in range(2)]
        self._axes = [axes.plot([], [], [], color=color, linewidth=1.5)[0] for color in ("tab:red", "tab:green")]
        self._reference = axes.plot([], [], [], marker="x", color="black", markersize=8, linestyle="none")[0]
        self._title = axes.set_title("")

    def draw(
        self, position: np.ndarray, rotation: np.ndarray, reference: np.ndarray, time: float, new_episode: bool
    ) -> np.ndarray:
        """RGB frame `(height, width, 3)` uint8 of the body at `position` `(3,)` m with body-to-world `rotation`
        `(3, 3)`, the `reference` point `(3,)` m and the episode `time` s; `new_episode` clears the path."""
        if new_episode:
            self._trail.clear()
        self._trail.append(np.asarray(position, dtype=float))
        path = np.array(self._trail)
        self._path.set_data_3d(path[:, 0], path[:, 1], path[:, 2])
        rotation = np.asarray(rotation, dtype=float)
        corners = position + (self._arm * _CORNERS) @ rotation.T
        for line, (a, b) in zip(self._arms, ((0, 2), (1, 3)), strict=True):
            line.set_data_3d(*np.stack((corners[a], corners[b])).T)
        for line, column in zip(self._axes, (0, 2), strict=True):
            line.set_data_3d(*np.stack((position, position + 0.7 * self._arm * rotation[:, column])).T)
        self._reference.set_data_3d([reference[0]], [reference[1]], [reference[2]])
        self._title.set_text(f"t = {time:4.2f} s   error = {np.linalg.norm(position - reference):.3f} m")
        self._canvas.draw()
        return np.asarray(self._canvas.buffer_rgba())[..., :3].copy()
