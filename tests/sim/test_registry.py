"""The task registry: lazy backends, errors naming the task, config overrides."""

from __future__ import annotations

import subprocess
import sys

import pytest

from robo_rl.config import ConfigError
from robo_rl.sim import default_config, make, names, registry
from robo_rl.sim.pendulum import PendulumConfig
from robo_rl.sim.registry import register


@pytest.fixture(autouse=True)
def _restore_registry(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tasks registered by a test are gone after it."""
    monkeypatch.setattr(registry, "_TASKS", dict(registry._TASKS))


def test_importing_the_simulators_loads_no_backend_until_a_task_is_built() -> None:
    code = (
        "import sys, robo_rl.sim as s; heavy = ('mujoco', 'pybullet', 'matplotlib', 'gymnasium');"
        "print(sorted(m for m in heavy if m in sys.modules)); s.make('mujoco/cartpole_swingup', 1, seed=0);"
        "print('mujoco' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split("\n")
    assert out[0] == "[]" and out[1] == "True"


def test_every_issue_5_task_is_registered() -> None:
    registered = set(names())
    assert {"rc_car/race", "mujoco/cartpole_swingup", "mujoco/arm_reach", "pybullet/racecar_goal"} <= registered


def test_a_task_registered_by_path_resolves_on_first_use() -> None:
    register("test/pendulum_by_path", "robo_rl.sim.pendulum:Pendulum")
    assert default_config("test/pendulum_by_path") == PendulumConfig()
    env = make("test/pendulum_by_path", 2, seed=0, params=("max_torque=1.5",))
    assert env.action_spec.high == (1.5,)
    with pytest.raises(ValueError, match="already registered"):
        register("test/pendulum_by_path", "robo_rl.sim.pendulum:Pendulum")


def test_unknown_task_and_bad_params_name_the_task() -> None:
    with pytest.raises(ValueError, match="unknown task 'nope'; registered tasks:"):
        make("nope", 1)
    with pytest.raises(ConfigError, match=r"task params of 'pendulum': no_such_field: unknown key"):
        make("pendulum", 1, params=("no_such_field=1",))
    with pytest.raises(ConfigError, match=r"task\.config: no_such_field: unknown key"):
        make("pendulum", 1, config={"no_such_field": 1})
    with pytest.raises(ConfigError, match=r"task\.config: task 'pendulum' takes a PendulumConfig, got a HoverConfig"):
        make("pendulum", 1, config=default_config("quadrotor/hover"))
    register("test/missing_backend", "robo_rl.sim.no_such_module:Env")
    with pytest.raises(ModuleNotFoundError, match="no_such_module"):
        make("test/missing_backend", 1)


def test_with_fast_step_picks_the_numba_step_where_a_task_has_one_unless_told_otherwise() -> None:
    from robo_rl.sim.registry import with_fast_step

    assert with_fast_step("quadrotor/hover", ["episode_length=2"]) == ["backend=auto", "episode_length=2"]
    assert with_fast_step("rc_car/race", []) == ["backend=auto"]
    assert with_fast_step("quadrotor/hover", ["backend=torch"]) == ["backend=torch"]  # the user's choice stands
    assert with_fast_step("pendulum", ["max_episode_steps=50"]) == ["max_episode_steps=50"]  # no numba step
    env = make("quadrotor/hover", 1, seed=0, params=with_fast_step("quadrotor/hover", []))
    assert env._fused is not None  # type: ignore[attr-defined]
