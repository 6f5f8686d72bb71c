"""Closed race tracks: a center line with a width, loaded from CSV, and batched projection of cars onto it.

Track CSV format (`tracks/*.csv` are the bundled ones): an optional block of comment lines starting with '#',
the header line `x_m,y_m,width_m`, then one row per center-line point: its world x and y and the full track
width there, all in m. The points run in driving direction and close on themselves (the last point connects to
the first; a last row repeating the first point is dropped). The center line is resampled by arc length to
equal segments of at most `spacing` m, so the file may be dense or sparse (the corners of a sparse polyline
are cut by at most one segment).

Positions along the track are arc lengths `s` in [0, length) m from the first point. The lateral offset of a
position is positive to the left of the center line (in driving direction).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import NamedTuple

import numpy as np
import torch

from robo_rl.sim.bundled import bundled_names, load_bundled
from robo_rl.sim.rc_car.track_shapes import CSV_HEADER

TRACKS_PACKAGE = "robo_rl.sim.rc_car"
TRACKS_FOLDER = "tracks"
"""The bundled track CSV files are package data in `TRACKS_PACKAGE`/`TRACKS_FOLDER`."""
DEFAULT_SPACING = 0.1
"""Target length in m of the segments the center line is resampled to."""
PROJECTION_STEPS = 3
PROJECTION_JUMP = 4
"""`Track.project` with a hint walks at most `PROJECTION_STEPS` times `PROJECTION_JUMP` segments from it."""


class TrackProjection(NamedTuple):
    """Where positions lie relative to the center line; every field has the batch shape of the positions."""

    s: torch.Tensor
    """Arc length of the closest center-line point in m, in [0, length)."""
    lateral_offset: torch.Tensor
    """Signed distance from the center line in m, positive to the left."""
    heading: torch.Tensor
    """Direction of the center line there in rad (world frame, from +x, counter-clockwise)."""
    half_width: torch.Tensor
    """Half the track width there in m: the position is on the track while |lateral_offset| <= half_width."""
    segment: torch.Tensor
    """Index (long) of the closest segment, a hint for the next projection."""


class Track:
    """A closed center line with a width, resampled to segments of about `spacing` m, as tensors on `device`.

    Arc lengths are those of the given polyline: the resampled points lie at equal arc-length steps
    `segment_length` along it, and positions between two of them are interpolated linearly. (In a bend a
    segment's chord is shorter than its arc, by 0.07 % at 0.1 m segments and 0.8 m radius.)

    Args:
        points: `(M, 2)` center-line points in driving order, in m (M >= 3 distinct points).
        widths: `(M,)` full track width at each point in m (> 0).
        name: for messages and drawings.
        spacing: target segment length in m after resampling.
        device, dtype: where and how the tensors of the track are held (positions given to it must match).
    """

    def __init__(
        self,
        points: np.ndarray,
        widths: np.ndarray,
        name: str = "track",
        spacing: float = DEFAULT_SPACING,
        device: torch.device | str = "cpu",
        dtype: torch.dtype = torch.float32,
    ) -> None:
        points, widths = _validated(np.asarray(points, dtype=np.float64), np.asarray(widths, dtype=np.float64), name)
        if not spacing > 0:
            raise ValueError(f"track {name!r}: spacing must be positive, got {spacing}")
        length = float(np.linalg.norm(np.roll(points, -1, axis=0) - points, axis=1).sum())
        points, widths = resample(points, widths, spacing)
        check_clearance(points, widths, name)
        self.name = name
        self.device = torch.device(device)
        self.dtype = dtype
        self._build(points, widths, length)

    def _build(self, points: np.ndarray, widths: np.ndarray, length: float) -> None:
        count = len(points)
        segments = np.roll(points, -1, axis=0) - points
        chord = np.linalg.norm(segments, axis=1)
        # Vertex tangent: direction of the chord through both neighbours (a smooth heading along the track).
        through = np.roll(points, -1, axis=0) - np.roll(points, 1, axis=0)
        tangents = np.arctan2(through[:, 1], through[:, 0])
        headings = np.arctan2(segments[:, 1], segments[:, 0])
        self.length = length
        """Length of the center line in m."""
        self.num_points = count
        self.segment_length = length / count
        """Arc length of every segment in m (positions along a segment are interpolated linearly)."""

        def tensor(values: np.ndarray) -> torch.Tensor:
            return torch.as_tensor(values, device=self.device, dtype=self.dtype)

        self.points = tensor(points)
        """`(M, 2)` resampled center-line points in m."""
        self.widths = tensor(widths)
        """`(M,)` track width at each point in m."""
        turn = _wrap_np(headings - np.roll(headings, 1))
        self.curvature = tensor(turn / (0.5 * (chord + np.roll(chord, 1))))
        """`(M,)` signed curvature of the center line at each point in 1/m (positive: turning left)."""
        # Per-segment rows gathered by segment index (one index_select per lookup, rows contiguous):
        # start x, y, segment x, y, 1 / chord^2 | start tangent, tangent change, start width, width change.
        self._table = tensor(
            np.stack(
                (
                    points[:, 0],
                    points[:, 1],
                    segments[:, 0],
                    segments[:, 1],
                    1.0 / chord**2,
                    tangents,
                    _wrap_np(np.roll(tangents, -1) - tangents),
                    widths,
                    np.roll(widths, -1) - widths,
                )
            )
        )

    @property
    def segment_table(self) -> torch.Tensor:
        """`(9, M)` per-segment rows: start x, y, segment x, y, 1 / chord^2, start tangent, tangent change, start
        width, width change (what the lookups here and the numba race kernel read)."""
        return self._table

    # ---------------------------------------------------------------------------------------------- along s

    def wrap(self, s: torch.Tensor) -> torch.Tensor:
        """Arc lengths wrapped to [0, length)."""
        return torch.remainder(s, self.length)

    def locate(self, s: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(segment index (long), fraction in [0, 1)) of arc lengths `s` (any shape, wrapped first)."""
        u = self.wrap(s) * (1.0 / self.segment_length)
        index = u.floor()
        return index.long().clamp_(0, self.num_points - 1), u - index

    def point_at(self, s: torch.Tensor) -> torch.Tensor:
        """Center-line points `(*s.shape, 2)` in m at arc lengths `s`."""
        index, fraction = self.locate(s)
        x, y, dx, dy = self._rows(index, 0, 4)
        return torch.stack((x + fraction * dx, y + fraction * dy), dim=-1)

    def heading_at(self, s: torch.Tensor) -> torch.Tensor:
        """Center-line direction in rad at arc lengths `s` (interpolated between vertex tangents)."""
        index, fraction = self.locate(s)
        tangent, change, _, _ = self._rows(index, 5, 9)
        return _wrap(tangent + fraction * change)

    def half_width_at(self, s: torch.Tensor) -> torch.Tensor:
        """Half the track width in m at arc lengths `s`."""
        index, fraction = self.locate(s)
        _, _, width, change = self._rows(index, 5, 9)
        return 0.5 * (width + fraction * change)

    def curvature_at(self, s: torch.Tensor) -> torch.Tensor:
        """Signed center-line curvature in 1/m at arc lengths `s` (of the vertex at the start of their segment)."""
        index = self.locate(s)[0]
        return self.curvature.index_select(0, index.reshape(-1)).reshape(index.shape)

    def progress(self, s_from: torch.Tensor, s_to: torch.Tensor) -> torch.Tensor:
        """Signed distance in m driven along the track from `s_from` to `s_to`, the shorter way round (in
        [-length/2, length/2)): crossing the start line forward counts as a small positive step."""
        half = 0.5 * self.length
        return torch.remainder(s_to - s_from + half, self.length) - half

    def _rows(self, index: torch.Tensor, first: int, last: int) -> list[torch.Tensor]:
        """Rows `first:last` of the segment table at `index` (any shape), each shaped like `index`."""
        values = self._table[first:last].index_select(1, index.reshape(-1))
        return [row.reshape(index.shape) for row in values]

    # ----------------------------------------------------------------------------------------- projection

    def project(self, positions: torch.Tensor, hint: torch.Tensor | None = None) -> TrackProjection:
        """Closest center-line point of each position `(N, 2)` in m.

        Without `hint` every segment is searched (N x M work). With `hint` `(N,)`, each position's segment from
        the previous call, the search walks from there along the center line, `PROJECTION_STEPS` times at most
        `PROJECTION_JUMP` segments: fast, and a car never jumps to a nearby but distant part of the track (e.g.
        across a hairpin). It finds the closest point while the car moved less than about 1 m since.
        """
        x, y = positions[:, 0], positions[:, 1]
        index = self._closest_segment(x, y) if hint is None else self._walk(x, y, hint)
        sx, sy, dx, dy, inv_squared = self._rows(index, 0, 5)
        rx, ry = x - sx, y - sy
        fraction = ((rx * dx + ry * dy) * inv_squared).clamp(0.0, 1.0)
        gap_x, gap_y = rx - fraction * dx, ry - fraction * dy
        side = torch.where(dx * ry - dy * rx >= 0, 1.0, -1.0)
        offset = side * (gap_x.square() + gap_y.square()).sqrt()
        tangent, change, width, width_change = self._rows(index, 5, 9)
        heading = _wrap(tangent + fraction * change)
        s = (index.to(self.dtype) + fraction) * self.segment_length
        return TrackProjection(self.wrap(s), offset, heading, 0.5 * (width + fraction * width_change), index)

    def _walk(self, x: torch.Tensor, y: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
        """Segment `(N,)` reached by moving from `index` by the (clamped) number of segments the projection
        onto the current one lies ahead or behind, `PROJECTION_STEPS` times."""
        for _ in range(PROJECTION_STEPS):
            sx, sy, dx, dy, inv_squared = self._rows(index, 0, 5)
            along = ((x - sx) * dx + (y - sy) * dy) * inv_squared
            index = torch.remainder(
                index + along.floor().clamp(-PROJECTION_JUMP, PROJECTION_JUMP).long(), self.num_points
            )
        return index

    def _closest_segment(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        """Index `(N,)` of the segment closest to each position, searching all segments."""
        sx, sy, dx, dy, inv_squared = (row.unsqueeze(0) for row in self._table[:5])
        rx, ry = x.unsqueeze(-1) - sx, y.unsqueeze(-1) - sy
        fraction = ((rx * dx + ry * dy) * inv_squared).clamp(0.0, 1.0)
        return ((rx - fraction * dx).square() + (ry - fraction * dy).square()).argmin(dim=1)

    # ------------------------------------------------------------------------------------------ drawing

    def borders(self) -> tuple[np.ndarray, np.ndarray]:
        """(left, right) border polylines `(M, 2)` in m as numpy arrays (closed: the last joins the first)."""
        points = self.points.double().cpu().numpy()
        tangent = self._table[5].double().cpu().numpy()
        normal = np.stack((-np.sin(tangent), np.cos(tangent)), axis=1)
        half = 0.5 * self.widths.double().cpu().numpy()[:, None]
        return points + half * normal, points - half * normal


def _wrap(angle: torch.Tensor) -> torch.Tensor:
    return torch.remainder(angle + math.pi, 2 * math.pi) - math.pi


def _wrap_np(angle: np.ndarray) -> np.ndarray:
    return np.remainder(angle + math.pi, 2 * math.pi) - math.pi


def _validated(points: np.ndarray, widths: np.ndarray, name: str) -> tuple[np.ndarray, np.ndarray]:
    """The closed center line without a repeated closing point; ValueError naming the track if unusable."""
    if points.ndim != 2 or points.shape[1] != 2 or widths.shape != (len(points),):
        raise ValueError(f"track {name!r}: need points (M, 2) and widths (M,), got {points.shape} and {widths.shape}")
    if not (np.isfinite(points).all() and np.isfinite(widths).all()):
        raise ValueError(f"track {name!r}: points and widths must be finite")
    if (widths <= 0).any():
        raise ValueError(f"track {name!r}: widths must be positive, got {widths.min()} at point {widths.argmin()}")
    if len(points) > 1 and np.array_equal(points[0], points[-1]):
        points, widths = points[:-1], widths[:-1]
    repeated = np.flatnonzero(np.all(np.roll(points, -1, axis=0) == points, axis=1))
    if len(repeated):
        raise ValueError(f"track {name!r}: point {repeated[0] + 1} repeats point {repeated[0]} (zero-length segment)")
    if len(points) < 3:
        raise ValueError(f"track {name!r}: a closed center line needs at least 3 distinct points, got {len(points)}")
    return points, widths


def resample(points: np.ndarray, widths: np.ndarray, spacing: float) -> tuple[np.ndarray, np.ndarray]:
    """A closed polyline `(M, 2)` with widths `(M,)` resampled at equal arc-length steps of at most `spacing`
    (at least 8 points); widths are interpolated linearly along the arc length."""
    closed = np.concatenate((points, points[:1]))
    cumulative = np.concatenate(([0.0], np.cumsum(np.linalg.norm(np.diff(closed, axis=0), axis=1))))
    count = max(8, math.ceil(cumulative[-1] / spacing - 1e-9))
    s = np.linspace(0.0, cumulative[-1], count, endpoint=False)
    x = np.interp(s, cumulative, closed[:, 0])
    y = np.interp(s, cumulative, closed[:, 1])
    w = np.interp(s, cumulative, np.concatenate((widths, widths[:1])))
    return np.stack((x, y), axis=1), w


def check_clearance(points: np.ndarray, widths: np.ndarray, name: str, chunk: int = 512) -> None:
    """ValueError if parts of the track far apart along the center line come closer than their half widths
    added up (overlapping borders, a self-crossing center line, a loop too small for its width); "far apart"
    means more than pi/2 times that sum along the track, so any bend of radius at least half the width passes
    (its chords are at least 2/pi of their arcs)."""
    lengths = np.linalg.norm(np.roll(points, -1, axis=0) - points, axis=1)
    s = np.concatenate(([0.0], np.cumsum(lengths)[:-1]))
    total = lengths.sum()
    half = 0.5 * widths
    for first in range(0, len(points), chunk):
        rows = slice(first, first + chunk)
        distance = np.linalg.norm(points[rows, None] - points[None], axis=2)
        along = np.abs(s[rows, None] - s[None])
        along = np.minimum(along, total - along)
        needed = half[rows, None] + half[None]
        clash = (along > 0.5 * math.pi * needed) & (distance < needed - 1e-9)
        if clash.any():
            i, j = np.argwhere(clash)[0]
            a, b = points[first + i], points[j]
            raise ValueError(
                f"track {name!r}: the track overlaps itself near ({a[0]:.2f}, {a[1]:.2f}) and ({b[0]:.2f}, "
                f"{b[1]:.2f}) m: {distance[i, j]:.2f} m apart, closer than the half widths {needed[i, j]:.2f} m"
            )


# ------------------------------------------------------------------------------------------------- loading


def track_names() -> list[str]:
    """Names of the bundled tracks, usable as `load_track(name)`."""
    return bundled_names(TRACKS_PACKAGE, TRACKS_FOLDER, ".csv")


def load_track(
    track: str | Path,
    spacing: float = DEFAULT_SPACING,
    device: torch.device | str = "cpu",
    dtype: torch.dtype = torch.float32,
) -> Track:
    """A bundled track by name (e.g. "oval", see `track_names`) or a track CSV file by path (format in the module
    docstring). Unknown names, unreadable files and malformed or unusable content raise ValueError (FileNotFound
    for a missing file) naming the file and, where it applies, the line."""

    def read(path: Path) -> Track:
        points, widths = read_track_csv(path)
        return Track(points, widths, path.stem, spacing, device, dtype)

    return load_bundled(track, TRACKS_PACKAGE, TRACKS_FOLDER, (".csv",), "track", read)


def read_track_csv(path: str | Path) -> tuple[np.ndarray, np.ndarray]:
    """(points `(M, 2)`, widths `(M,)`) in m from a track CSV file; ValueError naming the file and line."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"track file {str(path)!r} does not exist")
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as err:
        raise ValueError(f"{path}: not a track CSV (not UTF-8 text: byte {err.start})") from None
    lines = [(number, line.strip()) for number, line in enumerate(text.splitlines(), start=1)]
    lines = [(number, line) for number, line in lines if line and not line.startswith("#")]
    if not lines or lines[0][1].replace(" ", "") != CSV_HEADER:
        found = lines[0][1] if lines else "nothing"
        raise ValueError(f"{path}: expected the header line {CSV_HEADER!r}, found {found!r}")
    rows = [_parse_row(path, number, line) for number, line in lines[1:]]
    if len(rows) < 3:
        raise ValueError(f"{path}: a track needs at least 3 center-line points, got {len(rows)}")
    data = np.array(rows, dtype=np.float64)
    name = str(path)
    return _validated(data[:, :2], data[:, 2], name)


def _parse_row(path: Path, number: int, line: str) -> tuple[float, float, float]:
    cells = line.split(",")
    if len(cells) != 3:
        raise ValueError(f"{path}:{number}: expected 3 values (x_m, y_m, width_m), got {len(cells)}: {line!r}")
    try:
        x, y, width = (float(cell) for cell in cells)
    except ValueError:
        raise ValueError(f"{path}:{number}: values must be numbers, got {line!r}") from None
    if not all(math.isfinite(v) for v in (x, y, width)):
        raise ValueError(f"{path}:{number}: values must be finite, got {line!r}")
    if width <= 0:
        raise ValueError(f"{path}:{number}: width_m must be positive, got {width}")
    return x, y, width
