"""The deployable camera policy: state + frames -> env action, as one module with one input per camera.

`CameraPolicy(encoder, actor)` joins an `ObservationEncoder` and a deterministic actor over its features (e.g.
`SquashedGaussianActor.deterministic_actor()` built on `encoder.output_dim` inputs). Its `forward(state, *frames)`
takes the frames in the order of `encoder.specs`, uint8 `(B, H, W, C)` each, which is also the order and the names
of the exported graph's image inputs (`robo_rl.artifact`, schema 4).
"""

from __future__ import annotations

import torch
from torch import nn

from robo_rl.image_spec import STATE_KEY, ImageSpec
from robo_rl.modules.image_encoder import ObservationEncoder


class CameraPolicy(nn.Module):
    """`forward(state, *frames) -> action`: the encoder's features through `actor` (obs -> env action)."""

    def __init__(self, encoder: ObservationEncoder, actor: nn.Module) -> None:
        super().__init__()
        self.encoder, self.actor = encoder, actor

    @property
    def specs(self) -> tuple[ImageSpec, ...]:
        """The cameras, in input order."""
        return self.encoder.specs

    def forward(self, state: torch.Tensor, *frames: torch.Tensor) -> torch.Tensor:
        if len(frames) != len(self.specs):
            names = [spec.name for spec in self.specs]
            raise ValueError(f"expected {len(names)} camera inputs {names}, got {len(frames)}")
        images = {spec.name: frame for spec, frame in zip(self.specs, frames, strict=True)}
        return self.actor(self.encoder(state, images))

    def act(self, obs: dict[str, torch.Tensor]) -> torch.Tensor:
        """The action for a camera env's observation dict (`robo_rl.envs.ImageObs`)."""
        return self(obs[STATE_KEY], *(obs[spec.name] for spec in self.specs))
