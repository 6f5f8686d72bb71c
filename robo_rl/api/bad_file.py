"""One error for an input file a command cannot use: one line that names the file and says what is wrong.

Libraries fail on a truncated, empty, random or wrong-kind file with their own exceptions (EOFError,
UnpicklingError, protobuf's DecodeError, torch's RuntimeError, zipfile's BadZipFile, ...), whose messages name
no file and often span lines. The loaders of each file kind translate the exceptions they expect into a
`BadFileError`, a ValueError, which `robo-rl` prints as `robo-rl CMD: error: FILE: PROBLEM` with exit code 2.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

MAX_DETAIL = 200
"""Characters of a library's message kept in the one line (some quote whole state dicts)."""


class BadFileError(ValueError):
    """`path` cannot be used; the message is `PATH: PROBLEM`, one line."""

    def __init__(self, path: str | os.PathLike[str], problem: str) -> None:
        self.path = path
        super().__init__(f"{path}: {problem}")


def describe(err: BaseException, path: str | os.PathLike[str] | None = None) -> str:
    """A library error as one short line: its message's lines joined (without a leading `path: `), or the
    error type's name when it has no message. A KeyError reads as the key that is missing."""
    if isinstance(err, KeyError) and err.args:
        return f"missing {err.args[0]!r}"
    text = "; ".join(line.strip() for line in str(err).splitlines() if line.strip()) or type(err).__name__
    if path is not None:
        text = text.removeprefix(f"{path}: ")
    return text if len(text) <= MAX_DETAIL else text[: MAX_DETAIL - 3] + "..."


@contextmanager
def file_errors(path: str | os.PathLike[str], problem: str, errors: tuple[type[BaseException], ...]) -> Iterator[None]:
    """Within the block, any of `errors` becomes `as_bad_file(err, path, problem)`; FileNotFoundError passes."""
    try:
        yield
    except FileNotFoundError:
        raise
    except errors as err:
        translated = as_bad_file(err, path, problem)
        if translated is err:
            raise
        raise translated from err


def as_bad_file(err: BaseException, path: str | os.PathLike[str], problem: str) -> BaseException:
    """`err` itself when it already is one line naming `path` (a ValueError, e.g. robo_rl.storage.checkpoint's
    CheckpointError, or a FileNotFoundError), else `BadFileError(path, "PROBLEM (DETAIL)")`."""
    text = str(err)
    if isinstance(err, ValueError | FileNotFoundError) and str(path) in text and "\n" not in text:
        return err
    return BadFileError(path, f"{problem} ({describe(err, path)})")


def check_output(path: Path, flag: str, folder: bool = False) -> None:
    """Refuse, before any work, an output `path` (given with `flag`) the command could not write: a folder where a
    file goes (or a file where a folder goes), or a path under a file. One line naming the flag and the path."""
    if folder and path.is_file():
        raise ValueError(f"{flag} {path}: is a file, not a folder")
    if not folder and path.is_dir():
        raise ValueError(f"{flag} {path}: is a folder, not a file")
    above = next((parent for parent in path.parents if parent.exists()), None)
    if above is not None and not above.is_dir():
        raise ValueError(f"{flag} {path}: {above} is a file, not a folder")


def os_error_line(err: OSError) -> str:
    """An OSError as `PATH: REASON` (the target of a failed rename), without its `[Errno N]` prefix."""
    path = err.filename2 if err.filename2 is not None else err.filename
    reason = err.strerror or describe(err)
    return f"{path}: {reason}" if path is not None else reason
