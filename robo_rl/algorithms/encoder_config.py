"""Settings of the camera encoder SAC trains when its env has cameras (DrQ, `robo_rl.algorithms.drq`).

A section of `SACConfig` (`sac.encoder`), read only when the env is a `robo_rl.envs.CameraEnv`: a state-only run
ignores it, so adding cameras to a task changes nothing in the configs of its state-only runs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from robo_rl.modules.image_encoder import ENCODER_CHANNELS, FEATURES_PER_CAMERA, SHIFT_PAD


@dataclass(frozen=True)
class EncoderConfig:
    features: int = FEATURES_PER_CAMERA
    """Features per camera after the encoder's linear head (DrQ: 50)."""
    channels: int = ENCODER_CHANNELS
    """Filters per convolution (DrQ: 32; fewer suffice for tiny frames)."""
    strides: tuple[int, ...] = ()
    """One 3x3 convolution per entry, with that stride; (): DrQ's four (the first stride 2, then 2 while the map is
    larger than 40 pixels). (2, 2, 2, 2) with 16 channels costs a small fraction of DrQ's on the CPU at 64x64
    (bench/pixel_update.py)."""
    keypoints: bool = False
    """Spatial softmax (Levine et al. 2016): the last convolution's maps become each filter's expected (x, y) image
    position before the linear head, instead of being flattened. For tasks where where something is matters to the
    millimetre (robo_rl.modules.image_encoder.SpatialSoftmax)."""
    shift_pad: int = SHIFT_PAD
    """Largest random shift in pixels of the augmentation (DrQ: 4 at 84x84); 0 turns augmentation off."""
    weights: str | None = None
    """Pretrained camera encoder: a checkpoint file of an earlier camera run of the same cameras (its latest.pt or
    best.pt, or a file from `robo_rl.algorithms.drq.save_encoder`) or that run's directory (its
    checkpoints/best.pt). Its camera weights are loaded at the start; the state normalizer is not. None: random."""
    freeze: bool = False
    """Keep the (pretrained) camera encoder fixed: it leaves the critic optimizer and gets no gradient."""
    trained_by: Literal["critic", "actor"] = "critic"
    """Which loss trains the encoder. critic: DrQ's (the actor reads the features detached). actor: asymmetric
    actor-critic (Pinto et al. 2018, "Asymmetric Actor Critic for Image-Based Robot Learning"): the actor's loss
    trains it and the critic reads its features detached, beside the privileged state the simulator gives the critic
    (the task's privileged observation). For tasks whose critic knows the state: its Q is then as sharp as a state
    learner's, and the actor learns to read from the frames what the action needs."""
    bf16: bool = False
    """Train the camera encoder under bfloat16 autocast: its convolutions in the critic step and the targets' pass
    run in bfloat16, the weights, the features after its LayerNorm, and actor and critics stay float32; acting and
    export stay float32. About half the encoder's cost on a CPU with AVX-512 BF16 or AMX (bench/pixel_update.py);
    slower on one without."""

    def __post_init__(self) -> None:
        if self.features < 1 or self.channels < 1:
            raise ValueError("encoder.features and encoder.channels must be at least 1")
        if self.trained_by not in ("critic", "actor"):
            raise ValueError(f"encoder.trained_by must be critic or actor, got {self.trained_by!r}")
        if any(stride < 1 for stride in self.strides):
            raise ValueError(f"encoder.strides must be at least 1 each, got {self.strides}")
        if self.shift_pad < 0:
            raise ValueError(f"encoder.shift_pad must not be negative, got {self.shift_pad}")
        if self.freeze and self.weights is None:
            raise ValueError("encoder.freeze keeps a pretrained encoder fixed: set encoder.weights too")
