"""`--target arduino`: an Arduino library folder (`library.properties`, `src/`,
`examples/RoboRlPolicy/RoboRlPolicy.ino`)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from robo_rl.firmware_export.board import README_FILE, Board, FolderWriter, TargetContext, readme, render, template

if TYPE_CHECKING:
    from robo_rl.firmware_export.report import ExportReport


def write(context: TargetContext, out_dir: Path, dry_run: bool, report: ExportReport | None = None) -> list[str]:
    folder = FolderWriter(out_dir, dry_run)
    values = context.values()
    folder.put("library.properties", render(template("arduino/library.properties"), values))
    folder.put("src/RoboRlPolicy.h", render(template("arduino/src/RoboRlPolicy.h"), values))
    folder.sources(context.sources, "src/")
    example = "examples/RoboRlPolicy/RoboRlPolicy.ino"
    folder.put(example, render(template(f"arduino/{example}"), values))
    folder.put(README_FILE, readme(context, template("arduino/README.md"), report, {}))
    return folder.paths


BOARD = Board("arduino", "an Arduino library", write, order=3)
