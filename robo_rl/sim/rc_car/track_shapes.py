"""The center lines of the bundled tracks as smooth closed curves, and the CSV writer that stored them.

`tracks/oval.csv`, `tracks/kidney.csv` and `tracks/technical.csv` hold `SHAPES[name]()` sampled at
`SAMPLES` points (a test checks that they still match). Every shape runs counter-clockwise, starts on its
right-most part, and has a smallest radius of curvature above half its width.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path

import numpy as np

SAMPLES = 1000
"""Points per stored center line (about 3-4 cm apart)."""
CSV_HEADER = "x_m,y_m,width_m"
"""First line of a track CSV file: center-line x, y and track width, all in m."""


def oval(samples: int = SAMPLES) -> tuple[np.ndarray, np.ndarray]:
    """A stadium: two 8 m straights joined by half circles of radius 2.5 m; 1.6 m wide, 31.7 m long."""
    straight, radius = 8.0, 2.5
    length = 2 * straight + 2 * math.pi * radius
    s = np.linspace(0.0, length, samples, endpoint=False)
    points = np.stack([_stadium_point(value, straight, radius) for value in s])
    return points, np.full(samples, 1.6)


def _stadium_point(s: float, straight: float, radius: float) -> np.ndarray:
    """Point at arc length s of a stadium centred at the origin, starting mid-way up its right half circle."""
    arc = math.pi * radius
    quarter = arc / 2
    legs = (
        (quarter, lambda u: (straight / 2 + radius * math.cos(u / radius), radius * math.sin(u / radius))),
        (straight, lambda u: (straight / 2 - u, radius)),
        (arc, lambda u: (-straight / 2 - radius * math.sin(u / radius), radius * math.cos(u / radius))),
        (straight, lambda u: (-straight / 2 + u, -radius)),
        (quarter, lambda u: (straight / 2 + radius * math.sin(u / radius), -radius * math.cos(u / radius))),
    )
    for leg_length, point in legs:
        if s <= leg_length:
            return np.array(point(s))
        s -= leg_length
    return np.array(legs[-1][1](legs[-1][0]))


def kidney(samples: int = SAMPLES) -> tuple[np.ndarray, np.ndarray]:
    """A bean: an ellipse-like loop with a dent in its top side (a left-right-left sequence); 1.4 m wide,
    33.6 m long, smallest radius 1.4 m."""
    return _polar(lambda t: 5.0 * (1 - 0.55 * _bump(t, math.pi / 2, 3.0)), (1.3, 1.0), samples), np.full(samples, 1.4)


def technical(samples: int = SAMPLES) -> tuple[np.ndarray, np.ndarray]:
    """A circuit of four dents (chicanes and a tight S) between fast bends; 1.2 m wide, 40.3 m long, smallest
    radius 0.79 m (close to the car's turning radius)."""

    def radius(t: np.ndarray) -> np.ndarray:
        dents = 0.55 * _bump(t, math.pi / 2, 5.0) + 0.35 * _bump(t, 4.2, 10.0)
        dents += 0.2 * _bump(t, 5.9, 25.0) + 0.15 * _bump(t, 3.0, 12.0)
        return 6.0 * (1 - dents)

    return _polar(radius, (1.3, 1.0), samples), np.full(samples, 1.2)


SHAPES: dict[str, Callable[[], tuple[np.ndarray, np.ndarray]]] = {
    "kidney": kidney,
    "oval": oval,
    "technical": technical,
}
"""Bundled track name to its shape function."""


def _bump(t: np.ndarray, centre: float, sharpness: float) -> np.ndarray:
    """Periodic bump of height 1 at angle `centre` (a von Mises profile), narrower for larger `sharpness`."""
    return np.exp(sharpness * (np.cos(t - centre) - 1.0))


def _polar(radius: Callable[[np.ndarray], np.ndarray], stretch: tuple[float, float], samples: int) -> np.ndarray:
    """`(samples, 2)` points of the polar curve r(t), stretched along x and y, at equal angles from t = 0."""
    t = np.linspace(0.0, 2 * math.pi, samples, endpoint=False)
    r = radius(t)
    return np.stack((stretch[0] * r * np.cos(t), stretch[1] * r * np.sin(t)), axis=1)


def write_track_csv(path: str | Path, points: np.ndarray, widths: np.ndarray, comment: str = "") -> None:
    """Write a center line `(M, 2)` and widths `(M,)` in m as a track CSV (`CSV_HEADER`, 5 decimals); `comment`
    lines go first, prefixed with '#'."""
    lines = [f"# {line}" for line in comment.splitlines()] + [CSV_HEADER]
    lines += [f"{x:.5f},{y:.5f},{w:.5f}" for (x, y), w in zip(points, widths, strict=True)]
    Path(path).write_text("\n".join(lines) + "\n")
