"""A rosbag2 bag (a folder with metadata.yaml, or one .mcap / .db3 file) opened for reading, with one error line.

rosbags raises its own exception classes (AnyReaderError, its readers' ReaderError) and, for a metadata.yaml that is
not text, UnicodeDecodeError, with messages that often do not name the bag; `read_bag` turns them into a
`BagFileError` (a ValueError) `PATH: not a readable rosbag2 bag (DETAIL)`.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

MAX_DETAIL = 200
"""Characters of rosbags' message kept in the one line."""


class BagFileError(ValueError):
    """A bag that cannot be read; the message is `PATH: PROBLEM`, one line."""


@contextmanager
def read_bag(path: Path) -> Iterator[Any]:  # rosbags.highlevel.AnyReader
    """An open AnyReader on the bag at `path`; FileNotFoundError when nothing is there, BagFileError when it is
    not a bag rosbags can read (empty, truncated, another kind of file, bad metadata)."""
    from rosbags.highlevel import AnyReader, AnyReaderError
    from rosbags.rosbag1 import ReaderError as Rosbag1Error
    from rosbags.rosbag2 import ReaderError as Rosbag2Error

    if not path.exists():
        raise FileNotFoundError(f"{path}: no such bag")
    library = (AnyReaderError, Rosbag1Error, Rosbag2Error, struct.error, EOFError)
    try:  # opening reads the metadata and the index: a damaged file fails here in many ways
        reader = AnyReader([path])
        reader.open()
    except (*library, OSError, ValueError, TypeError, KeyError, IndexError) as err:
        raise _bad_bag(path, err) from None
    try:  # while reading, only rosbags' own errors: the caller's ValueErrors say what is wrong themselves
        yield reader
    except library as err:
        raise _bad_bag(path, err) from None
    finally:
        reader.close()


def _bad_bag(path: Path, err: BaseException) -> BagFileError:
    detail = " ".join(str(err).split()) or type(err).__name__
    detail = detail if len(detail) <= MAX_DETAIL else detail[: MAX_DETAIL - 3] + "..."
    return BagFileError(f"{path}: not a readable rosbag2 bag ({detail})")
