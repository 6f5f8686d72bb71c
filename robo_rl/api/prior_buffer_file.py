"""The prior buffer file (`off_policy.prior_buffer`): a bad one is one error line naming it.

The runner reads it while it is built (`robo_rl.runners.off_policy.load_prior_buffer`: a replay buffer file or a
.npz demo file). Most problems already raise a ValueError naming the file; a buffer file of another version (a
missing field, tensors of other shapes) raises whatever torch raises. Only errors raised inside
`load_prior_buffer` are translated, so that a bug elsewhere in building the runner keeps its traceback.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from types import CodeType, TracebackType

from robo_rl.api.bad_file import as_bad_file
from robo_rl.api.checkpoint_file import STATE_ERRORS
from robo_rl.experiment import ExperimentConfig
from robo_rl.runners.off_policy_setup import load_prior_buffer


@contextmanager
def prior_buffer_errors(cfg: ExperimentConfig) -> Iterator[None]:
    """Errors that reading `cfg`'s prior buffer raises within the block become one line naming the file."""
    try:
        yield
    except STATE_ERRORS as err:
        path = prior_buffer_path(cfg)
        if path is None or not _raised_in(err.__traceback__, load_prior_buffer.__code__):
            raise
        translated = as_bad_file(err, path, "not a usable prior buffer")
        if translated is err:
            raise
        raise translated from err


def prior_buffer_path(cfg: ExperimentConfig) -> str | None:
    return None if cfg.on_policy else cfg.off_policy.prior_buffer


def _raised_in(traceback: TracebackType | None, code: CodeType) -> bool:
    while traceback is not None:
        if traceback.tb_frame.f_code is code:
            return True
        traceback = traceback.tb_next
    return False
