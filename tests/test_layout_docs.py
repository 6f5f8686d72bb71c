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


def _package_map() -> object:
    import importlib.util

    spec = importlib.util.spec_from_file_location("package_map", ROOT / "docs" / "package_map.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_architecture_picture_is_what_the_code_imports() -> None:
    """docs/ARCHITECTURE.md's package map is generated from the code (docs/package_map.py): it must be current."""
    package_map = _package_map()
    doc = (ROOT / "docs" / "ARCHITECTURE.md").read_text(encoding="utf-8")
    fresh = package_map.render(package_map.import_counts())  # type: ignore[attr-defined]
    assert package_map.current(doc) == fresh, "run python docs/package_map.py"  # type: ignore[attr-defined]
    assert set(package_map.GROUP_OF) == set(package_map.parts())  # type: ignore[attr-defined]
    # the picture draws real edges: sim imports the env contract, the core imports no simulator
    counts = package_map.import_counts()  # type: ignore[attr-defined]
    assert counts["sim", "envs"] > 0 and counts["envs", "sim"] == 0
