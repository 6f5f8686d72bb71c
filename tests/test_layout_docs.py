"""README's Layout block names every part of the package: each subpackage (as `name/`) and each top-level module
(as `name.py`) of robo_rl/ appears in it, so that a new one cannot be left out of the map a newcomer reads first."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "robo_rl"


def _layout_block() -> str:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    match = re.search(r"## Layout\n\n```\n(.*?)```", readme, re.DOTALL)
    assert match is not None, "README.md has no ## Layout code block"
    return match.group(1)


def _parts() -> list[str]:
    folders = [f"{p.name}/" for p in PACKAGE.iterdir() if p.is_dir() and not p.name.startswith(("_", "."))]
    modules = [p.name for p in PACKAGE.glob("*.py") if p.name != "__init__.py"]
    return sorted(folders + modules)


def test_the_readme_layout_names_every_subpackage_and_module() -> None:
    block = _layout_block()
    missing = [part for part in _parts() if not re.search(rf"(?<![\w/]){re.escape(part)}", block)]
    assert not missing, f"README.md's Layout block leaves out robo_rl/{missing}"


def test_the_check_sees_a_missing_part() -> None:
    block = _layout_block()
    assert not re.search(r"(?<![\w/])nonexistent_part/", block)
    assert "sim/" in _parts() and "envs.py" in _parts()
