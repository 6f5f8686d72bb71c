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
    """uint8 `(B, H, W, C)` -> float32 `(B, C, H, W)` in [0, 1]."""
    return frames.permute(0, 3, 1, 2).to(torch.float32) / 255.0


class CameraEncoder(nn.Module):
    """One camera's frames -> `features` values: ReLU convolutions, a linear head, LayerNorm and tanh (DrQ)."""

    def __init__(self, spec: ImageSpec, features: int = FEATURES_PER_CAMERA, channels: int = ENCODER_CHANNELS):
        super().__init__()
        self.spec = spec
        layers: list[nn.Module] = []
        side, in_channels = min(spec.height, spec.width), spec.channels
        for index in range(ENCODER_LAYERS):
            stride = 2 if index == 0 or side > MAX_SIDE_STRIDE_ONE else 1
            layers += [nn.Conv2d(in_channels, channels, 3, stride=stride), nn.ReLU()]
            side, in_channels = (side - 3) // stride + 1, channels
        self.convs = nn.Sequential(*layers, nn.Flatten())
        with torch.no_grad():
            flat = self.convs(torch.zeros(1, spec.channels, spec.height, spec.width)).shape[1]
        self.head = nn.Sequential(nn.Linear(flat, features), nn.LayerNorm(features), nn.Tanh())
        self.features = features

    def forward(self, frames: torch.Tensor) -> torch.Tensor:
        """uint8 `(B, H, W, C)` frames -> `(B, features)`."""
        return self.head(self.convs(frames_to_float(frames)))


def random_shift(frames: torch.Tensor, pad: int = SHIFT_PAD, generator: torch.Generator | None = None) -> torch.Tensor:
    """DrQ's augmentation: each frame of `(B, H, W, C)` moved by its own random whole-pixel shift in
    `[-pad, pad]` per axis, the border repeated into the gap (replicate padding, then a random crop). Keeps the
    dtype, so uint8 frames stay uint8 and the replay need not hold padded copies."""
    batch, height, width = frames.shape[:3]
    device = frames.device
    shifts = torch.randint(-pad, pad + 1, (2, batch, 1), generator=generator, device="cpu").to(device)
    rows = (torch.arange(height, device=device)[None] + shifts[0]).clamp(0, height - 1)
    cols = (torch.arange(width, device=device)[None] + shifts[1]).clamp(0, width - 1)
    index = torch.arange(batch, device=device)[:, None, None]
    return frames[index, rows[:, :, None], cols[:, None, :]]


class ObservationEncoder(nn.Module):
    """State vector + camera frames -> one feature vector `(B, state_dim + features * cameras)`: the state as it
    is (or, with `normalize_state`, through a fixed `EmpiricalNormalizer` the algorithm fits once: it lives here so
    that the deployed `CameraPolicy` carries it), each camera through its own `CameraEncoder`, joined in the order of
    `specs`. `channels`: filters per convolution (DrQ's 32; fewer for tiny frames)."""

    def __init__(
        self,
        state_dim: int,
        specs: tuple[ImageSpec, ...],
        features: int = FEATURES_PER_CAMERA,
        normalize_state: bool = False,
        channels: int = ENCODER_CHANNELS,
    ):
        super().__init__()
        if not specs:
            raise ValueError("ObservationEncoder needs at least one camera; a state-only policy needs no encoder")
        self.specs = specs
        self.state_dim = state_dim
        self.state_normalizer = make_normalizer(state_dim, normalize_state)
        self.cameras = nn.ModuleDict({spec.name: CameraEncoder(spec, features, channels) for spec in specs})
        self.output_dim = state_dim + features * len(specs)

    def forward(self, state: torch.Tensor, images: dict[str, torch.Tensor]) -> torch.Tensor:
        """`state` `(B, state_dim)`, `images` camera name -> uint8 `(B, H, W, C)` -> `(B, output_dim)`."""
        parts = [self.state_normalizer(state)] + [self.cameras[spec.name](images[spec.name]) for spec in self.specs]
        return torch.cat(parts, dim=-1)
