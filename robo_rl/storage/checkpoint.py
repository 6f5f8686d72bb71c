"""Crash-safe checkpoint files: write to a temporary file, fsync, then atomically rename into place.

`latest.pt` keeps the file it replaces beside it as `previous.pt`; `restore_latest` falls back to that one when
`latest.pt` is missing, empty, truncated or otherwise unreadable, and raises `CheckpointError` (a ValueError, which
the CLI reports in one line) when neither can be used.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import torch

LATEST = "latest.pt"
"""File name of a run's newest checkpoint."""
PREVIOUS = "previous.pt"
"""File name of the checkpoint `latest.pt` replaced, beside it: the fallback when `latest.pt` is unreadable."""
SAVED_AT = "saved_at"
"""Key of a runner checkpoint: Unix time (s) at which its state was taken."""


class CheckpointError(ValueError):
    """A checkpoint that cannot be used (empty, truncated, corrupt, not a checkpoint); the message names the file."""


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


def save_keeping_previous(state: dict[str, Any], path: Path) -> None:
    """`save_atomic`, keeping the file that `path` held as `previous_of(path)`.

    `path` exists at every moment: previous.pt becomes a hard link to the current file before the new file is
    renamed over `path` (a plain rename where the file system has no hard links). Temporary files that killed
    writes of `path` left behind are removed afterwards.
    """
    if path.is_file():
        _keep_as_previous(path)
    save_atomic(state, path)
    for stale in path.parent.glob(f".{path.name}.*.tmp"):
        stale.unlink(missing_ok=True)


def save_checkpoint(state: dict[str, Any], path: Path) -> None:
    """A runner's checkpoint: `state` stamped with the time it was taken (`SAVED_AT`); a `latest.pt` keeps the
    file it replaces as `previous.pt` (`save_keeping_previous`), any other path is written by `save_atomic`."""
    stamped = {**state, SAVED_AT: time.time()}
    if is_latest(path):
        save_keeping_previous(stamped, path)
    else:
        save_atomic(stamped, path)


def is_latest(path: Path) -> bool:
    return path.name == LATEST


def previous_of(path: Path) -> Path:
    """The fallback file beside `path` (checkpoints/latest.pt -> checkpoints/previous.pt)."""
    return path.with_name(PREVIOUS)


def _keep_as_previous(path: Path) -> None:
    previous = previous_of(path)
    link = path.with_name(f".{PREVIOUS}.link.tmp")
    link.unlink(missing_ok=True)
    try:
        os.link(path, link)
        os.replace(link, previous)
    except OSError:  # no hard links on this file system: previous.pt is briefly the only complete file
        link.unlink(missing_ok=True)
        os.replace(path, previous)


def _fsync_dir(directory: Path) -> None:
    """Persist the rename itself (the directory entry), not only the file's bytes."""
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def load(path: Path, device: torch.device | str = "cpu", required: Sequence[str] = ()) -> dict[str, Any]:
    """The dict saved in `path`, tensors on `device`.

    Raises FileNotFoundError when `path` does not exist, and CheckpointError naming the file when it is empty,
    cannot be unpickled (truncated or corrupt), is not a dict, or lacks one of the `required` keys.
    """
    if path.stat().st_size == 0:
        raise CheckpointError(f"{path} is empty (0 bytes)")
    try:
        # weights_only=False: our checkpoints hold RNG states and plain dicts written by this module.
        state = torch.load(path, map_location=device, weights_only=False)
    except PermissionError:
        raise
    except Exception as err:  # a damaged pickle or zip archive fails in many ways (EOFError, OSError, ...)
        raise CheckpointError(f"{path} is truncated or corrupt ({_first_line(err)})") from err
    if not isinstance(state, dict):
        raise CheckpointError(f"{path} is not a checkpoint (it holds a {type(state).__name__}, not a dict)")
    missing = [key for key in required if key not in state]
    if missing:
        raise CheckpointError(f"{path} is not a training checkpoint (no {', '.join(map(repr, missing))})")
    return state


def _first_line(err: BaseException) -> str:
    """The error's type and its message's first sentence (torch's zip reader appends a paragraph of advice)."""
    lines = str(err).strip().splitlines()
    first = lines[0].split(". ")[0][:160] if lines else ""
    return f"{type(err).__name__}: {first}" if first else type(err).__name__


def warn_on_stderr(message: str) -> None:
    print(f"warning: {message}", file=sys.stderr)


def restore_latest(
    latest: Path,
    restore: Callable[[Path], None],
    warn: Callable[[str], None] = warn_on_stderr,
    set_aside: bool = False,
) -> Path:
    """Call `restore` with `latest`, or with `previous_of(latest)` when `latest` is missing or `restore` raises
    CheckpointError for it (then `warn` gets one line saying why); returns the path restored.

    With `set_aside` (a run that goes on training), an unusable latest is renamed `latest.pt.corrupt`, so that the
    next save does not rotate it over the previous.pt just restored. Raises FileNotFoundError when neither file
    exists, and CheckpointError naming both files and what is wrong with each when neither can be restored.
    """
    previous = previous_of(latest)
    if not latest.is_file() and not previous.is_file():
        raise FileNotFoundError(f"{latest}: no checkpoint to resume from")
    problem = _restore_problem(latest, restore)
    if problem is None:
        return latest
    if not previous.is_file():
        raise CheckpointError(f"{problem}, and there is no {previous.name} to fall back to")
    second = _restore_problem(previous, restore)
    if second is not None:
        raise CheckpointError(f"no usable checkpoint: {problem}; {second}")
    warn(f"{problem}; restored {previous} instead")
    if set_aside and latest.is_file():
        os.replace(latest, latest.with_name(f"{latest.name}.corrupt"))
        _fsync_dir(latest.parent)
    return previous


def _restore_problem(path: Path, restore: Callable[[Path], None]) -> str | None:
    """None once `restore(path)` succeeded, else what is wrong with `path` (missing or CheckpointError)."""
    if not path.is_file():
        return f"{path} is missing"
    try:
        restore(path)
    except CheckpointError as err:
        return str(err)
    return None


def load_latest(
    latest: Path, device: torch.device | str = "cpu", warn: Callable[[str], None] = warn_on_stderr
) -> tuple[Path, dict[str, Any]]:
    """`load` of a training checkpoint through `restore_latest`'s fallback: (the file read, its state)."""
    loaded: list[dict[str, Any]] = []
    path = restore_latest(latest, lambda p: loaded.append(load(p, device, required=("iteration",))), warn)
    return path, loaded[-1]


def env_state(env: object) -> dict[str, Any] | None:
    """The env's own `state_dict()` (the simulators' episodes, steps and random state: exact resume); None for an
    env that declares `resumable = False` (a robot cannot be rewound, an adapter's foreign simulator has no state
    to save). TypeError for an env that does neither: a task that forgot `state_dict` would silently lose exact
    resume."""
    state_dict = getattr(env, "state_dict", None)
    if state_dict is not None:
        return state_dict()
    if getattr(env, "resumable", True) is False:
        return None
    raise TypeError(
        f"{type(env).__name__} has no state_dict(): give it state_dict/load_state_dict (exact resume) or declare "
        "`resumable = False` (a resumed run restarts its episodes)"
    )


def restore_env_state(env: object, state: dict[str, Any] | None) -> None:
    if state is not None and hasattr(env, "load_state_dict"):
        env.load_state_dict(state)
