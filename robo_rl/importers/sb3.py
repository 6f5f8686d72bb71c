"""A Stable-Baselines3 model zip (PPO, A2C, SAC, TD3, DDPG on a flat Box observation and a Box action) as a robo_rl
policy artifact.

SB3 keeps two things outside its networks that an exported policy must carry (SB3 issues 383 and 1211): the
`VecNormalize` observation statistics, saved in their own pickle, and the action mapping `predict` applies (tanh
outputs unscaled onto the action box for SAC/TD3; Gaussian means clipped to it for PPO/A2C). Here both are folded
into one module with the deterministic actor, so the ONNX file computes exactly
`model.predict(vec_normalize.normalize_obs(obs), deterministic=True)` (checked by `parity`).

Needs stable-baselines3 (the `dev` extra) and torch; the file is read with SB3's own loader.
"""

from __future__ import annotations

import hashlib
import json
import pickle
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

import robo_rl
from robo_rl.artifact import PolicyArtifact
from robo_rl.export.onnx import export_artifact
from robo_rl.importers.supplied import (
    MissingInfoError,
    Supplied,
    action_spec,
    box_center_half,
    gather,
    obs_spec,
)

ALGORITHMS = ("ppo", "a2c", "sac", "td3", "ddpg")
_BY_POLICY_MODULE = {
    "stable_baselines3.common.policies": "ppo",
    "stable_baselines3.sac.policies": "sac",
    "stable_baselines3.td3.policies": "td3",
}


class ObservationNormalizer(nn.Module):
    """VecNormalize's `normalize_obs`: clip((obs − mean) / sqrt(var + ε), −clip, clip)."""

    mean: torch.Tensor
    inv_std: torch.Tensor

    def __init__(self, mean: np.ndarray, var: np.ndarray, epsilon: float, clip: float) -> None:
        super().__init__()
        self.register_buffer("mean", torch.as_tensor(mean, dtype=torch.float32))
        self.register_buffer("inv_std", torch.as_tensor(1.0 / np.sqrt(var + epsilon), dtype=torch.float32))
        self.clip = float(clip)

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        return torch.clamp((obs - self.mean) * self.inv_std, -self.clip, self.clip)


class Sb3Actor(nn.Module):
    """Normalizer → SB3's deterministic actor network → SB3's action mapping (unscale a tanh output, or clip)."""

    low: torch.Tensor
    high: torch.Tensor
    center: torch.Tensor
    half_width: torch.Tensor

    def __init__(
        self, normalizer: nn.Module, network: nn.Module, tanh: bool, squash: bool, low: np.ndarray, high: np.ndarray
    ) -> None:
        super().__init__()
        self.normalizer = normalizer
        self.network = network
        self.tanh = tanh
        self.squash = squash
        self.register_buffer("low", torch.as_tensor(low, dtype=torch.float32))
        self.register_buffer("high", torch.as_tensor(high, dtype=torch.float32))
        center, half = box_center_half(low, high)
        self.register_buffer("center", torch.as_tensor(center, dtype=torch.float32))
        self.register_buffer("half_width", torch.as_tensor(half, dtype=torch.float32))

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        action = self.network(self.normalizer(obs))
        if self.tanh:
            action = torch.tanh(action)
        if self.squash:
            action = self.low + 0.5 * (action + 1.0) * (self.high - self.low)
        # clipped per entry as a scalar Clip on the box's own scale: the firmware export reads that (no Min/Max)
        return torch.clamp((action - self.center) / self.half_width, -1.0, 1.0) * self.half_width + self.center


@dataclass(frozen=True)
class Sb3Policy:
    """An SB3 model read back: its algorithm, the folded actor and the spaces it was trained on."""

    algorithm: str
    actor: Sb3Actor
    obs_low: np.ndarray
    obs_high: np.ndarray
    action_low: np.ndarray
    action_high: np.ndarray
    model: Any
    """The loaded SB3 model (its `predict` is the reference of the parity check)."""
    vec_normalize: Any | None


def detect_algorithm(path: Path) -> str:
    """The algorithm of a model zip, read from its policy class (PPO for SB3's common ActorCriticPolicy)."""
    try:
        with zipfile.ZipFile(path) as archive:
            data = json.loads(archive.read("data"))
    except (zipfile.BadZipFile, KeyError, json.JSONDecodeError) as err:
        raise MissingInfoError(f"{path}: not a Stable-Baselines3 model zip ({err})") from None
    module = str(data.get("policy_class", {}).get("__module__", ""))
    if module not in _BY_POLICY_MODULE:
        raise MissingInfoError(
            f"{path}: unknown policy class module {module!r}: supply --algo ({', '.join(ALGORITHMS)})"
        )
    family = _BY_POLICY_MODULE[module]
    # A2C shares PPO's policy class and DDPG TD3's: their saved hyperparameters tell them apart
    if family == "ppo" and "clip_range" not in data:
        return "a2c"
    if family == "td3" and data.get("policy_delay") == 1 and data.get("target_noise_clip") == 0.0:
        return "ddpg"
    return family


def load_sb3(path: Path, algorithm: str | None = None, vec_normalize: Path | None = None) -> Sb3Policy:
    """Read an SB3 zip (and its VecNormalize pickle) into a folded actor; MissingInfoError on what cannot be
    imported (image/dict observations, discrete actions, a recurrent policy)."""
    import stable_baselines3 as sb3
    from gymnasium import spaces

    algorithm = algorithm or detect_algorithm(path)
    if algorithm not in ALGORITHMS:
        raise MissingInfoError(f"--algo must be one of {ALGORITHMS}, got {algorithm!r}")
    model = getattr(sb3, algorithm.upper()).load(str(path), device="cpu")
    obs_space, action_space = model.observation_space, model.action_space
    if not isinstance(obs_space, spaces.Box) or len(obs_space.shape) != 1:
        raise MissingInfoError(f"{path}: the observation space is {obs_space}; only a flat Box can be imported")
    if not isinstance(action_space, spaces.Box) or len(action_space.shape) != 1:
        raise MissingInfoError(f"{path}: the action space is {action_space}; only a flat Box can be imported")
    stats = _read_vec_normalize(vec_normalize, obs_space.shape[0]) if vec_normalize is not None else None
    normalizer = _normalizer(stats)
    network, tanh = _network(model.policy, algorithm)
    low, high = action_space.low.astype(np.float64), action_space.high.astype(np.float64)
    actor = Sb3Actor(normalizer, network, tanh, bool(model.policy.squash_output), low, high).eval()
    return Sb3Policy(algorithm, actor, obs_space.low, obs_space.high, low, high, model, stats)


def _network(policy: Any, algorithm: str) -> tuple[nn.Module, bool]:
    """SB3's deterministic actor up to its output layer, and whether a tanh follows (the squashed Gaussian's mode)."""
    if algorithm in ("ppo", "a2c"):
        network = nn.Sequential(policy.pi_features_extractor, policy.mlp_extractor.policy_net, policy.action_net)
        return network, bool(policy.squash_output)
    actor: Any = policy.actor
    if algorithm == "sac":
        return nn.Sequential(actor.features_extractor, actor.latent_pi, actor.mu), True
    return nn.Sequential(actor.features_extractor, actor.mu), False  # TD3/DDPG: mu ends in its own tanh


def _read_vec_normalize(path: Path, obs_dim: int) -> Any:
    try:
        with path.open("rb") as handle:
            stats = pickle.load(handle)  # the user's own file, read as SB3's VecNormalize.load does
    except (OSError, pickle.UnpicklingError, EOFError) as err:
        raise MissingInfoError(f"--vecnormalize {path}: cannot read it ({err})") from None
    rms = getattr(stats, "obs_rms", None)
    if rms is None or isinstance(rms, dict) or np.shape(rms.mean) != (obs_dim,):
        raise MissingInfoError(f"--vecnormalize {path}: no flat observation statistics of width {obs_dim} in it")
    return stats


def _normalizer(stats: Any | None) -> nn.Module:
    if stats is None or not stats.norm_obs:
        return nn.Identity()
    return ObservationNormalizer(stats.obs_rms.mean, stats.obs_rms.var, stats.epsilon, stats.clip_obs)


def sb3_predict(policy: Sb3Policy, obs: np.ndarray) -> np.ndarray:
    """SB3's own deterministic actions for raw observations (normalized by VecNormalize first when given)."""
    x = policy.vec_normalize.normalize_obs(obs) if policy.vec_normalize is not None else obs
    actions, _ = policy.model.predict(x, deterministic=True)
    return np.asarray(actions, dtype=np.float64)


def artifact(policy: Sb3Policy, supplied: Supplied, source: list[Path]) -> PolicyArtifact:
    """The imported policy's metadata: the spaces' bounds, the names/units/dt the user supplied."""
    size = policy.actor.low.numel()
    obs, action, dt = gather(
        lambda: obs_spec(supplied, len(policy.obs_low), None, policy.obs_low.tolist(), policy.obs_high.tolist()),
        lambda: action_spec(supplied, size, None, policy.action_low.tolist(), policy.action_high.tolist()),
        lambda: supplied.control_period(None, "an SB3 model zip"),
    )
    task = supplied.task or f"imported/sb3_{policy.algorithm}"
    origin = {"imported": {"from": "stable-baselines3", "algorithm": policy.algorithm, "files": _digests(source)}}
    return PolicyArtifact(
        obs=obs,
        action=action,
        dt=dt,
        task=task,
        config_hash=_digest_of(origin),
        version=robo_rl.__version__,
        task_config=json.dumps(origin, sort_keys=True, separators=(",", ":")),
    )


def _digests(paths: list[Path]) -> dict[str, str]:
    return {path.name: hashlib.sha256(path.read_bytes()).hexdigest()[:16] for path in paths}


def _digest_of(data: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()[:16]


def parity(policy: Sb3Policy, path: Path, obs: np.ndarray) -> float:
    """Max |onnxruntime(file) − SB3 predict| over the rows of raw observations `obs`."""
    import onnxruntime as ort

    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    got = session.run(None, {session.get_inputs()[0].name: obs.astype(np.float32)})[0]
    return float(np.max(np.abs(got - sb3_predict(policy, obs))))


def sample_obs(policy: Sb3Policy, count: int, seed: int = 0) -> np.ndarray:
    """Observations to check parity on: uniform within finite bounds, else around the VecNormalize mean (±3 std)
    or standard normal."""
    rng = np.random.default_rng(seed)
    low, high = policy.obs_low.astype(np.float64), policy.obs_high.astype(np.float64)
    if policy.vec_normalize is not None:
        mean, std = policy.vec_normalize.obs_rms.mean, np.sqrt(policy.vec_normalize.obs_rms.var)
    else:
        mean, std = np.zeros_like(low), np.ones_like(low)
    wide = rng.uniform(-3.0, 3.0, size=(count, len(low))) * std + mean
    bounded = np.isfinite(low) & np.isfinite(high)
    with np.errstate(invalid="ignore", over="ignore"):
        inside = rng.uniform(size=(count, len(low))) * (high - low) + low
    return np.where(bounded, inside, wide).astype(np.float32)


def import_sb3(
    path: Path, out: Path, supplied: Supplied, algorithm: str | None = None, vec_normalize: Path | None = None
) -> tuple[Sb3Policy, PolicyArtifact]:
    """Write `out` (a robo_rl policy.onnx) from an SB3 zip; returns the loaded policy and the artifact written."""
    policy = load_sb3(path, algorithm, vec_normalize)
    meta = artifact(policy, supplied, [path] + ([vec_normalize] if vec_normalize else []))
    export_artifact(policy.actor, meta, out)
    return policy, meta
