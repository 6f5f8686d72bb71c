"""Camera encoders for learning from pixels: a small CNN per camera (DrQ's), random-shift augmentation, and the
observation encoder that joins the state vector and every camera's features into one vector for actor and critic.

Frames arrive as the env and the robot deliver them, uint8 `(B, H, W, C)`; the conversion to float CHW in [0, 1]
is the first thing `CameraEncoder.forward` does, so an exported graph takes the camera's bytes unchanged
(`robo_rl.artifact.IMAGE_PREPROCESSING`).

DrQ (Kostrikov et al., 2020) and DrQ-v2 train the encoder with the critic's gradient only; the actor reads the
features detached. `ObservationEncoder` itself does not detach: the algorithm decides which loss it serves.
"""

from __future__ import annotations

import torch
from torch import nn

from robo_rl.image_spec import ImageSpec
from robo_rl.modules.normalizer import make_normalizer

ENCODER_CHANNELS = 32
"""Filters per convolution (DrQ's)."""
ENCODER_LAYERS = 4
"""3x3 convolutions per camera (DrQ's)."""
FEATURES_PER_CAMERA = 50
"""Width of one camera's feature vector after the linear head (DrQ's)."""
MAX_SIDE_STRIDE_ONE = 40
"""A feature map side above this after a convolution makes the next one stride 2 as well, so 64x64 and 128x128
frames end in maps of similar size (25x25 and 27x27) and the linear head stays small."""
SHIFT_PAD = 4
"""Largest random shift in pixels (DrQ pads 84x84 frames by 4)."""


def frames_to_float(frames: torch.Tensor) -> torch.Tensor:
    """uint8 `(B, H, W, C)` -> float32 `(B, C, H, W)` in [0, 1], left channels-last in memory (a permuted view): on
    the CPU, oneDNN's convolutions run several times faster on it than on a contiguous `(B, C, H, W)` copy. Under
    autocast straight in its dtype (bfloat16 holds 0..255 exactly), saving a float32 copy the convolution would cast."""
    device = frames.device.type
    dtype = torch.get_autocast_dtype(device) if torch.is_autocast_enabled(device) else torch.float32
    return frames.permute(0, 3, 1, 2).to(dtype, copy=True).div_(255.0)


def drq_strides(side: int) -> tuple[int, ...]:
    """DrQ's strides for frames whose smaller side is `side`: `ENCODER_LAYERS` 3x3 convolutions, the first stride 2,
    a later one stride 2 as well while the map is larger than `MAX_SIDE_STRIDE_ONE`, else 1."""
    strides: list[int] = []
    for index in range(ENCODER_LAYERS):
        stride = 2 if index == 0 or side > MAX_SIDE_STRIDE_ONE else 1
        strides.append(stride)
        side = (side - 3) // stride + 1
    return tuple(strides)


def conv_side(side: int, strides: tuple[int, ...]) -> int:
    """Side of the feature map after 3x3 unpadded convolutions of `strides` on a map of `side` (< 1: too small)."""
    for stride in strides:
        side = (side - 3) // stride + 1 if side >= 3 else 0
    return side


class CameraEncoder(nn.Module):
    """One camera's frames -> `features` values: ReLU convolutions, a linear head, LayerNorm and tanh (DrQ).

    `strides`: one 3x3 convolution per entry with that stride; () for DrQ's (`drq_strides`). Every convolution at
    stride 2 (`(2, 2, 2, 2)`) costs a fraction of DrQ's stack on the CPU: DrQ keeps 25x25 maps at 64x64 frames.
    `keypoints`: the last map becomes each filter's expected image position (`SpatialSoftmax`) instead of being
    flattened, before the same head."""

    def __init__(
        self,
        spec: ImageSpec,
        features: int = FEATURES_PER_CAMERA,
        channels: int = ENCODER_CHANNELS,
        strides: tuple[int, ...] = (),
        keypoints: bool = False,
    ):
        super().__init__()
        self.spec = spec
        side = min(spec.height, spec.width)
        strides = strides or drq_strides(side)
        if conv_side(side, strides) < 1:
            raise ValueError(f"camera {spec.name!r}: {side} pixels are too few for convolutions of strides {strides}")
        layers: list[nn.Module] = []
        in_channels = spec.channels
        for stride in strides:
            # In place: a convolution's backward needs its input, never its output.
            layers += [nn.Conv2d(in_channels, channels, 3, stride=stride), nn.ReLU(inplace=True)]
            in_channels = channels
        self.strides = strides
        self.convs = nn.Sequential(*layers)
        self.pool: nn.Module = SpatialSoftmax() if keypoints else nn.Flatten()
        with torch.no_grad():
            flat = self.pool(self.convs(torch.zeros(1, spec.channels, spec.height, spec.width))).shape[1]
        self.head = nn.Sequential(nn.Linear(flat, features), nn.LayerNorm(features), nn.Tanh())
        self.features = features

    def forward(self, frames: torch.Tensor) -> torch.Tensor:
        """uint8 `(B, H, W, C)` frames -> `(B, features)`. The head runs in float32 even under autocast (bfloat16's 8
        mantissa bits would blur positions read to a fraction of a pixel); only the convolutions follow autocast."""
        maps = self.convs(frames_to_float(frames))
        with torch.autocast(frames.device.type, enabled=False):
            return self.head(self.pool(maps.float()))


class SpatialSoftmax(nn.Module):
    """Feature maps `(B, C, H, W)` -> `(B, 2 C)`: per channel, the expected (x, y) position, each in [-1, 1] across
    the map, under a softmax over the map's cells (Levine, Finn et al. 2016, "End-to-end training of deep visuomotor
    policies"; robomimic's and Diffusion Policy's image encoders). An object's position comes out as a number with
    sub-cell resolution, which a flattened map holds only spread over many weights. The softmax's temperature is
    learnt (log scale, starting at 1)."""

    def __init__(self) -> None:
        super().__init__()
        self.log_temperature = nn.Parameter(torch.zeros(()))

    def forward(self, maps: torch.Tensor) -> torch.Tensor:
        batch, channels, height, width = maps.shape
        weights = torch.softmax(maps.reshape(batch, channels, height * width) / self.log_temperature.exp(), dim=-1)
        ys = torch.linspace(-1.0, 1.0, height, device=maps.device, dtype=maps.dtype)
        xs = torch.linspace(-1.0, 1.0, width, device=maps.device, dtype=maps.dtype)
        grid = torch.stack(
            (xs.repeat(height), ys.repeat_interleave(width)), dim=-1
        )  # (H W, 2): cell index h * W + w -> (x_w, y_h)
        return (weights @ grid).reshape(batch, 2 * channels)


def random_shift(frames: torch.Tensor, pad: int = SHIFT_PAD, generator: torch.Generator | None = None) -> torch.Tensor:
    """DrQ's augmentation: each frame of `(B, H, W, C)` moved by its own random whole-pixel shift in
    `[-pad, pad]` per axis, the border repeated into the gap (replicate padding, then a random crop). Keeps the
    dtype, so uint8 frames stay uint8 and the replay need not hold padded copies.

    The padding concatenates whole rows and columns and each crop is a slice: block copies, on the CPU several
    times faster than one gather of every pixel through broadcast indices (bench/pixel_update.py)."""
    batch, height, width = frames.shape[:3]
    shifts = torch.randint(-pad, pad + 1, (2, batch), generator=generator, device="cpu")
    padded = _repeat_edges(_repeat_edges(frames, pad, 1), pad, 2)
    tops, lefts = (shifts + pad).tolist()
    crops = [
        padded[i, top : top + height, left : left + width]
        for i, (top, left) in enumerate(zip(tops, lefts, strict=True))
    ]
    return torch.stack(crops)


def _repeat_edges(frames: torch.Tensor, pad: int, dim: int) -> torch.Tensor:
    """`frames` with its first and last slice along `dim` repeated `pad` times before and after (replicate pad)."""
    shape = list(frames.shape)
    shape[dim] = pad
    first, last = frames.narrow(dim, 0, 1), frames.narrow(dim, frames.shape[dim] - 1, 1)
    return torch.cat((first.expand(shape), frames, last.expand(shape)), dim=dim)


class ObservationEncoder(nn.Module):
    """State vector + camera frames -> one feature vector `(B, state_dim + features * cameras)`: the state as it
    is (or, with `normalize_state`, through a fixed `EmpiricalNormalizer` the algorithm fits once: it lives here so
    that the deployed `CameraPolicy` carries it), each camera through its own `CameraEncoder`, joined in the order of
    `specs`. `channels`: filters per convolution (DrQ's 32; fewer for tiny frames); `strides`, `keypoints`:
    `CameraEncoder`'s."""

    def __init__(
        self,
        state_dim: int,
        specs: tuple[ImageSpec, ...],
        features: int = FEATURES_PER_CAMERA,
        normalize_state: bool = False,
        channels: int = ENCODER_CHANNELS,
        strides: tuple[int, ...] = (),
        keypoints: bool = False,
    ):
        super().__init__()
        if not specs:
            raise ValueError("ObservationEncoder needs at least one camera; a state-only policy needs no encoder")
        self.specs = specs
        self.state_dim = state_dim
        self.state_normalizer = make_normalizer(state_dim, normalize_state)
        self.cameras = nn.ModuleDict(
            {spec.name: CameraEncoder(spec, features, channels, strides, keypoints) for spec in specs}
        )
        self.output_dim = state_dim + features * len(specs)

    def forward(self, state: torch.Tensor, images: dict[str, torch.Tensor]) -> torch.Tensor:
        """`state` `(B, state_dim)`, `images` camera name -> uint8 `(B, H, W, C)` -> `(B, output_dim)`."""
        parts = [self.state_normalizer(state)] + [self.cameras[spec.name](images[spec.name]) for spec in self.specs]
        return torch.cat(parts, dim=-1)
