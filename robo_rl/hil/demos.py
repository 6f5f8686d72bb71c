"""Demonstration files: replay transitions as a plain .npz with a schema, readable without torch.

Layout (schema `robo_rl.demos/1`): one array per transition field (`obs`, `critic_obs`, `actions` in the
normalized [-1, 1] action space, `rewards`, `next_obs`, `next_critic_obs`, `terminated`, `truncated`,
`intervened`, `is_demo`; first axis = transition), and `meta`, a JSON string with `schema`, `task`, `obs_names`,
`action_names`, `action_low`, `action_high`, `dt`, `episodes` and `source`. `load_demos` checks the names
against the env it is loaded for, so demonstrations never silently feed a different observation layout.

Camera frames (optional, e.g. from demos-from-bag): per camera NAME, `obs.NAME` and `next_obs.NAME`, `(T, H, W, C)`
uint8 frames of each transition's observation and next observation (the dict observation's images, `robo_rl.envs`),
and `meta["cameras"]`, the cameras' `ImageSpec.to_dict()` in observation order. Readers that know no cameras ignore
them (the schema stays 1: nothing existing changed); `load_demo_frames` reads them.
"""

from __future__ import annotations

import json
import os
import tempfile
import zipfile
import zlib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import torch

from robo_rl.envs import BatchedEnv, critic_obs_dim
from robo_rl.image_spec import ImageSpec
from robo_rl.storage.replay import FIELD_NAMES, ReplayBuffer, Transitions, vector_transitions

SCHEMA = "robo_rl.demos/1"
FLAG_NAMES = ("terminated", "truncated", "intervened", "is_demo")
FRAME_PREFIXES = ("obs.", "next_obs.")
"""Array name prefixes of a camera's frames: `obs.NAME` (observation) and `next_obs.NAME` (next observation)."""
DemoFrames = Mapping[str, tuple[np.ndarray, np.ndarray]]
"""Camera name → (obs frames, next obs frames), each `(T, H, W, C)` uint8."""


def save_demos(
    path: Path,
    buffer: ReplayBuffer,
    task: str,
    env: BatchedEnv,
    episodes: int,
    source: str,
    success: torch.Tensor | None = None,
    frames: DemoFrames | None = None,
    image_specs: tuple[ImageSpec, ...] = (),
) -> None:
    """Write the stored transitions of `buffer` to `path` (.npz) atomically, with the metadata of `env`, and
    `success` `(rows,)` (info["success"] per transition, for `robo-rl train-classifier`) when given, and camera
    `frames` of the cameras `image_specs` (module docstring) when given; without them, the frames `buffer` holds,
    if it has cameras."""
    stored = buffer.stored()
    if frames is None and buffer.image_specs and stored.images is not None and stored.next_images is not None:
        image_specs = buffer.image_specs
        frames = {
            spec.name: (stored.images[spec.name].cpu().numpy(), stored.next_images[spec.name].cpu().numpy())
            for spec in image_specs
        }
    arrays = {name: getattr(stored, name).cpu().numpy() for name in FIELD_NAMES}
    if success is not None:
        if success.shape != (len(buffer),):
            raise ValueError(f"success must have one flag per stored transition ({len(buffer)}), got {success.shape}")
        arrays["success"] = success.cpu().numpy().astype(bool)
    arrays |= _frame_arrays(frames or {}, image_specs, len(buffer))
    meta = {
        "schema": SCHEMA,
        "task": task,
        "obs_names": list(env.obs_spec.names),
        "action_names": list(env.action_spec.names),
        "action_low": list(env.action_spec.low),
        "action_high": list(env.action_spec.high),
        "dt": env.dt,
        "episodes": episodes,
        "source": source,
        "num_envs": env.num_envs,
    }
    if image_specs:
        meta["cameras"] = [spec.to_dict() for spec in image_specs]
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, tmp = tempfile.mkstemp(dir=path.parent, suffix=".npz")
    os.close(handle)
    np.savez_compressed(tmp, meta=np.array(json.dumps(meta)), **arrays)
    os.replace(tmp, path)


def read_meta(path: Path) -> dict[str, Any]:
    """The `meta` record of demo file `path` ({} without one); ValueError naming the file when it is unreadable."""
    return _meta(path, _read_arrays(path, ("meta",)))


def load_demos(path: Path, env: BatchedEnv) -> Transitions:
    """The transitions of demo file `path` on `env`'s device; ValueError naming the file when it is unreadable,
    not a demo file (schema), or does not fit `env` (names, array shapes)."""
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such demonstration file")
    arrays = _read_arrays(path, ("meta", *FIELD_NAMES))
    meta = _meta(path, arrays)
    if meta.get("schema") != SCHEMA:
        raise ValueError(f"{path}: not a robo_rl demonstration file (schema {meta.get('schema')!r})")
    for key, ours in (("obs_names", env.obs_spec.names), ("action_names", env.action_spec.names)):
        theirs = meta.get(key)
        if not isinstance(theirs, list) or tuple(theirs) != tuple(ours):
            raise ValueError(f"{path}: {key} differ from the task's ({theirs} vs {list(ours)})")
    missing = [name for name in FIELD_NAMES if name not in arrays]
    if missing:
        raise ValueError(f"{path}: missing arrays {missing}")
    _check_shapes(path, arrays, _row_shapes(env))
    return vector_transitions({name: torch.as_tensor(arrays[name]).to(env.device) for name in FIELD_NAMES})


def load_demo_frames(path: Path) -> tuple[tuple[ImageSpec, ...], dict[str, tuple[np.ndarray, np.ndarray]]]:
    """The cameras of demo file `path` and their frames (module docstring); `((), {})` for a file without cameras.
    ValueError naming the file when a camera's arrays are missing or do not match its spec and the row count."""
    meta = read_meta(path)
    try:
        specs = tuple(ImageSpec.from_dict(entry) for entry in meta.get("cameras", []))
    except ValueError as err:
        raise ValueError(f"{path}: meta cameras: {err}") from None
    names = tuple(f"{prefix}{spec.name}" for spec in specs for prefix in FRAME_PREFIXES)
    arrays = _read_arrays(path, ("obs", *names))
    rows = arrays["obs"].shape[0] if "obs" in arrays and arrays["obs"].ndim else 0
    frames: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    for spec in specs:
        obs, next_obs = (_camera_array(path, arrays, f"{p}{spec.name}", (rows, *spec.shape)) for p in FRAME_PREFIXES)
        frames[spec.name] = (obs, next_obs)
    return specs, frames


def _camera_array(path: Path, arrays: dict[str, np.ndarray], name: str, shape: tuple[int, ...]) -> np.ndarray:
    array = arrays.get(name)
    if array is None or array.shape != shape or array.dtype != np.uint8:
        found = "missing" if array is None else f"{array.shape} {array.dtype}"
        raise ValueError(f"{path}: array {name} is {found}, its camera needs {shape} uint8")
    return array


def _frame_arrays(frames: DemoFrames, specs: tuple[ImageSpec, ...], rows: int) -> dict[str, np.ndarray]:
    """The arrays of `frames` to store; ValueError unless they are exactly `specs`' cameras, with one frame of the
    spec's shape per stored transition, uint8."""
    if set(frames) != {spec.name for spec in specs}:
        raise ValueError(f"frames of cameras {sorted(frames)}, image specs of {[spec.name for spec in specs]}")
    arrays = {}
    for spec in specs:
        for prefix, array in zip(FRAME_PREFIXES, frames[spec.name], strict=True):
            if array.shape != (rows, *spec.shape) or array.dtype != np.uint8:
                raise ValueError(f"{prefix}{spec.name}: {array.shape} {array.dtype}, need {(rows, *spec.shape)} uint8")
            arrays[f"{prefix}{spec.name}"] = array
    return arrays


NPZ_ERRORS: tuple[type[BaseException], ...] = (OSError, EOFError, ValueError, zipfile.BadZipFile, zlib.error)
"""What numpy raises for a file that is not a complete .npz archive of plain arrays."""


def _read_arrays(path: Path, names: tuple[str, ...]) -> dict[str, np.ndarray]:
    """Those of the arrays `names` that the .npz archive `path` holds, read in full."""
    if not zipfile.is_zipfile(path):  # np.load would try it as a .npy array or a pickle
        raise ValueError(f"{path}: not a complete .npz archive (truncated, or another kind of file)")
    try:
        with np.load(path) as data:
            return {name: data[name] for name in names if name in data.files}
    except NPZ_ERRORS as err:
        detail = " ".join(str(err).split())[:160] or type(err).__name__
        raise ValueError(f"{path}: not a readable .npz demonstration file ({detail})") from None


def _meta(path: Path, arrays: dict[str, np.ndarray]) -> dict[str, Any]:
    try:
        meta = json.loads(str(arrays["meta"]))
    except KeyError:
        meta = {}
    except ValueError:
        raise ValueError(f"{path}: its meta record is not JSON") from None
    if not isinstance(meta, dict):
        raise ValueError(f"{path}: its meta record is not a JSON object")
    return meta


def _row_shapes(env: BatchedEnv) -> dict[str, tuple[int, ...]]:
    """Per transition field: the shape of one row on `env` (rewards and flags are scalars)."""
    obs, critic, action = (env.obs_spec.dim,), (critic_obs_dim(env),), (env.action_spec.dim,)
    shapes = {"obs": obs, "critic_obs": critic, "actions": action, "next_obs": obs, "next_critic_obs": critic}
    return {name: shapes.get(name, ()) for name in FIELD_NAMES}


def _check_shapes(path: Path, arrays: dict[str, np.ndarray], rows: dict[str, tuple[int, ...]]) -> None:
    count = arrays["obs"].shape[0] if arrays["obs"].ndim else 0
    for name, row in rows.items():
        array = arrays[name]
        if array.shape != (count, *row):
            raise ValueError(f"{path}: array {name} has shape {array.shape}, the task needs {(count, *row)}")
        expected = np.bool_ if name in FLAG_NAMES else np.floating
        if not np.issubdtype(array.dtype, expected):
            raise ValueError(f"{path}: array {name} has dtype {array.dtype}, expected {expected.__name__}")
