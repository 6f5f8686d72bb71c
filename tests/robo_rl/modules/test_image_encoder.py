"""The camera encoder (DrQ's CNN) and random-shift augmentation."""

from __future__ import annotations

import pytest
import torch

from robo_rl.image_spec import ImageSpec
from robo_rl.modules.image_encoder import CameraEncoder, ObservationEncoder, frames_to_float, random_shift


def frames(batch: int, height: int, width: int, channels: int = 3, seed: int = 0) -> torch.Tensor:
    generator = torch.Generator().manual_seed(seed)
    return torch.randint(0, 256, (batch, height, width, channels), generator=generator, dtype=torch.uint8)


def test_frames_become_float_chw_in_the_unit_range() -> None:
    x = frames(2, 5, 7)
    y = frames_to_float(x)
    assert y.shape == (2, 3, 5, 7) and y.dtype == torch.float32
    assert y[1, 2, 4, 6] == pytest.approx(float(x[1, 4, 6, 2]) / 255.0)


@pytest.mark.parametrize("side", [64, 128])
def test_encoders_at_both_benchmark_sizes_end_in_small_maps(side: int) -> None:
    encoder = CameraEncoder(ImageSpec("cam", side, side))
    out = encoder(frames(4, side, side))
    assert out.shape == (4, 50) and out.abs().max() <= 1.0  # LayerNorm then tanh
    assert encoder.head[0].in_features <= 32 * 27 * 27  # the second stride keeps 128x128's head near 64x64's


def test_the_observation_encoder_joins_state_and_cameras_in_spec_order() -> None:
    specs = (ImageSpec("wrist", 32, 32), ImageSpec("fixed", 24, 32, channels=1))
    encoder = ObservationEncoder(5, specs)
    state = torch.randn(3, 5)
    images = {"wrist": frames(3, 32, 32), "fixed": frames(3, 24, 32, 1)}
    out = encoder(state, images)
    assert out.shape == (3, encoder.output_dim) == (3, 5 + 100)
    assert torch.equal(out[:, :5], state)
    assert torch.allclose(out[:, 55:], encoder.cameras["fixed"](images["fixed"]))
    with pytest.raises(ValueError, match="at least one camera"):
        ObservationEncoder(5, ())


def test_random_shift_moves_each_frame_by_at_most_the_pad_and_repeats_the_border() -> None:
    # A frame whose pixel value encodes its column: a shift by s columns reads column c + s, clamped to the edge.
    width, pad = 16, 4
    ramp = torch.arange(width, dtype=torch.uint8).repeat(8, 1)[None, :, :, None].repeat(64, 1, 1, 1)
    shifted = random_shift(ramp, pad, torch.Generator().manual_seed(1))
    assert shifted.dtype == torch.uint8 and shifted.shape == ramp.shape
    offsets = shifted[:, 0, width // 2, 0].long() - width // 2
    assert offsets.abs().max() <= pad and len(set(offsets.tolist())) > 3  # frames get their own shifts
    for frame, offset in zip(shifted, offsets.tolist(), strict=True):
        expected = (torch.arange(width) + offset).clamp(0, width - 1)
        assert torch.equal(frame[3, :, 0].long(), expected)


def test_random_shift_is_reproducible_from_its_generator_and_zero_pad_is_the_identity() -> None:
    x = frames(6, 12, 12)
    a = random_shift(x, 4, torch.Generator().manual_seed(3))
    b = random_shift(x, 4, torch.Generator().manual_seed(3))
    assert torch.equal(a, b) and not torch.equal(a, x)
    assert torch.equal(random_shift(x, 0), x)


def test_the_camera_policy_takes_frames_in_spec_order_and_reads_observation_dicts() -> None:
    from robo_rl.modules.camera_policy import CameraPolicy

    specs = (ImageSpec("wrist", 16, 16), ImageSpec("fixed", 16, 16))
    encoder = ObservationEncoder(2, specs)
    policy = CameraPolicy(encoder, torch.nn.Linear(encoder.output_dim, 1))
    state, wrist, fixed = torch.randn(3, 2), frames(3, 16, 16, seed=1), frames(3, 16, 16, seed=2)
    action = policy(state, wrist, fixed)
    assert torch.equal(action, policy.act({"state": state, "fixed": fixed, "wrist": wrist}))
    assert not torch.allclose(action, policy(state, fixed, wrist))  # the order is the contract
    with pytest.raises(ValueError, match=r"expected 2 camera inputs \['wrist', 'fixed'\], got 1"):
        policy(state, wrist)


def test_drq_strides_follow_the_rule_and_explicit_strides_shrink_the_maps() -> None:
    from robo_rl.modules.image_encoder import conv_side, drq_strides

    # Hand-worked: 64 -> 31 (stride 2) -> 29 -> 27 -> 25 (each > 40? no: stride 1); 128 -> 63 -> 31 -> 29 -> 27.
    assert drq_strides(64) == (2, 1, 1, 1) and conv_side(64, (2, 1, 1, 1)) == 25
    assert drq_strides(128) == (2, 2, 1, 1) and conv_side(128, (2, 2, 1, 1)) == 27
    assert conv_side(64, (2, 2, 2, 2)) == 3  # 64 -> 31 -> 15 -> 7 -> 3
    encoder = CameraEncoder(ImageSpec("cam", 64, 64), channels=16, strides=(2, 2, 2, 2))
    assert encoder.head[0].in_features == 16 * 3 * 3 and encoder(frames(2, 64, 64)).shape == (2, 50)
    with pytest.raises(ValueError, match="too few"):
        CameraEncoder(ImageSpec("cam", 16, 16), strides=(2, 2, 2, 2))  # 16 -> 7 -> 3 -> 1 -> none


def test_spatial_softmax_returns_each_filters_expected_position() -> None:
    from robo_rl.modules.image_encoder import SpatialSoftmax

    # Hand-worked on a 3 x 5 map: x runs -1, -0.5, 0, 0.5, 1 across columns, y -1, 0, 1 down rows.
    maps = torch.full((1, 2, 3, 5), -1e4)
    maps[0, 0, 2, 4] = 0.0  # channel 0: all weight on (row 2, col 4) -> (x, y) = (1, 1)
    maps[0, 1, 0, 1] = maps[0, 1, 0, 2] = 0.0  # channel 1: half on (0, 1), half on (0, 2) -> (-0.25, -1)
    out = SpatialSoftmax()(maps)
    assert torch.allclose(out, torch.tensor([[1.0, 1.0, -0.25, -1.0]]))


def test_a_keypoint_encoder_moves_its_output_with_a_sub_pixel_shift_of_a_blob() -> None:
    # A Gaussian blob moved by a fraction of a pixel changes a keypoint encoder's output (sub-pixel positions).
    columns = torch.arange(24.0)

    def blob(centre: float) -> torch.Tensor:
        row = 255 * torch.exp(-0.5 * (columns - centre) ** 2)
        return row.repeat(24, 1)[None, :, :, None].round().to(torch.uint8)

    torch.manual_seed(0)
    encoder = CameraEncoder(ImageSpec("rail", 24, 24, 1), features=8, channels=8, strides=(1, 1), keypoints=True)
    assert encoder.head[0].in_features == 2 * 8
    assert not torch.allclose(encoder(blob(11.0)), encoder(blob(11.3)))


def test_frames_become_the_autocast_dtype_under_autocast_with_every_grey_level_exact() -> None:
    levels = torch.arange(256, dtype=torch.uint8).reshape(1, 16, 16, 1)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        low = frames_to_float(levels)
    assert low.dtype == torch.bfloat16
    exact = frames_to_float(levels)
    assert exact.dtype == torch.float32
    # bfloat16 keeps 8 significant bits: each level within half a unit in its last place of the float32 value.
    assert torch.all((low.float() - exact).abs() <= exact * 2.0**-8)
