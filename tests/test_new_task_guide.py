"""docs/ARCHITECTURE.md's "Guide: add a task", followed to the letter in a copy of the project: a throwaway task in
three new files and one registration line, then `make docs`'s commands with the core install (MuJoCo, PyBullet,
ONNX, Gymnasium and numba hidden). Nothing else has to change: the generators write the task's preset file and
README rows, the registries, layer rules and env tests take it as it is, and the task copies no state handling from
the existing ones. The repository itself is left untouched."""

from __future__ import annotations

import re
import shlex
import sys
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[1]
NAME = "throwaway_walk"

TASK = '''"""The `throwaway_walk` task: a point on a line, moved by its velocity command, brought to the origin."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from robo_rl.envs import INFO_SUCCESS, SpaceSpec, StepResult
from robo_rl.sim.batched_task import BatchedTask


@dataclass(frozen=True)
class WalkConfig:
    dt: float = 0.1
    """Control period in s."""
    max_speed: float = 1.0
    """Speed limit in m/s."""
    max_episode_steps: int = 20
    """Steps after which an episode is truncated."""


class ThrowawayWalk(BatchedTask):
    """`num_envs` points on a line: obs `[x]` in m, action `[v]` in m/s, reward `-x^2` after the step."""

    state_attributes = ("_x",)

    def __init__(
        self,
        num_envs: int,
        device: str | torch.device = "cpu",
        config: WalkConfig = WalkConfig(),
        seed: int | None = None,
    ) -> None:
        super().__init__(num_envs, device, config.dt, config.max_episode_steps, seed)
        self.config = config
        self.obs_spec = SpaceSpec(("x",), (-10.0,), (10.0,), ("m",))
        self.action_spec = SpaceSpec(("v",), (-config.max_speed,), (config.max_speed,), ("m/s",))
        self._x = torch.zeros(num_envs, 1, dtype=self.dtype, device=self.device)
        self.reset(seed)

    def step(self, action: torch.Tensor) -> StepResult:
        speed = self.config.max_speed
        velocity = action.to(device=self.device, dtype=self.dtype).reshape(self.num_envs, 1).clamp(-speed, speed)
        self._x = self._x + velocity * self.config.dt
        success = self._x[:, 0].abs() < 0.05
        return self._end_step(self._current_obs(), -self._x[:, 0].square(), {INFO_SUCCESS: success})

    def _reset_where(self, done: torch.Tensor) -> None:
        drawn = torch.rand(self.num_envs, 1, generator=self._generator, device=self.device, dtype=self.dtype)
        self._renew(done, _x=2 * drawn - 1)

    def _current_obs(self) -> torch.Tensor:
        return self._x.clone()
'''

PRESETS = '''"""Presets of the throwaway walk."""

from __future__ import annotations

from robo_rl.algorithms.ppo import PPOConfig
from robo_rl.experiment import ExperimentConfig, TaskConfig


def throwaway_walk_ppo() -> ExperimentConfig:
    """PPO walking the points to the origin."""
    return ExperimentConfig(
        name="throwaway_walk_ppo", task=TaskConfig(name="throwaway_walk", num_envs=8), ppo=PPOConfig(num_steps=8)
    )


PRESETS = {"throwaway_walk_ppo": throwaway_walk_ppo}
'''

TEST = '''"""The throwaway walk: the env contract, exact resume, and its preset as `robo-rl train` reads it."""

from __future__ import annotations

import torch

from robo_rl.api.configs import preset
from robo_rl.envs import check_step_result
from robo_rl.sim import make
from robo_rl.sim.throwaway_walk.presets import PRESETS


def test_the_contract_and_exact_resume() -> None:
    env = make("throwaway_walk", 4, seed=0)
    actions = torch.linspace(-1, 1, 4).unsqueeze(-1)
    for _ in range(25):
        check_step_result(env, env.step(actions))
    twin = make("throwaway_walk", 4, seed=9)
    twin.load_state_dict(env.state_dict())
    for _ in range(25):  # through resets
        assert all(torch.equal(a, b) for a, b in zip(env.step(actions)[:4], twin.step(actions)[:4], strict=True))


def test_its_preset_file_is_its_preset() -> None:
    assert preset("throwaway_walk_ppo") == PRESETS["throwaway_walk_ppo"]()
'''

REGISTRATION = f'register("{NAME}", "robo_rl.sim.{NAME}:ThrowawayWalk", about="the guide test\'s throwaway task")\n'

GENERATED = {"README.md", "docs/ARCHITECTURE.md", f"robo_rl/configs/{NAME}_ppo.yaml"}
WRITTEN = {f"robo_rl/sim/{NAME}/__init__.py", f"robo_rl/sim/{NAME}/presets.py", f"tests/sim/test_{NAME}.py"}


def _code_runs(text: str, length: int = 6) -> set[tuple[str, ...]]:
    """Every run of `length` consecutive code lines (white space folded; blank lines, comments, imports and
    docstring lines passed over), the unit `duplicates` reports."""
    lines = [" ".join(line.split()) for line in text.splitlines()]
    code = [line for line in lines if line and not line.startswith(("#", "from ", "import ", '"""', "@"))]
    return {tuple(code[k : k + length]) for k in range(len(code) - length + 1)}


def test_the_core_install_has_what_make_docs_needs() -> None:
    """`make docs` depends on the core install, which installs no simulator backend or exporter."""
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    assert re.search(r"^docs: \$\(CORE_STAMP\)$", makefile, re.MULTILINE)
    core = re.search(r"^\$\(CORE_STAMP\):.*\n((?:\t.*\n)+)", makefile, re.MULTILINE)
    assert core is not None and '-e ".[train]"' in core.group(1)


def test_a_new_task_following_the_guide_needs_nothing_else(tmp_path: Path, project_copy: ModuleType) -> None:
    project = project_copy
    copy = tmp_path / "project"
    tests = ["conftest.py", "test_registries.py", "test_layout_docs.py", "test_import_layers.py"]
    project.copy_project(copy, [*tests, "robo_rl/storage/test_env_state.py"])
    before = project.files(copy)
    (copy / "robo_rl" / "sim" / NAME).mkdir()
    (copy / "robo_rl" / "sim" / NAME / "__init__.py").write_text(TASK)
    (copy / "robo_rl" / "sim" / NAME / "presets.py").write_text(PRESETS)
    (copy / "tests" / "sim").mkdir(exist_ok=True)
    (copy / "tests" / "sim" / f"test_{NAME}.py").write_text(TEST)
    registry = copy / "robo_rl" / "sim" / "__init__.py"
    source = registry.read_text()
    registry.write_text(source.replace("\n__all__ = [", f"\n{REGISTRATION}\n__all__ = [", 1))

    for command in project.docs_commands((copy / "Makefile").read_text()):
        done = project.run(copy, command, hide=project.HIDDEN)
        assert done.returncode == 0, f"{shlex.join(command)} with the core install:\n{done.stdout}{done.stderr}"
        if "robo_rl.api.configs" in command:
            assert "robo_rl.sim.mujoco.presets needs mujoco" in done.stdout

    after = project.files(copy)
    changed = project.changed(before, after)
    assert changed - GENERATED - WRITTEN == {"robo_rl/sim/__init__.py"}, "the guide's files are not all it takes"
    assert f"`{NAME}`" in after["README.md"].decode() and f"`{NAME}_ppo`" in after["README.md"].decode()

    checks = [
        [sys.executable, "-m", "robo_rl.api.configs"],
        [sys.executable, "docs/readme_lists.py", "--check"],
        [sys.executable, "docs/package_map.py", "--check"],
    ]
    for command in checks:
        done = project.run(copy, command)
        assert done.returncode == 0, f"{shlex.join(command)}:\n{done.stdout}{done.stderr}"
    tests = [
        f"tests/sim/test_{NAME}.py",
        "tests/test_registries.py",
        "tests/test_layout_docs.py",
        "tests/test_import_layers.py",
        "tests/robo_rl/storage/test_env_state.py",
    ]
    pytest = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"]
    done = project.run(copy, [*pytest, *tests])
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    core = project.run(copy, [*pytest, "tests/test_registries.py"], project.HIDDEN)
    assert core.returncode == 0, "tests/test_registries.py with the core install:\n" + core.stdout[-4000:]


def test_the_guide_task_copies_no_lines_of_a_simulator() -> None:
    """What a task repeats of another lives in `BatchedTask`: the guide's task shares no run of six code lines with
    any simulator module."""
    runs = _code_runs(TASK)
    for path in sorted((ROOT / "robo_rl" / "sim").rglob("*.py")):
        shared = runs & _code_runs(path.read_text(encoding="utf-8"))
        assert not shared, f"{path.relative_to(ROOT)} and the guide's task share {sorted(shared)[0]}"
