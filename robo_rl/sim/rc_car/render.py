"""Top-down drawing of a race track and one car with matplotlib's Agg backend (headless, no pyplot)."""

from __future__ import annotations

import math

import numpy as np
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.patches import Polygon

from robo_rl.sim.rc_car.params import CarParams
from robo_rl.sim.rc_car.track import Track

FRAME_SIZE = (640, 480)
"""Width and height of every frame in pixels."""
_DPI = 100
_MARGIN = 1.0  # m of ground shown around the track


class RaceRenderer:
    """Draws `track` once and moves a car-shaped polygon (an arrow pointing forward) over it for each frame."""

    def __init__(self, track: Track, params: CarParams, size: tuple[int, int] = FRAME_SIZE) -> None:
        width, height = size
        self.figure = Figure(figsize=(width / _DPI, height / _DPI), dpi=_DPI, facecolor="#3a7d44")
        self.canvas = FigureCanvasAgg(self.figure)
        axes = self.figure.add_axes((0.0, 0.0, 1.0, 1.0))
        axes.set_axis_off()
        self._draw_track(axes, track)
        self._outline = _car_outline(params.length, params.width)
        self._car = Polygon(self._outline, closed=True, facecolor="#d62728", edgecolor="black", linewidth=0.5)
        axes.add_patch(self._car)
        self._label = axes.text(0.01, 0.99, "", transform=axes.transAxes, va="top", ha="left", color="white")
        self._fit(axes, track, width / height)

    def draw(self, x: float, y: float, yaw: float, label: str = "") -> np.ndarray:
        """RGB frame `(height, width, 3)` uint8 with the car's CoG at (x, y) m heading `yaw` rad."""
        cos, sin = math.cos(yaw), math.sin(yaw)
        rotation = np.array([[cos, sin], [-sin, cos]])
        self._car.set_xy(self._outline @ rotation + np.array([x, y]))
        self._label.set_text(label)
        self.canvas.draw()
        return np.asarray(self.canvas.buffer_rgba())[..., :3].copy()

    @staticmethod
    def _draw_track(axes: Axes, track: Track) -> None:
        left, right = track.borders()
        surface = np.concatenate((left, left[:1], right[::-1], right[-1:]))
        # Even-odd filling of the ring between the two closed borders.
        axes.fill(surface[:, 0], surface[:, 1], facecolor="#808080", edgecolor="none")
        for border in (left, right):
            closed = np.concatenate((border, border[:1]))
            axes.plot(closed[:, 0], closed[:, 1], color="white", linewidth=1.5)
        center = track.points.double().cpu().numpy()
        center = np.concatenate((center, center[:1]))
        axes.plot(center[:, 0], center[:, 1], color="#d0d0d0", linewidth=0.6, linestyle="--")
        start = center[0]
        axes.plot(*start, marker="|", markersize=12, color="black")

    @staticmethod
    def _fit(axes: Axes, track: Track, aspect: float) -> None:
        """Show the whole track, centred, with equal scales on both axes in a frame of width/height `aspect`."""
        left, right = track.borders()
        both = np.concatenate((left, right))
        low, high = both.min(axis=0) - _MARGIN, both.max(axis=0) + _MARGIN
        centre, span = (low + high) / 2, high - low
        half_width = max(span[0], span[1] * aspect) / 2
        half_height = half_width / aspect
        axes.set_xlim(centre[0] - half_width, centre[0] + half_width)
        axes.set_ylim(centre[1] - half_height, centre[1] + half_height)


def _car_outline(length: float, width: float) -> np.ndarray:
    """`(5, 2)` body-frame outline in m: a rectangle whose front is a point, so the heading shows."""
    back, front, side = -length / 2, length / 2, width / 2
    nose = front - 0.3 * length
    return np.array([[back, -side], [nose, -side], [front, 0.0], [nose, side], [back, side]])
