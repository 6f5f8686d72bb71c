"""A learned success detector (as in HIL-SERL): a binary classifier over the observation vector, trained on
labelled frames of recorded episodes, that stands in for a success function the robot does not have.

Labelled frames come from demo files (schema `robo_rl.demos/1`, see `robo_rl.hil.demos`) that hold either
- `labels` `(rows,)`: an explicit label per `obs` row (1: the task is done in that frame), or
- `success` `(rows,)` bool: `info["success"]` of each transition, read where `terminated | truncated`.
  The episodes are rebuilt from the file's step-major layout (one row per env per step, env `row % num_envs`;
  `num_envs` from the meta record, else the stride at which every continuing transition's `next_obs` is the next
  row's `obs`). The last `last_frames` frames of a successful episode (its final observation included) are
  positives; its earlier frames and every frame of a failed episode are negatives. Episodes still running when
  the recording stopped are left out.

Outside the envelope (`ClassifierConfig.envelope`: the training positives' range per observation, widened) the
classifier never calls a frame successful, whatever the network scores there.
"""

from __future__ import annotations

import json
import math
import os
import zipfile
from collections.abc import Sequence
from dataclasses import asdict, dataclass, fields, replace
from pathlib import Path
from typing import Any, overload

import numpy as np
import torch
from torch import nn

from robo_rl.hil.demos import NPZ_ERRORS, SCHEMA
from robo_rl.storage.checkpoint import save_atomic

FORMAT = "robo_rl.success_classifier/1"
"""`format` key of a saved classifier."""
STD_FLOOR = 1e-6
"""Standard deviations below this (constant features) normalize with 1 instead."""


@dataclass(frozen=True)
class ClassifierConfig:
    """Network, training and labelling settings of a `SuccessClassifier`."""

    hidden_sizes: tuple[int, ...] = (64, 64)
    """Widths of the hidden ReLU layers (empty: logistic regression)."""
    epochs: int = 60
    """Passes over the training frames."""
    batch_size: int = 256
    """Frames per gradient step."""
    lr: float = 1e-3
    """AdamW learning rate."""
    weight_decay: float = 1e-4
    """AdamW weight decay."""
    threshold: float = 0.5
    """`success` is P(success) ≥ threshold."""
    holdout_fraction: float = 0.2
    """Fraction of each class held out for the report."""
    last_frames: int = 10
    """K: frames at the end of a successful episode labelled positive (files with `success`, not `labels`)."""
    obs_names: tuple[str, ...] | None = None
    """Observations the classifier reads, by name (None: the whole vector)."""
    balance_classes: bool = True
    """Weight the positives by negatives/positives in the loss (successes are the rare class)."""
    envelope: float | None = 0.5
    """Never call a frame successful unlike every positive it was trained on: P(success) is 0 where an observation
    it reads lies outside the training positives' range widened by this many standard deviations of the training
    frames (that observation's) on each side. A network extrapolates freely far from its data, and a policy trained
    on its reward finds such frames (the peg held 4-10 cm beside the hole scored as inserted). None: no envelope."""
    seed: int = 0
    """Seed of the holdout split, the initial weights and the batch order."""

    def __post_init__(self) -> None:
        at_least_one = {"epochs": self.epochs, "batch_size": self.batch_size, "last_frames": self.last_frames}
        problems = [f"{name} must be at least 1, got {value}" for name, value in at_least_one.items() if value < 1]
        if any(size < 1 for size in self.hidden_sizes):
            problems.append(f"hidden_sizes must be positive, got {self.hidden_sizes}")
        if not self.lr > 0 or not self.weight_decay >= 0:
            problems.append(f"lr must be positive and weight_decay not negative, got {self.lr}, {self.weight_decay}")
        for name in ("threshold", "holdout_fraction"):
            if not 0 < getattr(self, name) < 1:
                problems.append(f"{name} must lie in (0, 1), got {getattr(self, name)}")
        if self.envelope is not None and not self.envelope >= 0:
            problems.append(f"envelope must be None or at least 0, got {self.envelope}")
        if self.obs_names is not None and (not self.obs_names or len(set(self.obs_names)) < len(self.obs_names)):
            problems.append(f"obs_names must be distinct names, at least one, got {self.obs_names}")
        if problems:
            raise ValueError(f"ClassifierConfig: {'; '.join(problems)}")


@dataclass(frozen=True)
class TrainReport:
    """Sizes of the split and the classifier's scores on the holdout frames at its threshold."""

    train_frames: int
    train_positives: int
    holdout_frames: int
    holdout_positives: int
    accuracy: float
    precision: float
    """Of the holdout frames predicted successful, the fraction labelled so (0 when none is predicted)."""
    recall: float
    """Of the holdout frames labelled successful, the fraction predicted so."""
    threshold: float

    def lines(self) -> list[str]:
        """The report as text, one fact a line."""
        return [
            f"training frames: {self.train_frames} ({self.train_positives} successful)",
            f"holdout frames: {self.holdout_frames} ({self.holdout_positives} successful)",
            f"holdout accuracy {self.accuracy:.3f}, precision {self.precision:.3f}, recall {self.recall:.3f} "
            f"(threshold {self.threshold:g})",
        ]


class SuccessClassifier(nn.Module):
    """MLP from (normalized, optionally selected) observations to the logit of P(success).

    `obs_names` is the layout of the observation vector it is given; `config.obs_names` the ones it reads.
    """

    index: torch.Tensor
    mean: torch.Tensor
    std: torch.Tensor
    low: torch.Tensor
    high: torch.Tensor
    """The envelope (`ClassifierConfig.envelope`) of the observations it reads; ±inf: none."""

    def __init__(self, obs_names: Sequence[str], config: ClassifierConfig = ClassifierConfig()) -> None:
        super().__init__()
        self.obs_names = tuple(obs_names)
        self.config = config
        if not self.obs_names:
            raise ValueError("a success classifier needs at least one observation")
        selected = config.obs_names if config.obs_names is not None else self.obs_names
        missing = [name for name in selected if name not in self.obs_names]
        if missing:
            raise ValueError(f"observations {missing} are not among the recorded ones {list(self.obs_names)}")
        self.register_buffer("index", torch.tensor([self.obs_names.index(name) for name in selected]))
        self.register_buffer("mean", torch.zeros(len(selected)))
        self.register_buffer("std", torch.ones(len(selected)))
        self.register_buffer("low", torch.full((len(selected),), -math.inf))
        self.register_buffer("high", torch.full((len(selected),), math.inf))
        self.net = _mlp(len(selected), config.hidden_sizes)

    def fit_normalizer(self, obs: torch.Tensor) -> None:
        """Set the input normalization to the mean and std of `obs` `(B, obs_dim)` (the training frames)."""
        selected = obs.index_select(-1, self.index)
        std = selected.std(dim=0, unbiased=False)
        self.mean.copy_(selected.mean(dim=0))
        self.std.copy_(torch.where(std < STD_FLOOR, torch.ones_like(std), std))

    def fit_envelope(self, positives: torch.Tensor) -> None:
        """Set the envelope from the positive training frames `(P, obs_dim)` (after `fit_normalizer`): their range
        widened by `config.envelope` of the normalizer's standard deviations; none when `config.envelope` is None."""
        if self.config.envelope is None:
            return
        selected = positives.index_select(-1, self.index)
        margin = self.config.envelope * self.std
        self.low.copy_(selected.min(dim=0).values - margin)
        self.high.copy_(selected.max(dim=0).values + margin)

    def inside(self, obs: torch.Tensor) -> torch.Tensor:
        """Bool `(...)`: observations `(..., obs_dim)` within the envelope in every observation it reads."""
        selected = obs.index_select(-1, self.index)
        return ((selected >= self.low) & (selected <= self.high)).all(dim=-1)

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        """Logits `(...)` of success for observations `(..., obs_dim)`."""
        selected = obs.index_select(-1, self.index)
        return self.net((selected - self.mean) / self.std).squeeze(-1)

    @overload
    def predict(self, obs: np.ndarray) -> np.ndarray: ...
    @overload
    def predict(self, obs: torch.Tensor) -> torch.Tensor: ...
    def predict(self, obs: np.ndarray | torch.Tensor) -> np.ndarray | torch.Tensor:
        """P(success) `(...)` of observations `(..., obs_dim)`, as the same kind of array as `obs`; 0 outside the
        envelope."""
        tensor = torch.as_tensor(obs, dtype=torch.float32, device=self.mean.device)
        if tensor.ndim == 0 or tensor.shape[-1] != len(self.obs_names):
            raise ValueError(f"observations of shape {tuple(tensor.shape)}: expected (..., {len(self.obs_names)})")
        with torch.no_grad():
            probability = torch.sigmoid(self(tensor)) * self.inside(tensor)
        return probability.cpu().numpy() if isinstance(obs, np.ndarray) else probability.to(obs.device)

    def success(self, obs: np.ndarray | torch.Tensor) -> bool:
        """Whether one observation `(obs_dim,)` shows success: P(success) ≥ the threshold."""
        probability = self.predict(torch.as_tensor(obs))
        if probability.numel() != 1:
            raise ValueError(f"success takes one observation, got shape {tuple(torch.as_tensor(obs).shape)}")
        return bool(probability.item() >= self.config.threshold)

    def require_obs_names(self, names: Sequence[str]) -> None:
        """ValueError unless `names` is the observation layout the classifier was trained on."""
        if tuple(names) != self.obs_names:
            raise ValueError(f"the classifier reads observations {list(self.obs_names)}, not {list(names)}")

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write the classifier (config, observation names, weights and normalizer) to `path` atomically."""
        state = {
            "format": FORMAT,
            "config": asdict(self.config),
            "obs_names": list(self.obs_names),
            "state_dict": {key: value.cpu() for key, value in self.state_dict().items()},
        }
        save_atomic(state, Path(path))

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> SuccessClassifier:
        """The classifier saved in `path`, on the CPU; FileNotFoundError, or a one-line ValueError naming the file
        when it is damaged or not a success classifier."""
        state = _read_torch_file(Path(path))
        if not isinstance(state, dict) or state.get("format") != FORMAT:
            found = state.get("format") if isinstance(state, dict) else type(state).__name__
            raise ValueError(f"{path}: not a robo_rl success classifier (format {found!r}, expected {FORMAT!r})")
        try:
            config = _config_from_dict(state["config"])
            weights = dict(state["state_dict"])
            if "low" not in weights:  # saved before the envelope existed: none
                config = replace(config, envelope=None)
            classifier = cls(state["obs_names"], config)
            classifier.load_state_dict({**classifier.state_dict(), **weights})
        except (KeyError, TypeError, ValueError, RuntimeError, AttributeError) as err:
            raise ValueError(f"{path}: a damaged success classifier file ({_one_line(err)})") from None
        return classifier.eval()


def _mlp(inputs: int, hidden_sizes: tuple[int, ...]) -> nn.Sequential:
    layers: list[nn.Module] = []
    for width in hidden_sizes:
        layers += [nn.Linear(inputs, width), nn.ReLU()]
        inputs = width
    return nn.Sequential(*layers, nn.Linear(inputs, 1))


def _config_from_dict(data: dict[str, Any]) -> ClassifierConfig:
    values = dict(data)
    for name in ("hidden_sizes", "obs_names"):
        if isinstance(values.get(name), list):
            values[name] = tuple(values[name])
    known = {f.name for f in fields(ClassifierConfig)}
    unknown = sorted(set(values) - known)
    if unknown:
        raise ValueError(f"unknown config keys {unknown}")
    return ClassifierConfig(**values)


def _read_torch_file(path: Path) -> Any:
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such classifier file")
    if path.stat().st_size == 0:
        raise ValueError(f"{path}: an empty file, not a success classifier")
    try:
        return torch.load(path, map_location="cpu", weights_only=True)
    except PermissionError:
        raise
    except Exception as err:  # a damaged zip or pickle fails in many ways (RuntimeError, EOFError, ...)
        raise ValueError(f"{path}: truncated or not a success classifier file ({_one_line(err)})") from None


def _one_line(err: BaseException) -> str:
    """The error's type and the first sentence of its message, at most 160 characters."""
    lines = str(err).strip().splitlines()
    first = lines[0].split(". ")[0][:160] if lines else ""
    return f"{type(err).__name__}: {first}" if first else type(err).__name__


# --- labelled frames from demo files ---


def label_frames(length: int, success: bool, last_frames: int) -> np.ndarray:
    """Bool labels `(length,)` of one episode's frames: its last `last_frames` true when it succeeded."""
    labels = np.zeros(length, dtype=bool)
    if success:
        labels[max(length - last_frames, 0) :] = True
    return labels


def load_labelled_frames(
    path: str | os.PathLike[str], last_frames: int = ClassifierConfig.last_frames
) -> tuple[np.ndarray, np.ndarray, tuple[str, ...]]:
    """Frames `(F, obs_dim)` float32, their bool labels `(F,)` and the observation names of demo file `path`.

    Uses its `labels` array when it has one, else labels the episodes of its `success` array (see the module
    docstring); FileNotFoundError, or ValueError naming the file and what is missing or malformed.
    """
    path = Path(path)
    arrays, meta = _read_demo_file(path)
    names = _obs_names(path, meta)
    obs = _array(path, arrays, "obs", (len(names),), np.floating)
    if "labels" in arrays:
        return obs.astype(np.float32), _explicit_labels(path, arrays["labels"], len(obs)), names
    if "success" not in arrays:
        raise ValueError(
            f"{path}: no success information: it has neither a `labels` array (a label per frame) "
            'nor a `success` array (info["success"] per transition)'
        )
    frames, labels = _episode_frames(path, arrays, meta, obs, last_frames)
    return frames, labels, names


def load_labelled_files(
    paths: Sequence[str | os.PathLike[str]], last_frames: int = ClassifierConfig.last_frames
) -> tuple[np.ndarray, np.ndarray, tuple[str, ...]]:
    """`load_labelled_frames` of every file, concatenated; ValueError when their observation names differ."""
    if not paths:
        raise ValueError("no demo files given")
    loaded = [load_labelled_frames(path, last_frames) for path in paths]
    names = loaded[0][2]
    for path, (_, _, theirs) in zip(paths[1:], loaded[1:], strict=True):
        if theirs != names:
            raise ValueError(f"{path}: its obs_names {list(theirs)} differ from {paths[0]}'s {list(names)}")
    return np.concatenate([obs for obs, _, _ in loaded]), np.concatenate([lab for _, lab, _ in loaded]), names


def _read_demo_file(path: Path) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such demo file")
    if not zipfile.is_zipfile(path):
        raise ValueError(f"{path}: not a complete .npz archive (truncated, or another kind of file)")
    try:
        with np.load(path) as data:
            arrays = {name: data[name] for name in data.files}
    except NPZ_ERRORS as err:
        raise ValueError(f"{path}: not a readable .npz demo file ({_one_line(err)})") from None
    try:
        meta = json.loads(str(arrays["meta"]))
    except KeyError:
        raise ValueError(f"{path}: not a robo_rl demo file (no meta record)") from None
    except ValueError:
        raise ValueError(f"{path}: its meta record is not JSON") from None
    if not isinstance(meta, dict) or meta.get("schema") != SCHEMA:
        found = meta.get("schema") if isinstance(meta, dict) else None
        raise ValueError(f"{path}: not a robo_rl demo file (schema {found!r}, expected {SCHEMA!r})")
    return arrays, meta


def _obs_names(path: Path, meta: dict[str, Any]) -> tuple[str, ...]:
    names = meta.get("obs_names")
    if not isinstance(names, list) or not names or not all(isinstance(name, str) for name in names):
        raise ValueError(f"{path}: its meta record has no obs_names list")
    return tuple(names)


def _array(
    path: Path, arrays: dict[str, np.ndarray], name: str, row: tuple[int, ...], kind: type[np.generic]
) -> np.ndarray:
    """`arrays[name]`, checked to be `(rows, *row)` of dtype `kind` (rows from `obs`)."""
    if name not in arrays:
        raise ValueError(f"{path}: missing the array {name!r}")
    array = arrays[name]
    rows = arrays["obs"].shape[0] if arrays["obs"].ndim else 0
    if array.shape != (rows, *row) or not np.issubdtype(array.dtype, kind):
        expected = f"{(rows, *row)} of {kind.__name__}"
        raise ValueError(f"{path}: array {name} is {array.shape} of {array.dtype}, expected {expected}")
    return array


def _explicit_labels(path: Path, labels: np.ndarray, rows: int) -> np.ndarray:
    if labels.shape != (rows,) or not (np.issubdtype(labels.dtype, np.number) or labels.dtype == np.bool_):
        raise ValueError(f"{path}: array labels is {labels.shape} of {labels.dtype}, expected ({rows},) of 0/1")
    if not np.isin(labels, (0, 1)).all():
        raise ValueError(f"{path}: array labels holds values other than 0 and 1")
    return labels.astype(bool)


def _episode_frames(
    path: Path, arrays: dict[str, np.ndarray], meta: dict[str, Any], obs: np.ndarray, last_frames: int
) -> tuple[np.ndarray, np.ndarray]:
    """Frames and labels of the finished episodes of a file with a `success` array."""
    success = _array(path, arrays, "success", (), np.bool_)
    done = _array(path, arrays, "terminated", (), np.bool_) | _array(path, arrays, "truncated", (), np.bool_)
    next_obs = _array(path, arrays, "next_obs", (obs.shape[1],), np.floating)
    stride = _num_envs(path, meta, obs, next_obs, done)
    episodes = episode_rows(done, stride)
    if not episodes:
        raise ValueError(f"{path}: no episode finishes in it, so no frame can be labelled")
    frames = [np.concatenate((obs[rows], next_obs[rows[-1:]])) for rows in episodes]
    labels = [label_frames(len(rows) + 1, bool(success[rows[-1]]), last_frames) for rows in episodes]
    return np.concatenate(frames).astype(np.float32), np.concatenate(labels)


def episode_rows(done: np.ndarray, num_envs: int) -> list[np.ndarray]:
    """Row indices of each finished episode of a step-major recording of `num_envs` envs (row r: env r % num_envs),
    env by env; rows after an env's last `done` (an unfinished episode) are left out."""
    episodes = []
    for env in range(num_envs):
        rows = np.arange(env, len(done), num_envs)
        ends = np.flatnonzero(done[rows])
        starts = np.concatenate(([0], ends[:-1] + 1))
        episodes += [rows[start : end + 1] for start, end in zip(starts, ends, strict=True)]
    return episodes


def _num_envs(path: Path, meta: dict[str, Any], obs: np.ndarray, next_obs: np.ndarray, done: np.ndarray) -> int:
    """The meta record's `num_envs`, else the smallest stride n dividing the rows at which every continuing
    transition's next_obs is row r + n's obs."""
    rows = len(obs)
    declared = meta.get("num_envs")
    if declared is not None:
        if not isinstance(declared, int) or declared < 1 or rows % declared:
            raise ValueError(f"{path}: its meta num_envs {declared!r} does not divide its {rows} rows")
        return declared
    for stride in (n for n in range(1, rows + 1) if rows % n == 0):
        continuing = ~done[: rows - stride]
        if np.array_equal(next_obs[: rows - stride][continuing], obs[stride:][continuing]):
            return stride
    return 1  # no rows


# --- training ---


def stratified_split(labels: np.ndarray, fraction: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Indices (train, holdout) of `labels` `(N,)` bool: `fraction` of each class (at least one frame, never all
    of it) held out, drawn with `seed`."""
    rng = np.random.default_rng(seed)
    train, holdout = [], []
    for value in (False, True):
        members = rng.permutation(np.flatnonzero(labels == value))
        held = min(max(round(fraction * len(members)), 1), len(members) - 1)
        holdout.append(members[:held])
        train.append(members[held:])
    return np.sort(np.concatenate(train)), np.sort(np.concatenate(holdout))


def train_classifier(
    frames: np.ndarray | torch.Tensor,
    labels: np.ndarray | torch.Tensor,
    cfg: ClassifierConfig = ClassifierConfig(),
    obs_names: Sequence[str] | None = None,
) -> tuple[SuccessClassifier, TrainReport]:
    """A classifier fit on frames `(N, obs_dim)` with bool/0-1 labels `(N,)` (a stratified holdout kept aside),
    and its report on that holdout. `obs_names` names the columns (default `obs_0`, `obs_1`, ...)."""
    x, y = _dataset(frames, labels)
    names = tuple(obs_names) if obs_names is not None else tuple(f"obs_{i}" for i in range(x.shape[1]))
    if len(names) != x.shape[1]:
        raise ValueError(f"{len(names)} obs_names for frames of {x.shape[1]} observations")
    train, holdout = (torch.as_tensor(i) for i in stratified_split(y.bool().numpy(), cfg.holdout_fraction, cfg.seed))
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(cfg.seed)
        classifier = SuccessClassifier(names, cfg)
        classifier.fit_normalizer(x[train])
        classifier.fit_envelope(x[train][y[train] > 0.5])
        _fit(classifier, x[train], y[train], cfg)
    classifier.eval()
    return classifier, _report(classifier, x, y, train, holdout)


def _dataset(frames: np.ndarray | torch.Tensor, labels: np.ndarray | torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    x = torch.as_tensor(frames, dtype=torch.float32).cpu()
    y = torch.as_tensor(labels).cpu()
    if x.ndim != 2 or y.shape != (x.shape[0],):
        raise ValueError(f"frames {tuple(x.shape)} and labels {tuple(y.shape)}: expected (N, obs_dim) and (N,)")
    if not bool(torch.isfinite(x).all()):
        raise ValueError("frames hold non-finite values")
    if not bool(((y == 0) | (y == 1)).all()):
        raise ValueError("labels must be 0/1 or bool")
    positives = int(y.sum())
    negatives = len(y) - positives
    if min(positives, negatives) < 2:
        raise ValueError(f"training needs 2 successful and 2 failed frames at least, got {positives} and {negatives}")
    return x, y.float()


def _fit(classifier: SuccessClassifier, x: torch.Tensor, y: torch.Tensor, cfg: ClassifierConfig) -> None:
    positives = float(y.sum())
    pos_weight = (len(y) - positives) / positives if cfg.balance_classes else 1.0
    loss_fn = nn.BCEWithLogitsLoss(pos_weight=torch.tensor(pos_weight))
    optimizer = torch.optim.AdamW(classifier.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)
    classifier.train()
    for _ in range(cfg.epochs):
        for batch in torch.randperm(len(y)).split(cfg.batch_size):
            loss = loss_fn(classifier(x[batch]), y[batch])
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()


def _report(
    classifier: SuccessClassifier, x: torch.Tensor, y: torch.Tensor, train: torch.Tensor, holdout: torch.Tensor
) -> TrainReport:
    predicted = classifier.predict(x[holdout]) >= classifier.config.threshold
    truth = y[holdout].bool()
    hits = int((predicted & truth).sum())
    return TrainReport(
        train_frames=len(train),
        train_positives=int(y[train].sum()),
        holdout_frames=len(holdout),
        holdout_positives=int(truth.sum()),
        accuracy=float((predicted == truth).float().mean()),
        precision=hits / max(int(predicted.sum()), 1),
        recall=hits / max(int(truth.sum()), 1),
        threshold=classifier.config.threshold,
    )
