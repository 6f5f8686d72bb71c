"""Tracks: projection onto the center line (progress, offset, heading), the bundled CSVs, CSV errors."""

from __future__ import annotations

import math
from importlib import resources
from pathlib import Path

import numpy as np
import pytest
import torch

from robo_rl.sim.rc_car.track import Track, load_track, read_track_csv, track_names
from robo_rl.sim.rc_car.track_shapes import SHAPES, write_track_csv

TRACKS = ["kidney", "oval", "technical"]


def _square(side: float = 4.0, width: float = 1.0, points_per_side: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """A counter-clockwise square center line starting at (0, 0), as a sparse polyline."""
    corners = np.array([[0.0, 0.0], [side, 0.0], [side, side], [0.0, side]])
    fractions = np.arange(points_per_side)[None, :, None] / points_per_side
    points = (corners[:, None] + fractions * (np.roll(corners, -1, axis=0) - corners)[:, None]).reshape(-1, 2)
    return points, np.full(len(points), width)


def test_bundled_tracks_are_package_data_and_match_their_generators() -> None:
    folder = resources.files("robo_rl.sim.rc_car") / "tracks"
    assert sorted(p.name for p in folder.iterdir() if p.name.endswith(".csv")) == [f"{n}.csv" for n in TRACKS]
    assert track_names() == TRACKS == sorted(SHAPES)
    for name in TRACKS:
        with resources.as_file(folder / f"{name}.csv") as path:
            points, widths = read_track_csv(path)
        expected_points, expected_widths = SHAPES[name]()
        np.testing.assert_allclose(points, expected_points, atol=1e-5)
        np.testing.assert_allclose(widths, expected_widths, atol=1e-5)


def test_oval_has_the_length_of_its_straights_and_half_circles() -> None:
    track = load_track("oval")
    assert track.length == pytest.approx(2 * 8.0 + 2 * math.pi * 2.5, rel=1e-4)
    assert track.segment_length <= 0.1
    # On a half circle the curvature is 1 / radius (turning left), on the straights 0.
    # From the middle of the right bend (a quarter circle of 3.93 m): top straight, left bend, bottom straight, bend.
    s = torch.tensor([0.5, 6.0, 15.0, 23.0, 30.0])
    curvature = track.curvature_at(s)
    torch.testing.assert_close(curvature, torch.tensor([0.4, 0.0, 0.4, 0.0, 0.4]), atol=2e-3, rtol=0)


@pytest.mark.parametrize("name", TRACKS)
def test_walking_the_center_line_gives_increasing_progress_zero_offset_and_its_direction(name: str) -> None:
    track = load_track(name, dtype=torch.float64)
    s = 1.0 + torch.linspace(0.0, 2 * track.length, 3001, dtype=torch.float64)[:-1]  # two laps from s = 1 m
    points = track.point_at(s)
    hint = track.locate(s[:1])[0]
    walked, offsets, headings = [], [], []
    for point in points:  # one position at a time, each projection hinted by the previous one
        projection = track.project(point.unsqueeze(0), hint=hint)
        hint = projection.segment
        walked.append(projection.s)
        offsets.append(projection.lateral_offset)
        headings.append(projection.heading)
    walked, offsets = torch.cat(walked), torch.cat(offsets)
    steps = track.progress(walked[:-1], walked[1:])
    torch.testing.assert_close(steps, s.diff(), atol=1e-6, rtol=0)  # progress increases as walked
    assert int((walked.diff() < 0).sum()) == 2  # s wraps back to 0 once per lap
    assert offsets.abs().max() < 1e-9
    direction = points.roll(-1, 0) - points.roll(1, 0)
    expected = torch.atan2(direction[:, 1], direction[:, 0])
    error = torch.remainder(torch.cat(headings) - expected + math.pi, 2 * math.pi) - math.pi
    # The heading is interpolated between vertex tangents, the polyline's direction is constant along a segment:
    # they differ by at most half the turn of a segment.
    assert error[1:-1].abs().max() <= 0.5 * track.curvature.abs().max() * track.segment_length + 1e-3


@pytest.mark.parametrize("name", TRACKS)
def test_points_on_the_borders_have_offsets_of_half_the_width(name: str) -> None:
    track = load_track(name, dtype=torch.float64)
    s = torch.linspace(0.0, track.length, 500, dtype=torch.float64)[:-1]
    heading, half = track.heading_at(s), track.half_width_at(s)
    normal = torch.stack((-torch.sin(heading), torch.cos(heading)), dim=-1)
    for side in (1.0, -1.0):
        border = track.point_at(s) + side * half.unsqueeze(-1) * normal
        hinted = track.project(border, hint=track.locate(s)[0])
        full = track.project(border)
        torch.testing.assert_close(hinted.lateral_offset, side * half, atol=2e-3, rtol=0)
        torch.testing.assert_close(full.lateral_offset, hinted.lateral_offset, atol=1e-9, rtol=0)
        # The normal of the interpolated heading is not quite perpendicular to a segment (at most half a segment's
        # turn): the border point projects a few cm along the track.
        slack = float(half.max() * math.tan(0.5 * track.curvature.abs().max() * track.segment_length)) + 1e-3
        torch.testing.assert_close(track.progress(hinted.s, s), torch.zeros_like(s), atol=slack, rtol=0)


def test_progress_across_the_start_line_is_a_small_forward_step() -> None:
    track = load_track("oval")
    before = torch.tensor([track.length - 0.05])
    after = torch.tensor([0.07])
    torch.testing.assert_close(track.progress(before, after), torch.tensor([0.12]))
    torch.testing.assert_close(track.progress(after, before), torch.tensor([-0.12]))


def test_a_sparse_polyline_is_resampled_and_its_corners_kept_within_one_segment() -> None:
    points, widths = _square(side=4.0, points_per_side=1)
    track = Track(points, widths, "square", spacing=0.1, dtype=torch.float64)
    assert track.length == pytest.approx(16.0) and track.num_points == 160
    projection = track.project(torch.tensor([[2.0, 0.3], [4.2, 2.0], [2.0, 3.9]], dtype=torch.float64))
    torch.testing.assert_close(projection.s, torch.tensor([2.0, 6.0, 10.0], dtype=torch.float64))
    torch.testing.assert_close(projection.lateral_offset, torch.tensor([0.3, -0.2, 0.1], dtype=torch.float64))
    heading = projection.heading
    torch.testing.assert_close(heading.cos(), torch.tensor([1.0, 0.0, -1.0], dtype=torch.float64), atol=1e-12, rtol=0)
    torch.testing.assert_close(heading.sin(), torch.tensor([0.0, 1.0, 0.0], dtype=torch.float64), atol=1e-12, rtol=0)


def test_csv_round_trip_drops_a_repeated_closing_point_and_reads_comments(tmp_path: Path) -> None:
    points, widths = _square(points_per_side=2)
    path = tmp_path / "square.csv"
    closed_points, closed_widths = np.concatenate((points, points[:1])), np.concatenate((widths, widths[:1]))
    write_track_csv(path, closed_points, closed_widths, comment="a test square\ncounter-clockwise")
    assert path.read_text().startswith("# a test square\n# counter-clockwise\nx_m,y_m,width_m\n")
    read_points, read_widths = read_track_csv(path)
    np.testing.assert_allclose(read_points, points)
    np.testing.assert_allclose(read_widths, widths)
    track = load_track(path)
    assert track.name == "square" and track.length == pytest.approx(16.0)


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("x,y,w\n0,0,1\n", "expected the header line 'x_m,y_m,width_m'"),
        ("", "found 'nothing'"),
        ("x_m,y_m,width_m\n0,0,1\n1,0\n", r":3: expected 3 values"),
        ("x_m,y_m,width_m\n0,0,1\n1,zero,1\n2,2,1\n", r":3: values must be numbers"),
        ("x_m,y_m,width_m\n0,0,1\n4,0,nan\n4,4,1\n", r":3: values must be finite"),
        ("x_m,y_m,width_m\n0,0,1\n4,0,-1\n4,4,1\n", r":3: width_m must be positive"),
        ("x_m,y_m,width_m\n0,0,1\n4,0,1\n", "at least 3 center-line points"),
        ("x_m,y_m,width_m\n0,0,1\n4,0,1\n4,0,1\n4,4,1\n", "repeats point"),
        ("x_m,y_m,width_m\n0,0,1\n4,0,1\n0,4,1\n4,4,1\n", "overlaps itself"),  # a bow tie crosses itself
        ("x_m,y_m,width_m\n0,0,5\n4,0,5\n4,4,5\n0,4,5\n", "overlaps itself"),  # too wide for its loop
    ],
)
def test_malformed_track_files_name_file_line_and_problem(tmp_path: Path, content: str, message: str) -> None:
    path = tmp_path / "bad.csv"
    path.write_text(content)
    with pytest.raises(ValueError, match=message) as error:
        load_track(path)
    assert "bad" in str(error.value)


def test_missing_files_and_unknown_names_are_reported(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="does not exist"):
        load_track(tmp_path / "nowhere.csv")
    with pytest.raises(ValueError, match="bundled tracks"):
        load_track("monza")


def test_track_tensors_live_on_the_requested_device_and_dtype() -> None:
    track = load_track("kidney", dtype=torch.float64)
    projection = track.project(torch.zeros(3, 2, dtype=torch.float64))
    assert projection.s.dtype == torch.float64 and projection.segment.dtype == torch.long
    assert track.points.device.type == "cpu"
