"""Checkpoints (`checkpoints/latest.pt`, `--checkpoint FILE`) as the commands load them: one error line naming
the file.

Reading a damaged file fails in robo_rl.storage.checkpoint with a CheckpointError that names it. Applying a
readable state fails with torch's or Python's own errors when the file was written for another config or version
of the run: a missing key, tensors of another network size, a replay buffer of other dimensions.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import torch

from robo_rl.api.bad_file import file_errors
from robo_rl.storage import checkpoint

STATE_ERRORS: tuple[type[BaseException], ...] = (KeyError, RuntimeError, ValueError, TypeError, IndexError, OSError)
"""What loading a checkpoint of another config or version into a run raises (OSError: a file it cannot read)."""


def read_checkpoint(path: Path, device: torch.device | str = "cpu") -> dict[str, Any]:
    """The state saved in training checkpoint `path`; one error line naming the file when it cannot be read."""
    with file_errors(path, "cannot read this checkpoint", (OSError,)):
        return checkpoint.load(path, device, required=("iteration",))


@contextmanager
def checkpoint_errors(path: Path) -> Iterator[None]:
    """Errors of loading the state of checkpoint `path` into this run (a runner's `load`, or the networks built
    from its config) become one BadFileError line naming the file."""
    with file_errors(path, "not a checkpoint this run can load", STATE_ERRORS):
        yield
