"""The one error type of the launch interpreter: every bad input becomes a `LaunchError` naming where it is."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Location:
    """A place in a launch or parameter file.

    Attributes:
        file: path of the file as given (or "<string>").
        line: 1-based line number; 0 when unknown.
    """

    file: str
    line: int = 0

    def __str__(self) -> str:
        return f"{self.file}:{self.line}" if self.line else self.file


class LaunchError(ValueError):
    """A malformed launch file, a bad argument or an unresolvable substitution; the message is one line."""

    def __init__(self, message: str, where: Location | None = None) -> None:
        self.where = where
        super().__init__(f"{where}: {message}" if where is not None else message)
