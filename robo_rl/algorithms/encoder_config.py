"""Settings of the camera encoder SAC trains when its env has cameras (DrQ, `robo_rl.algorithms.drq`).

A section of `SACConfig` (`sac.encoder`), read only when the env is a `robo_rl.envs.CameraEnv`: a state-only run
ignores it, so adding cameras to a task changes nothing in the configs of its state-only runs.
"""

from __future__ import annotations

from dataclasses import dataclass

from robo_rl.modules.image_encoder import ENCODER_CHANNELS, FEATURES_PER_CAMERA, SHIFT_PAD


@dataclass(frozen=True)
class EncoderConfig:
    features: int = FEATURES_PER_CAMERA
    """Features per camera after the encoder's linear head (DrQ: 50)."""
    channels: int = ENCODER_CHANNELS
    """Filters per convolution (DrQ: 32; fewer suffice for tiny frames)."""
    shift_pad: int = SHIFT_PAD
    """Largest random shift in pixels of the augmentation (DrQ: 4 at 84x84); 0 turns augmentation off."""
    weights: str | None = None
    """Pretrained camera encoder: a checkpoint file of an earlier camera run of the same cameras (its latest.pt or
    best.pt, or a file from `robo_rl.algorithms.drq.save_encoder`) or that run's directory (its
    checkpoints/best.pt). Its camera weights are loaded at the start; the state normalizer is not. None: random."""
    freeze: bool = False
    """Keep the (pretrained) camera encoder fixed: it leaves the critic optimizer and gets no gradient."""

    def __post_init__(self) -> None:
        if self.features < 1 or self.channels < 1:
            raise ValueError("encoder.features and encoder.channels must be at least 1")
        if self.shift_pad < 0:
            raise ValueError(f"encoder.shift_pad must not be negative, got {self.shift_pad}")
        if self.freeze and self.weights is None:
            raise ValueError("encoder.freeze keeps a pretrained encoder fixed: set encoder.weights too")
