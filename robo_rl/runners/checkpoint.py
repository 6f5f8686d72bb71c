"""Crash-safe checkpoint files: write to a temporary file, fsync, then atomically rename into place."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

import torch


def save_atomic(state: dict[str, Any], path: Path) -> None:
    """Write `state` with torch.save so that `path` always holds either the old or the new complete file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            torch.save(state, f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    _fsync_dir(path.parent)


def _fsync_dir(directory: Path) -> None:
    """Persist the rename itself (the directory entry), not only the file's bytes."""
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def load(path: Path, device: torch.device | str = "cpu") -> dict[str, Any]:
    # weights_only=False: our checkpoints hold RNG states and plain dicts written by this module.
    return torch.load(path, map_location=device, weights_only=False)


def env_state(env: object) -> dict[str, Any] | None:
    """The env's own `state_dict()` when it has one (simulators do; real robots cannot be rewound)."""
    state_dict = getattr(env, "state_dict", None)
    return None if state_dict is None else state_dict()


def restore_env_state(env: object, state: dict[str, Any] | None) -> None:
    if state is not None and hasattr(env, "load_state_dict"):
        env.load_state_dict(state)
