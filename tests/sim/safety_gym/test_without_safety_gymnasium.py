"""Without Safety-Gymnasium (the main venv), `robo_rl.sim` still imports, registers no safety_gym/ task, and
building one says in one line how to get it."""

from __future__ import annotations

import importlib.util
import subprocess
import sys

import pytest

from robo_rl.sim import from_safety_gymnasium, names
from robo_rl.sim.safety_gym import SafetyGymnasiumConfig

WITHOUT = pytest.mark.skipif(
    importlib.util.find_spec("safety_gymnasium") is not None, reason="safety_gymnasium is installed in this venv"
)


def test_robo_rl_sim_does_not_import_safety_gymnasium() -> None:
    code = "import sys, robo_rl.sim; print(sorted(m for m in ('safety_gymnasium', 'omnisafe') if m in sys.modules))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


@WITHOUT
def test_no_safety_gym_task_is_registered_without_it() -> None:
    assert [name for name in names() if name.startswith("safety_gym/")] == []


@WITHOUT
def test_from_safety_gymnasium_without_it_names_its_venv_in_one_line() -> None:
    with pytest.raises(ImportError, match=r"make safety-venv") as caught:
        from_safety_gymnasium("SafetyPointGoal1-v0", num_envs=2)
    assert "\n" not in str(caught.value)
    assert ".venv-safety/bin/python" in str(caught.value)


def test_bad_arguments_fail_before_safety_gymnasium_is_needed() -> None:
    with pytest.raises(ValueError, match="num_envs must be at least 1"):
        from_safety_gymnasium("SafetyPointGoal1-v0", num_envs=0)
    with pytest.raises(ValueError, match="max_episode_steps must be at least 1"):
        SafetyGymnasiumConfig(max_episode_steps=0)
