"""The installed layout: one package, robo_rl, with sim, real and firmware_export only as its subpackages (no
top-level `sim`, `real` or `firmware_export`), and the deploy side (robo_rl.real, robo_rl.firmware_export) torch-free.

Each check runs the venv's python in a fresh process outside the repository, so neither the source tree on
sys.path nor modules imported by pytest can make it pass.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest


def _python(code: str, cwd: Path) -> dict:
    """Run `code` (which prints one JSON line last) with the venv's python in `cwd`; return that JSON."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP")}
    proc = subprocess.run(
        [sys.executable, "-c", code], cwd=cwd, env=env, capture_output=True, text=True, timeout=120, check=False
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.splitlines()[-1])


def test_subpackages_import_only_under_robo_rl(tmp_path: Path) -> None:
    code = """
import importlib, json
result = {}
for name in ("robo_rl.sim", "robo_rl.real", "robo_rl.firmware_export", "sim", "real", "firmware_export"):
    try:
        importlib.import_module(name)
        result[name] = "ok"
    except ModuleNotFoundError as err:
        result[name] = f"ModuleNotFoundError:{err.name}"
print(json.dumps(result))
"""
    assert _python(code, tmp_path) == {
        "robo_rl.sim": "ok",
        "robo_rl.real": "ok",
        "robo_rl.firmware_export": "ok",
        "sim": "ModuleNotFoundError:sim",
        "real": "ModuleNotFoundError:real",
        "firmware_export": "ModuleNotFoundError:firmware_export",
    }


def test_sim_make_works_from_outside_the_repo(tmp_path: Path) -> None:
    code = """
import json
from robo_rl.sim import make, names
env = make("pendulum", num_envs=2, seed=0)
quad = make("quadrotor/hover", num_envs=2, seed=0)  # its frame YAML is package data
print(json.dumps({"names": names(), "obs": list(env.reset(seed=0).shape), "quad": quad.params.name}))
"""
    result = _python(code, tmp_path)
    assert {"pendulum", "quadrotor/hover", "gym/InvertedPendulum-v5"} <= set(result["names"])
    assert result["obs"] == [2, 3] and result["quad"]


@pytest.mark.parametrize("module", ["robo_rl", "robo_rl.real", "robo_rl.config", "robo_rl.firmware_export.targets"])
def test_deployment_side_does_not_import_torch(module: str, tmp_path: Path) -> None:
    code = f"""
import json, sys
import {module}
print(json.dumps({{"torch": "torch" in sys.modules}}))
"""
    assert _python(code, tmp_path) == {"torch": False}


def _requirement_closure(extras: set[str]) -> set[str]:
    """Names of every distribution `pip install robo-rl[extras]` would pull, read from installed metadata.

    robo-rl's own requirements are filtered by the requested extras (self-references like robo-rl[train]
    expand); other distributions' requirements are followed transitively with their default markers.
    """
    from importlib.metadata import PackageNotFoundError, requires

    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name

    seen: set[str] = set()
    todo: list[tuple[str, set[str]]] = [("robo-rl", extras)]
    while todo:
        name, wanted = todo.pop()
        try:
            lines = requires(name) or []
        except PackageNotFoundError:
            continue
        for line in lines:
            req = Requirement(line)
            key = canonicalize_name(req.name)
            if not any(req.marker is None or req.marker.evaluate({"extra": e}) for e in wanted | {""}):
                continue
            if key == "robo-rl":  # a self-reference such as robo-rl[train]
                todo.append((key, set(req.extras)))
            elif key not in seen:
                seen.add(key)
                todo.append((key, set(req.extras)))
    return seen


def test_real_extra_does_not_pull_torch() -> None:
    real = _requirement_closure({"real"})
    assert "onnxruntime" in real and "numpy" in real
    assert "torch" not in real, sorted(real)
    # The check can fail: the training extra does pull torch.
    assert "torch" in _requirement_closure({"train"})
