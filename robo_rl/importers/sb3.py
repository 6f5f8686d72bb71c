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
import zlib
from collections.abc import Sequence
from dataclasses import dataclass, replace
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
    one_line,
    relative_difference,
)

ALGORITHMS = ("ppo", "a2c", "sac", "td3", "ddpg")
_BY_POLICY_MODULE = {
    "stable_baselines3.common.policies": "ppo",
    "stable_baselines3.sac.policies": "sac",
    "stable_baselines3.td3.policies": "td3",
}
_FAMILY = {"ppo": "ppo", "a2c": "ppo", "sac": "sac", "td3": "td3", "ddpg": "td3"}
"""Algorithms that save the same policy class (PPO/A2C, TD3/DDPG): one loads the other's zip."""
_NOT_IMPORTED = {
    "stable_baselines3.dqn.policies": "a DQN model: discrete actions (Q-values) cannot be imported",
    "sb3_contrib.common.recurrent.policies": "a RecurrentPPO model (sb3-contrib): a recurrent policy's hidden "
    "state has no place in the artifact; it is not supported",
    "sb3_contrib.tqc.policies": "a TQC model (sb3-contrib): not supported",
    "sb3_contrib.qrdqn.policies": "a QR-DQN model (sb3-contrib): discrete actions; not supported",
    "sb3_contrib.common.maskable.policies": "a MaskablePPO model (sb3-contrib): discrete actions; not supported",
    "sb3_contrib.ars.policies": "an ARS model (sb3-contrib): not supported",
}
"""Policy modules of models this import refuses, and why (sb3-contrib's algorithms need their own package)."""
_LOAD_ERRORS = (
    ValueError,
    KeyError,
    TypeError,
    AttributeError,
    IndexError,
    RuntimeError,
    EOFError,
    OSError,
    ImportError,
    pickle.UnpicklingError,
    zipfile.BadZipFile,
    zlib.error,
)
"""What SB3's loader (zip, JSON, cloudpickle, torch.load) raises on a file it cannot use."""


class ObservationNormalizer(nn.Module):
    """VecNormalize's `normalize_obs`: clip((obs − mean) / sqrt(var + ε), −clip, clip).

    The mean is subtracted in two float32 parts, `(obs − mean_high) − mean_low` with mean_high = float32(mean) and
    mean_low = float32(mean − mean_high): a large mean over a small spread (a barometer: 1013 hPa ± 0.2) loses
    its digits below float32's step at the mean (6e-5 hPa) in one subtraction, and keeps them in two (the first is
    exact near the mean, Sterbenz)."""

    mean_high: torch.Tensor
    mean_low: torch.Tensor
    inv_std: torch.Tensor

    def __init__(self, mean: np.ndarray, var: np.ndarray, epsilon: float, clip: float) -> None:
        super().__init__()
        mean = np.asarray(mean, dtype=np.float64)
        high = mean.astype(np.float32)
        self.register_buffer("mean_high", torch.as_tensor(high))
        self.register_buffer("mean_low", torch.as_tensor((mean - high.astype(np.float64)).astype(np.float32)))
        self.register_buffer("inv_std", torch.as_tensor(1.0 / np.sqrt(var + epsilon), dtype=torch.float32))
        self.clip = float(clip)

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        return torch.clamp(((obs - self.mean_high) - self.mean_low) * self.inv_std, -self.clip, self.clip)


class Sb3Actor(nn.Module):
    """Normalizer → SB3's deterministic actor network → SB3's action mapping (unscale a tanh output onto the
    model's box `low`..`high`, or clip) → clipped to the artifact's box `out_low`..`out_high` (the model's box,
    narrowed by --action-low/--action-high)."""

    low: torch.Tensor
    high: torch.Tensor
    center: torch.Tensor
    half_width: torch.Tensor

    def __init__(
        self,
        normalizer: nn.Module,
        network: nn.Module,
        tanh: bool,
        squash: bool,
        low: np.ndarray,
        high: np.ndarray,
        out_low: np.ndarray | None = None,
        out_high: np.ndarray | None = None,
    ) -> None:
        super().__init__()
        self.normalizer = normalizer
        self.network = network
        self.tanh = tanh
        self.squash = squash
        self.register_buffer("low", torch.as_tensor(low, dtype=torch.float32))
        self.register_buffer("high", torch.as_tensor(high, dtype=torch.float32))
        self.box = np.asarray(low, dtype=np.float64), np.asarray(high, dtype=np.float64)
        out_low = low if out_low is None else out_low
        out_high = high if out_high is None else out_high
        self.out_low, self.out_high = np.asarray(out_low, dtype=np.float64), np.asarray(out_high, dtype=np.float64)
        center, half = box_center_half(out_low, out_high)
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

    def clipped_to(self, low: Sequence[float], high: Sequence[float]) -> Sb3Actor:
        """The same actor with its output clipped to `low`..`high` (the artifact's box) instead."""
        args = (self.normalizer, self.network, self.tanh, self.squash, *self.box)
        return Sb3Actor(*args, np.asarray(low, dtype=np.float64), np.asarray(high, dtype=np.float64)).eval()


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


def detect_algorithm(path: Path, requested: str | None = None) -> str:
    """The algorithm of a model zip, read from its policy class (PPO for SB3's common ActorCriticPolicy);
    `requested` (--algo) is checked against it. MissingInfoError naming the file for a zip this import cannot
    read, a model it does not import, or an --algo the zip contradicts."""
    data = _read_data(path)
    if not isinstance(data, dict):
        raise MissingInfoError(f"{path}: not a Stable-Baselines3 model zip ('data' is not a mapping)")
    policy_class = data.get("policy_class")
    module = str(policy_class.get("__module__", "")) if isinstance(policy_class, dict) else ""
    if module in _NOT_IMPORTED or module.startswith("sb3_contrib."):
        why = _NOT_IMPORTED.get(module, f"an sb3-contrib model ({module}): not supported")
        raise MissingInfoError(f"{path}: {why} (robo-rl import reads SB3's {', '.join(a.upper() for a in ALGORITHMS)})")
    if module not in _BY_POLICY_MODULE:
        if requested is not None:
            return requested  # a custom policy class: the user says which algorithm's layout it has
        raise MissingInfoError(
            f"{path}: its policy class comes from {module or 'no module'!r}, not one of SB3's; if it keeps the "
            f"layout of SB3's own, supply --algo ({', '.join(ALGORITHMS)})"
        )
    family = _BY_POLICY_MODULE[module]
    # A2C shares PPO's policy class and DDPG TD3's: their saved hyperparameters tell them apart
    if family == "ppo" and "clip_range" not in data:
        found = "a2c"
    elif family == "td3" and data.get("policy_delay") == 1 and data.get("target_noise_clip") == 0.0:
        found = "ddpg"
    else:
        found = family
    if requested is None:
        return found
    if _FAMILY[requested] != family:
        raise MissingInfoError(f"{path}: a {found.upper()} model, not {requested.upper()}: drop --algo {requested}")
    return requested


def _read_data(path: Path) -> Any:
    """The zip's `data` (SB3's JSON of hyperparameters and classes), after checking every member reads back."""
    try:
        with zipfile.ZipFile(path) as archive:
            for info in archive.infolist():
                try:
                    archive.read(info.filename)
                except (zipfile.BadZipFile, zlib.error, EOFError, OSError, NotImplementedError) as err:
                    raise MissingInfoError(
                        f"{path}: a damaged zip: its member {info.filename!r} does not read back ({one_line(err)})"
                    ) from None
            if "data" not in archive.namelist():
                raise MissingInfoError(f"{path}: not a Stable-Baselines3 model zip (no 'data' in it)")
            return json.loads(archive.read("data"))
    except (zipfile.BadZipFile, OSError) as err:
        raise MissingInfoError(f"{path}: not a zip file, or a truncated one ({one_line(err)})") from None
    except ValueError as err:  # JSON and UTF-8 errors; MissingInfoError passes through as it is
        if isinstance(err, MissingInfoError):
            raise
        raise MissingInfoError(
            f"{path}: not a Stable-Baselines3 model zip ('data' is not JSON: {one_line(err)})"
        ) from None


def load_sb3(path: Path, algorithm: str | None = None, vec_normalize: Path | None = None) -> Sb3Policy:
    """Read an SB3 zip (and its VecNormalize pickle) into a folded actor; MissingInfoError on what cannot be
    imported (image/dict observations, discrete actions, a recurrent policy), naming the file."""
    import stable_baselines3 as sb3
    from gymnasium import spaces

    if algorithm is not None and algorithm not in ALGORITHMS:
        raise MissingInfoError(f"--algo must be one of {ALGORITHMS}, got {algorithm!r}")
    algorithm = detect_algorithm(path, algorithm)
    try:
        model = getattr(sb3, algorithm.upper()).load(str(path), device="cpu")
    except _LOAD_ERRORS as err:
        raise MissingInfoError(f"{path}: SB3 cannot load it as {algorithm.upper()} ({one_line(err)})") from None
    obs_space, action_space = model.observation_space, model.action_space
    if not isinstance(obs_space, spaces.Box) or len(obs_space.shape) != 1:
        raise MissingInfoError(f"{path}: the observation space is {obs_space}; only a flat Box can be imported")
    if not isinstance(action_space, spaces.Box) or len(action_space.shape) != 1:
        raise MissingInfoError(f"{path}: the action space is {action_space}; only a flat Box can be imported")
    stats = _read_vec_normalize(vec_normalize, obs_space) if vec_normalize is not None else None
    normalizer = _normalizer(stats)
    try:
        network, tanh = _network(model.policy, algorithm)
    except AttributeError as err:
        raise MissingInfoError(f"{path}: its policy is not laid out as SB3's {algorithm.upper()} ({err})") from None
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


def _read_vec_normalize(path: Path, obs_space: Any) -> Any:
    """VecNormalize's pickle, checked to hold flat statistics for `obs_space` (the policy's observation space)."""
    try:
        with path.open("rb") as handle:
            stats = pickle.load(handle)  # the user's own file, read as SB3's VecNormalize.load does
    except FileNotFoundError:
        raise MissingInfoError(f"--vecnormalize {path}: no such file") from None
    except Exception as err:  # unpickling runs the file's own instructions: any error may come out
        raise MissingInfoError(
            f"--vecnormalize {path}: cannot read it as VecNormalize statistics ({one_line(err)})"
        ) from None
    rms: Any = getattr(stats, "obs_rms", None)
    width = obs_space.shape[0]
    if rms is None or isinstance(rms, dict) or np.shape(getattr(rms, "mean", ())) != (width,):
        raise MissingInfoError(f"--vecnormalize {path}: no flat observation statistics of width {width} in it")
    missing = [a for a in ("norm_obs", "epsilon", "clip_obs") if not hasattr(stats, a)]
    if missing or np.shape(getattr(rms, "var", ())) != (width,):
        raise MissingInfoError(f"--vecnormalize {path}: not VecNormalize statistics (no {missing or 'var'})")
    space = getattr(stats, "observation_space", None)
    if space is not None and not _same_box(space, obs_space):
        raise MissingInfoError(
            f"--vecnormalize {path}: statistics of another environment: their observation space {space} is not "
            f"the policy's {obs_space}"
        )
    return stats


def _same_box(a: Any, b: Any) -> bool:
    """Whether two Gymnasium Boxes have the same shape and bounds (`a` may be anything a pickle held)."""
    shape, low, high = (getattr(a, key, ()) for key in ("shape", "low", "high"))
    return bool(shape == b.shape and np.array_equal(low, b.low) and np.array_equal(high, b.high))


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
    """The imported policy's metadata: the spaces' bounds (the action box narrowed by the supplied bounds), the
    names/units/dt the user supplied."""
    size = len(policy.action_low)
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
    """Max |onnxruntime(file) − SB3 predict clipped to the file's box| over the rows of raw observations `obs`, as
    a fraction of each action's half-width."""
    import onnxruntime as ort

    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    got = session.run(None, {session.get_inputs()[0].name: obs.astype(np.float32)})[0]
    low, high = policy.actor.out_low, policy.actor.out_high
    return relative_difference(got, np.clip(sb3_predict(policy, obs), low, high), low, high)


def sample_obs(policy: Sb3Policy, count: int, seed: int = 0) -> np.ndarray:
    """Observations to check parity on: uniform within finite bounds (standard normal, or ±3 std around the
    VecNormalize mean, where unbounded) and, with VecNormalize, every other row ±3 std around its mean (within the
    bounds), where a large mean over a small spread tests the normalizer's precision."""
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
    rows = np.where(bounded, inside, wide)
    if policy.vec_normalize is not None:
        rows[1::2] = np.clip(wide[1::2], low, high)
    return rows.astype(np.float32)


def import_sb3(
    path: Path, out: Path, supplied: Supplied, algorithm: str | None = None, vec_normalize: Path | None = None
) -> tuple[Sb3Policy, PolicyArtifact]:
    """Write `out` (a robo_rl policy.onnx) from an SB3 zip, its output clipped to the artifact's action box;
    returns the policy written (with that box) and the artifact."""
    policy = load_sb3(path, algorithm, vec_normalize)
    meta = artifact(policy, supplied, [path] + ([vec_normalize] if vec_normalize else []))
    policy = replace(policy, actor=policy.actor.clipped_to(meta.action.low, meta.action.high))
    export_artifact(policy.actor, meta, out)
    return policy, meta
