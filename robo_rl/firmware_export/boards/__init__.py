"""The firmware boards (`robo-rl export --target NAME`): every module here defines `BOARD`, a
`robo_rl.firmware_export.board.Board`, and is found by itself; a new board is one new module."""

from __future__ import annotations

import importlib
import pkgutil

from robo_rl.firmware_export.board import Board


def _discover() -> dict[str, Board]:
    found: dict[str, Board] = {}
    for module_info in sorted(pkgutil.iter_modules(__path__), key=lambda info: info.name):
        board = getattr(importlib.import_module(f"{__name__}.{module_info.name}"), "BOARD", None)
        if not isinstance(board, Board):
            raise TypeError(f"{__name__}.{module_info.name} defines no BOARD (a Board)")
        if board.name in found:
            raise ValueError(f"two boards are named {board.name!r}")
        found[board.name] = board
    return found


BOARDS: dict[str, Board] = _discover()
"""Every board by its `--target` name."""


def names() -> tuple[str, ...]:
    """Board names, by their `order`, then alphabetically."""
    return tuple(sorted(BOARDS, key=lambda name: (BOARDS[name].order, name)))


def board(name: str) -> Board:
    """The board `name`; ValueError listing the boards when there is none."""
    if name not in BOARDS:
        raise ValueError(f"unknown firmware target {name!r}; choose one of {', '.join(names())}")
    return BOARDS[name]
