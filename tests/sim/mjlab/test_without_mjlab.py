"""Without mjlab (the main venv), `robo_rl.sim` still imports and `from_mjlab` says how to get mjlab."""

from __future__ import annotations

import importlib.util
import subprocess
import sys

import pytest

from robo_rl.sim import from_mjlab


def test_robo_rl_sim_does_not_import_mjlab() -> None:
    code = "import sys, robo_rl.sim; print(sorted(m for m in ('mjlab', 'warp', 'mujoco_warp') if m in sys.modules))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


@pytest.mark.skipif(importlib.util.find_spec("mjlab") is not None, reason="mjlab is installed in this venv")
def test_from_mjlab_without_mjlab_names_its_venv() -> None:
    with pytest.raises(ImportError, match="make mjlab-venv"):
        from_mjlab("Mjlab-Cartpole-Balance", num_envs=2)


def test_bad_arguments_fail_before_mjlab_is_needed() -> None:
    with pytest.raises(ValueError, match="num_envs"):
        from_mjlab("Mjlab-Cartpole-Balance", num_envs=0)
    with pytest.raises(ValueError, match="episode_length_s"):
        from_mjlab("Mjlab-Cartpole-Balance", num_envs=2, episode_length_s=0.0)
