"""Camera frames → a policy's image inputs (robo_rl.real.images), checked against hand-worked tiny images."""

from __future__ import annotations

import io
from types import SimpleNamespace

import numpy as np
import pytest
from PIL import Image

from robo_rl.image_spec import ImageSpec
from robo_rl.real.fault import InputError
from robo_rl.real.images import (
    FrameDecoder,
    FrameSettings,
    centre_box,
    decode_compressed,
    decode_raw,
    prepare,
    resize,
    resize_weights,
    to_channels,
)

# A 4x4 grey frame chosen so that the means of its 2x2 blocks, 4, 12, 100 and 200, are integers.
GREY_4X4 = np.array(
    [
        [0, 4, 8, 12],
        [4, 8, 12, 16],
        [100, 100, 200, 200],
        [100, 100, 200, 200],
    ],
    dtype=np.uint8,
)[:, :, None]


def test_rgb8_with_padded_rows_drops_the_padding() -> None:
    # 2 x 2 RGB, rows padded from 6 to 8 bytes with 255s that must not show up anywhere.
    data = bytes([1, 2, 3, 4, 5, 6, 255, 255, 7, 8, 9, 10, 11, 12, 255, 255])
    pixels = decode_raw("rgb8", 2, 2, 8, data)
    assert pixels.shape == (2, 2, 3)
    assert pixels.tolist() == [[[1, 2, 3], [4, 5, 6]], [[7, 8, 9], [10, 11, 12]]]


def test_bgr_and_alpha_encodings_become_rgb() -> None:
    bgr = decode_raw("bgr8", 1, 2, 6, bytes([3, 2, 1, 6, 5, 4]))
    bgra = decode_raw("bgra8", 1, 2, 8, bytes([3, 2, 1, 99, 6, 5, 4, 99]))
    rgba = decode_raw("rgba8", 1, 2, 8, bytes([1, 2, 3, 99, 4, 5, 6, 99]))
    for pixels in (bgr, bgra, rgba):
        assert pixels.tolist() == [[[1, 2, 3], [4, 5, 6]]]
    mono = decode_raw("mono8", 2, 1, 4, bytes([7, 0, 0, 0, 9, 0, 0, 0]))
    assert mono.tolist() == [[[7]], [[9]]]


def test_unknown_encodings_and_short_data_are_refused_naming_the_problem() -> None:
    with pytest.raises(InputError, match=r"image encoding '16UC1' is not read \(known: rgb8, bgr8"):
        decode_raw("16UC1", 1, 1, 2, bytes(2))
    with pytest.raises(InputError, match=r"rgb8 image 2x2, step 6: 11 bytes, expected 12"):
        decode_raw("rgb8", 2, 2, 6, bytes(11))
    with pytest.raises(InputError, match=r"step 5: rows need 6 bytes"):
        decode_raw("rgb8", 2, 2, 5, bytes(10))


def test_grey_from_rgb_is_pillows_luma_and_grey_never_feeds_an_rgb_input() -> None:
    rgb = np.array([[[255, 0, 0], [0, 255, 0], [0, 0, 255], [10, 200, 30]]], dtype=np.uint8)
    expected = np.asarray(Image.fromarray(rgb).convert("L"))[:, :, None]
    np.testing.assert_array_equal(to_channels(rgb, 1), expected)
    assert to_channels(rgb, 1)[0, :3, 0].tolist() == [76, 150, 29]
    with pytest.raises(InputError, match="a 1-channel frame cannot feed a 3-channel camera input"):
        to_channels(rgb[:, :, :1], 3)


def test_area_resize_of_a_4x4_is_the_mean_of_each_2x2_block() -> None:
    out = resize(GREY_4X4, 2, 2, "area")
    assert out[:, :, 0].tolist() == [[4, 12], [100, 200]]


def test_area_resize_by_a_non_integer_factor_weighs_the_covered_fractions() -> None:
    # 3 -> 2 columns: output 0 covers column 0 and half of column 1, output 1 the other half and column 2.
    row = np.array([[[30], [90], [150]]], dtype=np.uint8)
    assert resize(row, 1, 2, "area")[0, :, 0].tolist() == [50, 130]  # (30 + 45) / 1.5, (45 + 150) / 1.5


def test_bilinear_resize_uses_half_pixel_centres() -> None:
    # 4 -> 2: output centres at input 0.5 and 2.5, so each is the mean of two neighbours; 2 -> 4: edges clamp.
    row = np.array([[[0], [40], [80], [120]]], dtype=np.uint8)
    assert resize(row, 1, 2, "bilinear")[0, :, 0].tolist() == [20, 100]
    small = np.array([[[0], [100]]], dtype=np.uint8)
    assert resize(small, 1, 4, "bilinear")[0, :, 0].tolist() == [0, 25, 75, 100]


def test_centre_crop_keeps_the_specs_aspect_ratio() -> None:
    square = ImageSpec("wrist", 2, 2, 1)
    assert centre_box(480, 640, square) == (80, 0, 480, 480)
    assert centre_box(640, 480, square) == (0, 80, 480, 480)
    assert centre_box(480, 640, ImageSpec("wide", 3, 4, 1)) == (0, 0, 640, 480)


def test_prepare_crops_then_resizes_to_the_spec() -> None:
    # An 4x6 grey frame: a centred 4x4 crop (columns 1..4) is GREY_4X4, which area-resizes to the block means.
    frame = np.full((4, 6, 1), 255, dtype=np.uint8)
    frame[:, 1:5] = GREY_4X4
    spec = ImageSpec("wrist", 2, 2, 1)
    out = prepare(frame, spec, FrameSettings())
    assert out.shape == (2, 2, 1) and out.dtype == np.uint8 and out.flags.c_contiguous
    assert out[:, :, 0].tolist() == [[4, 12], [100, 200]]
    # A configured box: the bottom-right 2x2 of the 4x4 (columns 3..4 of the frame, rows 2..3), kept as it is.
    boxed = prepare(frame, spec, FrameSettings(crop=(3, 2, 2, 2)))
    assert boxed[:, :, 0].tolist() == [[200, 200], [200, 200]]
    with pytest.raises(InputError, match=r"crop box 4x4 at \(3, 2\) does not fit the 6x4 frame"):
        prepare(frame, spec, FrameSettings(crop=(3, 2, 4, 4)))


def test_frame_settings_refuse_bad_values() -> None:
    with pytest.raises(ValueError, match="resize must be one of"):
        FrameSettings(resize="cubic")
    with pytest.raises(ValueError, match="crop"):
        FrameSettings(crop=(0, 0, 0, 4))


def _encoded(pixels: np.ndarray, fmt: str, **options: int) -> bytes:
    buffer = io.BytesIO()
    Image.fromarray(pixels.squeeze(-1) if pixels.shape[-1] == 1 else pixels).save(buffer, format=fmt, **options)
    return buffer.getvalue()


def test_png_round_trip_is_exact_and_grey_png_stays_grey() -> None:
    rng = np.random.default_rng(0)
    rgb = rng.integers(0, 256, size=(5, 7, 3), dtype=np.uint8)
    np.testing.assert_array_equal(decode_compressed("png", _encoded(rgb, "PNG")), rgb)
    grey = rgb[:, :, :1].copy()
    np.testing.assert_array_equal(decode_compressed("mono8; png compressed ", _encoded(grey, "PNG")), grey)


def test_jpeg_round_trip_is_close() -> None:
    # A smooth gradient: JPEG at quality 95 without chroma subsampling is within a few levels of it, and the
    # decoded pixels are Pillow's own.
    y, x = np.mgrid[0:16, 0:16]
    rgb = np.stack([x * 15, y * 15, (x + y) * 7], axis=-1).astype(np.uint8)
    encoded = _encoded(rgb, "JPEG", quality=95, subsampling=0)
    decoded = decode_compressed("rgb8; jpeg compressed bgr8", encoded)
    assert decoded.shape == rgb.shape
    assert np.abs(decoded.astype(int) - rgb.astype(int)).max() <= 6
    np.testing.assert_array_equal(decoded, np.asarray(Image.open(io.BytesIO(encoded)).convert("RGB")))


def test_compressed_frames_of_unknown_format_or_bad_bytes_are_refused() -> None:
    with pytest.raises(InputError, match=r"format 'tiff' is not read \(known: jpeg, png\)"):
        decode_compressed("tiff", b"II*\x00")
    with pytest.raises(InputError, match=r"compressed image \(png\): not decodable as PNG"):
        decode_compressed("png", b"not a png")
    # A PNG sent with format "jpeg" is not decoded as something it does not claim to be.
    with pytest.raises(InputError, match="not decodable as JPEG"):
        decode_compressed("jpeg", _encoded(np.zeros((2, 2, 3), dtype=np.uint8), "PNG"))


def test_frame_decoder_reads_raw_and_compressed_messages_by_attribute() -> None:
    spec = ImageSpec("wrist", 2, 2, 1)
    raw = FrameDecoder(spec, FrameSettings(), compressed=False)
    message = SimpleNamespace(encoding="mono8", height=4, width=4, step=4, data=GREY_4X4.tobytes())
    assert raw(message)[:, :, 0].tolist() == [[4, 12], [100, 200]]
    assert raw.camera == "wrist"
    compressed = FrameDecoder(spec, FrameSettings(), compressed=True)
    png = SimpleNamespace(format="png", data=_encoded(GREY_4X4, "PNG"))
    assert compressed(png)[:, :, 0].tolist() == [[4, 12], [100, 200]]


@pytest.mark.parametrize("method", ["area", "bilinear"])
@pytest.mark.parametrize(("size_in", "size_out"), [(480, 64), (480, 128), (45, 64), (7, 3)])
def test_the_banded_resize_is_the_dense_weighted_sum(method: str, size_in: int, size_out: int) -> None:
    # The band reads only the inputs each output covers; the dense product of the weights (float64) is the reference.
    pixels = np.random.default_rng(size_in).integers(0, 256, size=(size_in, size_in + 5, 3), dtype=np.uint8)
    rows = resize_weights(size_in, size_out, method).astype(np.float64)
    columns = resize_weights(size_in + 5, size_out, method).astype(np.float64)
    dense = np.einsum("ij,jkc,lk->ilc", rows, pixels.astype(np.float64), columns, optimize=True)  # two products
    reference = np.clip(np.rint(dense), 0, 255)
    assert np.abs(resize(pixels, size_out, size_out, method).astype(int) - reference).max() <= 1
    np.testing.assert_allclose(rows.sum(axis=1), 1.0, atol=1e-6)
