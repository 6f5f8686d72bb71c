"""SAC from pixels and proprioception, as DrQ trains it (Kostrikov et al. 2020; Yarats et al. 2021, DrQ-v2).

`PixelSAC` wraps an unchanged `SAC` whose actor and critics read features instead of observations: an
`ObservationEncoder` turns the state vector and every camera's frames into one feature vector, shared by actor and
critics. Only the critic loss trains the encoder (its parameters sit in the critic optimizer): the actor step reads
the same features detached, since an actor gradient through the encoder destabilizes it (DrQ, SAC-AE). Each update
shifts the sampled frames at random (`random_shift`), the frames before and after the step independently, and the
next-state targets come from the encoder without gradient.

Composition, not a copy: the features go into `SAC.update_critic` / `SAC.update_actor` as a `Transitions` batch
whose obs are features, so the losses, RLPD's ensembles, Q-filtered behaviour cloning on demonstrations and
interventions and the temperature are SAC's own. A privileged critic part (`critic_obs` beyond the state) is
appended to the critic's features unchanged.

Where the critic has the state as a privileged observation (a simulator's), `encoder.trained_by="actor"` turns this
around into an asymmetric actor-critic (Pinto et al. 2018): the encoder sits in the actor optimizer and learns from
the actor's loss, and the critic reads its features detached, its Q as sharp as a state learner's.

`normalize_obs` normalizes the state part only, by a normalizer inside the encoder fitted once (`fit_normalizers`);
camera features need none (LayerNorm and tanh bound them).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import torch
from torch import nn

from robo_rl.algorithms.off_policy import OffPolicyAlgorithm
from robo_rl.algorithms.sac import SAC, SACConfig
from robo_rl.distributed import LOCAL, Reducer, update_normalizer
from robo_rl.envs import state_of
from robo_rl.image_spec import ImageSpec
from robo_rl.modules.camera_policy import CameraPolicy
from robo_rl.modules.image_encoder import ObservationEncoder, random_shift
from robo_rl.modules.normalizer import EmpiricalNormalizer
from robo_rl.storage import checkpoint
from robo_rl.storage.replay import IMAGE_SPECS_KEY, Frames, Transitions

ENCODER_FILE_KEY = "camera_encoder"
"""Top-level key of a file written by `save_encoder`."""


class PixelSAC(OffPolicyAlgorithm):
    """DrQ: `SAC` over the features of a shared `ObservationEncoder`, the encoder trained by the critic loss.

    Args:
        state_dim: the env's state vector size (`obs_spec.dim`, without the cameras).
        critic_obs_dim: state_dim plus the privileged size, if the env has one.
        action_low, action_high: the env's action bounds.
        cfg: SAC's settings; `cfg.encoder` the camera encoder's.
        image_specs: the env's cameras, in their order.
        device: torch device of the networks.
        reducer: averages the gradients over processes (`robo_rl.distributed`; LOCAL: one process): SAC's, and the
            encoder's with those of the optimizer it sits in, so every rank keeps the same encoder.
    """

    def __init__(
        self,
        state_dim: int,
        critic_obs_dim: int,
        action_low: torch.Tensor,
        action_high: torch.Tensor,
        cfg: SACConfig,
        image_specs: tuple[ImageSpec, ...],
        device: torch.device | str = "cpu",
        reducer: Reducer = LOCAL,
    ) -> None:
        self.cfg = cfg
        self.reducer = reducer
        self.state_dim, self.privileged_dim = state_dim, critic_obs_dim - state_dim
        enc = cfg.encoder
        self.encoder = ObservationEncoder(
            state_dim, image_specs, enc.features, cfg.normalize_obs, enc.channels, tuple(enc.strides), enc.keypoints
        )
        self.encoder.to(device)
        features = self.encoder.output_dim
        # The inner SAC normalizes nothing: the state part is normalized inside the encoder, features are bounded.
        inner = dataclasses.replace(cfg, normalize_obs=False)
        critic_features = features + self.privileged_dim
        self.sac = SAC(features, critic_features, action_low, action_high, inner, device, reducer=reducer)
        self.actor = self.sac.actor
        """SAC's actor over features (its `scaler` maps normalized actions onto the env's bounds)."""
        if enc.weights is not None:
            load_encoder(self.encoder, Path(enc.weights))
        if enc.freeze:
            self.encoder.cameras.requires_grad_(False)
        else:
            trainer = self.sac.actor_optimizer if enc.trained_by == "actor" else self.sac.critic_optimizer
            trainer.add_param_group({"params": list(self.encoder.cameras.parameters())})

    @property
    def image_specs(self) -> tuple[ImageSpec, ...]:
        return self.encoder.specs

    @property
    def needs_normalizers(self) -> bool:
        """True while `normalize_obs` is on and the state normalizer has not been fitted (nor loaded)."""
        normalizer = self.encoder.state_normalizer
        return isinstance(normalizer, EmpiricalNormalizer) and float(normalizer.count) == 0.0

    @torch.no_grad()
    def fit_normalizers(self, data: Transitions) -> None:
        """Fit the state normalizer once to `data`'s states (with `normalize_obs`; a no-op otherwise or when fitted);
        under several processes to every rank's states merged, as SAC fits its normalizers."""
        normalizer = self.encoder.state_normalizer
        if self.needs_normalizers and len(data.obs) > 0 and isinstance(normalizer, EmpiricalNormalizer):
            update_normalizer(normalizer, data.obs, self.reducer)

    @torch.no_grad()
    def act(self, obs: dict[str, torch.Tensor], deterministic: bool = False) -> torch.Tensor:
        """Normalized action `(N, A)` for a camera env's observation dict (no augmentation when acting)."""
        state, images = split_observation(obs, self.image_specs)
        return self.sac.act(self.encoder(state, images), deterministic)

    def update(self, batch: Transitions, update_actor: bool = True) -> dict[str, torch.Tensor]:
        """One critic step through the encoder on shifted frames (and, if asked, one actor and temperature step on
        the same features detached), then the target critics' update. With `encoder.trained_by="actor"` the actor
        step trains the encoder and the critic reads the features detached (asymmetric actor-critic)."""
        if batch.images is None or batch.next_images is None:
            raise ValueError("PixelSAC trains on transitions with camera frames (a ReplayBuffer with image_specs)")
        with self.encoder_precision():
            features = self.encoder(batch.obs, self.augment(batch.images))
            with torch.no_grad():
                next_features = self.encoder(batch.next_obs, self.augment(batch.next_images))
        by_actor = self.cfg.encoder.trained_by == "actor"
        critic_batch = self._feature_batch(batch, features.detach() if by_actor else features, next_features)
        metrics = {"critic_loss": self.sac.update_critic(critic_batch)}
        if update_actor:
            actor_obs = features if by_actor else features.detach()
            actor_batch = dataclasses.replace(critic_batch, obs=actor_obs, critic_obs=critic_batch.critic_obs.detach())
            metrics.update(self.sac.update_actor(actor_batch))
        self.sac.update_targets()
        return metrics

    def encoder_precision(self) -> torch.autocast:
        """bfloat16 autocast for the encoder's training passes with `encoder.bf16`, else a disabled one."""
        device = next(self.encoder.parameters()).device.type
        return torch.autocast(device, dtype=torch.bfloat16, enabled=self.cfg.encoder.bf16)

    def augment(self, frames: Frames) -> Frames:
        """DrQ's random shift of every camera's frames, each frame its own shift (`encoder.shift_pad`, 0: none)."""
        pad = self.cfg.encoder.shift_pad
        return {name: random_shift(tensor, pad) if pad > 0 else tensor for name, tensor in frames.items()}

    def _feature_batch(self, batch: Transitions, features: torch.Tensor, next_features: torch.Tensor) -> Transitions:
        """`batch` with features in place of the observations; the critic's get the privileged part appended."""
        return dataclasses.replace(
            batch,
            obs=features,
            critic_obs=torch.cat((features, batch.critic_obs[:, self.state_dim :]), dim=-1),
            next_obs=next_features,
            next_critic_obs=torch.cat((next_features, batch.next_critic_obs[:, self.state_dim :]), dim=-1),
            images=None,
            next_images=None,
        )

    def bc_actor(self) -> CameraBCActor:
        """What `off_policy.bc_pretrain_steps` clones: the encoder and the actor as one module reading camera
        observations (`CameraBCActor`)."""
        return CameraBCActor(self)

    def deterministic_policy(self) -> CameraPolicy:
        """The deployable policy: `forward(state, *frames) -> env action`, frames in `image_specs` order (the
        encoder, its state normalizer included, and the deterministic actor, sharing this algorithm's weights)."""
        actor: Any = self.sac.actor  # SAC's actor protocol: sample, deterministic, scaler, deterministic_actor
        return CameraPolicy(self.encoder, actor.deterministic_actor())

    def acting_module(self) -> nn.Module:
        """What `act` reads: the actor and the encoder (its state normalizer included), as one module whose
        weights a learner process publishes to the env loop."""
        return nn.ModuleDict({"actor": self.sac.actor, "encoder": self.encoder})

    def policy_state(self) -> dict[str, Any]:
        """What rebuilds the deployable policy (best.pt's `algorithm`): the actor's and the encoder's weights, and
        the cameras, which a run's recorded task specs do not hold (`camera_specs_of_policy`)."""
        cameras = [spec.to_dict() for spec in self.image_specs]
        return {"actor": self.sac.actor.state_dict(), "encoder": self.encoder.state_dict(), IMAGE_SPECS_KEY: cameras}

    def load_policy_state(self, state: dict[str, Any]) -> None:
        """Restore what `policy_state` returned."""
        self.sac.actor.load_state_dict(state["actor"])
        self.encoder.load_state_dict(state["encoder"])

    def state_dict(self) -> dict[str, Any]:
        """SAC's state (its critic optimizer holds the encoder's moments) and the encoder's weights."""
        return {**self.sac.state_dict(), **self.policy_state()}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.encoder.load_state_dict(state["encoder"])
        self.sac.load_state_dict(state)


class CameraBCActor(nn.Module):
    """`PixelSAC`'s actor behind its encoder, for behaviour cloning before RL (`robo_rl.hil.pretrain`).

    `log_prob(obs, action)` reads a camera observation dict (state and each camera's frames, as
    `behaviour_clone` builds it from demonstrations with frames): the frames are shifted at random as in RL
    updates (`PixelSAC.augment`), encoded, and the actor's log-likelihood of `action` is taken on the features.
    Unlike RL, where only the critic trains the encoder, cloning trains the camera encoder with the actor: before
    any critic exists the demonstrations are the only signal that shapes what the cameras see. Its parameters are
    the actor's and the camera encoder's; those of a frozen encoder (`encoder.freeze`) do not require gradients,
    so cloning leaves them as they are. Shares the algorithm's modules: cloning moves the algorithm's weights.
    """

    def __init__(self, algorithm: PixelSAC) -> None:
        super().__init__()
        self.actor = algorithm.sac.actor
        self.encoder = algorithm.encoder
        self.algorithm = algorithm
        """For its shifts and encoder precision (a plain attribute: `PixelSAC` is no `nn.Module`)."""

    @property
    def image_specs(self) -> tuple[ImageSpec, ...]:
        """The cameras whose frames `log_prob` reads."""
        return self.encoder.specs

    def log_prob(self, obs: dict[str, torch.Tensor], action: torch.Tensor) -> torch.Tensor:
        """Log-likelihood `(B,)` of normalized `action` `(B, A)` under the actor, given camera observations."""
        state, frames = split_observation(obs, self.image_specs)
        with self.algorithm.encoder_precision():
            features = self.encoder(state, self.algorithm.augment(frames))
        actor: Any = self.actor  # SAC's squashed-Gaussian actor: log_prob(obs, action)
        log_prob: torch.Tensor = actor.log_prob(features.float(), action)
        return log_prob


def camera_specs_of_policy(state: dict[str, Any]) -> tuple[ImageSpec, ...]:
    """The cameras of a checkpoint's `algorithm` state (a camera run's `policy_state` or `state_dict`); () for a
    state-only run's."""
    return tuple(ImageSpec.from_dict(spec) for spec in state.get(IMAGE_SPECS_KEY) or ())


def split_observation(
    obs: dict[str, torch.Tensor], specs: tuple[ImageSpec, ...]
) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """(state, camera name -> frames) of a camera env's observation dict."""
    return state_of(obs), {spec.name: obs[spec.name] for spec in specs}


def save_encoder(encoder: ObservationEncoder, path: Path) -> None:
    """Write the camera part of `encoder` (its cameras' specs and weights) for `EncoderConfig.weights`."""
    payload = {"specs": [spec.to_dict() for spec in encoder.specs], "cameras": encoder.cameras.state_dict()}
    checkpoint.save_atomic({ENCODER_FILE_KEY: payload}, path)


def load_encoder(encoder: ObservationEncoder, source: Path) -> None:
    """Load the camera weights of `source` into `encoder`: a `save_encoder` file, a camera run's checkpoint
    (latest.pt, best.pt) or its directory (checkpoints/best.pt). ValueError naming the file when it holds no camera
    encoder or one of other cameras (names, sizes or widths)."""
    path = source / "checkpoints" / "best.pt" if source.is_dir() else source
    if not path.is_file():
        raise FileNotFoundError(f"sac.encoder.weights: {path} does not exist")
    cameras = _camera_weights(checkpoint.load(path, "cpu"))
    if cameras is None:
        raise ValueError(f"sac.encoder.weights: {path} holds no camera encoder (a camera run's checkpoint?)")
    try:
        encoder.cameras.load_state_dict(cameras)
    except RuntimeError as err:
        first = str(err).strip().splitlines()[0]
        raise ValueError(f"sac.encoder.weights: {path} is an encoder of other cameras ({first})") from None


def _camera_weights(state: dict[str, Any]) -> dict[str, torch.Tensor] | None:
    """The `cameras` submodule's weights in a `save_encoder` file or a checkpoint's `algorithm.encoder`."""
    if ENCODER_FILE_KEY in state:
        return dict(state[ENCODER_FILE_KEY]["cameras"])
    encoder = state.get("algorithm", {}).get("encoder")
    if not isinstance(encoder, dict):
        return None
    prefix = "cameras."
    return {key[len(prefix) :]: value for key, value in encoder.items() if key.startswith(prefix)}


def sac(
    obs_dim: int,
    critic_obs_dim: int,
    action_low: torch.Tensor,
    action_high: torch.Tensor,
    cfg: SACConfig,
    device: torch.device | str = "cpu",
    image_specs: tuple[ImageSpec, ...] = (),
    reducer: Reducer = LOCAL,
) -> SAC | PixelSAC:
    """The registry's SAC builder: `SAC` for a state-only task, `PixelSAC` (DrQ) for one with cameras."""
    if not image_specs:
        return SAC(obs_dim, critic_obs_dim, action_low, action_high, cfg, device, reducer=reducer)
    return PixelSAC(obs_dim, critic_obs_dim, action_low, action_high, cfg, image_specs, device, reducer)
