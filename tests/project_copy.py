"""A copy of the project to follow a guide in (tests/test_new_task_guide.py, tests/test_new_algorithm_guide.py): the
copy, its files' contents, commands run in it (optionally with the core install's missing packages hidden) and the
Makefile's `docs` recipe. Loaded by file path: pytest's importlib mode puts no test folder on sys.path."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from collections.abc import Iterable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HIDDEN = ("mujoco", "pybullet", "pybullet_data", "onnx", "onnxruntime", "onnxscript", "gymnasium", "numba", "imageio")
"""What the core install (`pip install -e .[train]`, the Makefile's CORE_STAMP) does not have."""

HIDE = """import importlib.abc, os, sys
_HIDDEN = set(os.environ["ROBO_RL_HIDE"].split(","))
class _Hide(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name.partition(".")[0] in _HIDDEN:
            raise ModuleNotFoundError(f"No module named {name!r} (hidden: not in the core install)", name=name)
sys.meta_path.insert(0, _Hide())
"""
"""A sitecustomize that makes the packages the core install lacks fail to import."""


def copy_project(to: Path, tests: Iterable[str]) -> None:
    """The package, docs, bench and top-level files into `to`, with `tests` (paths under tests/)."""
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", ".*", "runs", "results")
    for folder in ("robo_rl", "docs", "bench"):
        shutil.copytree(ROOT / folder, to / folder, ignore=ignore)
    for file in ("README.md", "pyproject.toml", "Makefile"):
        shutil.copy2(ROOT / file, to / file)
    for file in tests:
        (to / "tests" / file).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / "tests" / file, to / "tests" / file)


def files(tree: Path) -> dict[str, bytes]:
    """Every file under `tree` by its relative path, with its bytes (no caches)."""
    return {
        path.relative_to(tree).as_posix(): path.read_bytes()
        for path in tree.rglob("*")
        if path.is_file() and not {"__pycache__", ".pytest_cache", ".mypy_cache"} & set(path.parts)
    }


def changed(before: dict[str, bytes], after: dict[str, bytes]) -> set[str]:
    """The paths added, changed or removed between two `files` snapshots."""
    return {name for name in after if before.get(name) != after[name]} | (before.keys() - after.keys())


def run(copy: Path, args: list[str], hide: tuple[str, ...] = ()) -> subprocess.CompletedProcess[str]:
    """`args` run in `copy` with its package first on the path; `hide`: packages that fail to import."""
    paths = [str(copy), os.environ.get("PYTHONPATH", "")]
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    if hide:
        (copy.parent / "hide").mkdir(exist_ok=True)
        (copy.parent / "hide" / "sitecustomize.py").write_text(HIDE)
        paths.insert(0, str(copy.parent / "hide"))
        env["ROBO_RL_HIDE"] = ",".join(hide)
    env["PYTHONPATH"] = os.pathsep.join(p for p in paths if p)
    return subprocess.run(args, cwd=copy, env=env, capture_output=True, text=True, check=False)


def docs_commands(makefile: str) -> list[list[str]]:
    """The recipe of the Makefile's `docs` target, `$(PY)` as this Python."""
    recipe = re.search(r"^docs:.*\n((?:\t.*\n)+)", makefile, re.MULTILINE)
    assert recipe is not None, "the Makefile has no docs target"
    return [shlex.split(line.strip().replace("$(PY)", sys.executable)) for line in recipe.group(1).splitlines()]
