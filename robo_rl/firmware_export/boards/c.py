"""`--target c`: the C sources, an example `main.c` (the policy on a zero observation, printing the actions) and a
host Makefile."""

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
    folder.put("main.c", render(template("generic/main.c"), values))
    folder.put("Makefile", render(template("generic/Makefile"), values))
    build = render(template("generic/build_c.md"), values).rstrip("\n")
    folder.put(README_FILE, readme(context, template("generic/README.md"), report, {"BUILD_SECTION": build}))
    return folder.paths


BOARD = Board("c", "C99 sources, an example main.c and a host Makefile", write, order=0)
