"""`--target cortex-m4`: the C sources and a Makefile that builds the object with arm-none-eabi-gcc (Cortex-M4F)
and prints its size."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from robo_rl.firmware_export.board import README_FILE, Board, FolderWriter, TargetContext, readme, render, template

if TYPE_CHECKING:
    from robo_rl.firmware_export.report import ExportReport


def write(context: TargetContext, out_dir: Path, dry_run: bool, report: ExportReport | None = None) -> list[str]:
    folder = FolderWriter(out_dir, dry_run)
    values = context.values()
    folder.sources(context.sources)
    folder.put("Makefile", render(template("generic/cortex-m4.mk"), values))
    build = render(template("generic/build_cortex-m4.md"), values).rstrip("\n")
    folder.put(README_FILE, readme(context, template("generic/README.md"), report, {"BUILD_SECTION": build}))
    return folder.paths


BOARD = Board(
    "cortex-m4", "C99 sources and a Makefile for arm-none-eabi-gcc (object + size)", write, qemu=True, order=1
)
