"""Image specs: validation, the pinhole intrinsics against hand-worked values, and the dict round trip."""

from __future__ import annotations

import math

import pytest

from robo_rl.image_spec import CameraIntrinsics, ImageSpec, check_camera_names


def test_intrinsics_from_a_vertical_field_of_view_match_the_pinhole_formula() -> None:
    # Worked by hand: a 90 degree vertical view over 64 rows puts the focal length at 32 / tan(45 deg) = 32 px;
    # OpenCV's K for that camera is [[32, 0, cx], [0, 32, cy], [0, 0, 1]] with cx = W/2, cy = H/2.
    k = CameraIntrinsics.from_fovy(90.0, height=64, width=96)
    assert (k.fx, k.fy, k.cx, k.cy) == pytest.approx((32.0, 32.0, 48.0, 32.0))
    # 60 degrees over 480 rows: 240 / tan(30 deg) = 415.69 px (MuJoCo's default camera on a 640x480 buffer).
    assert CameraIntrinsics.from_fovy(60.0, 480, 640).fy == pytest.approx(240.0 / math.tan(math.radians(30.0)))


def test_resizing_and_cropping_move_the_intrinsics_with_the_pixels() -> None:
    k = CameraIntrinsics.from_fovy(90.0, 128, 128)
    half = k.scaled(0.5, 0.5)
    assert (half.fx, half.cx) == pytest.approx((32.0, 32.0))
    assert k.cropped(left=16, top=8).cx == pytest.approx(48.0) and k.cropped(16, 8).cy == pytest.approx(56.0)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"name": "state", "height": 8, "width": 8}, "other than 'state'"),
        ({"name": "wrist cam", "height": 8, "width": 8}, "identifier"),
        ({"name": "wrist", "height": 0, "width": 8}, "height must be a positive integer"),
        ({"name": "wrist", "height": 8, "width": 8.0}, "width must be a positive integer"),
        ({"name": "wrist", "height": 8, "width": 8, "channels": 4}, "channels must be one of"),
    ],
)
def test_bad_specs_are_refused_with_the_field_named(kwargs: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        ImageSpec(**kwargs)


def test_a_spec_survives_its_dict_and_a_foreign_layout_is_refused() -> None:
    spec = ImageSpec("wrist", 64, 96, 3, CameraIntrinsics.from_fovy(58.0, 64, 96))
    data = spec.to_dict()
    assert data["dtype"] == "uint8" and data["layout"] == "HWC"
    assert ImageSpec.from_dict(data) == spec
    assert spec.shape == (64, 96, 3)
    with pytest.raises(ValueError, match="layout must be 'HWC'"):
        ImageSpec.from_dict({**data, "layout": "CHW"})
    with pytest.raises(ValueError, match="unknown fields"):
        ImageSpec.from_dict({**data, "encoding": "bgr8"})


def test_camera_names_must_be_unique() -> None:
    with pytest.raises(ValueError, match="repeated"):
        check_camera_names((ImageSpec("front", 8, 8), ImageSpec("front", 16, 16)))
