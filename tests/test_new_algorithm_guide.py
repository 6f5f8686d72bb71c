"""docs/ARCHITECTURE.md's "Guide: add an algorithm", followed to the letter in a copy of the project: a throwaway
off-policy algorithm (SAC under a name and config class of its own) in its module and its test, one registration
line (and its import), then `make docs`'s commands with the core install. Nothing else has to change: the generators
write its name into `AlgorithmName`, its typed section onto `ExperimentConfig` and README's `--algo` list; the type
checker sees `cfg.throwaway_sac` as its config class; it trains through `ExperimentConfig` and `robo-rl train --algo`.
The repository itself is left untouched."""

from __future__ import annotations

import difflib
import importlib.util
import shlex
import sys
from pathlib import Path
from types import ModuleType

import yaml

NAME = "throwaway_sac"

ALGORITHM = '''"""The guide test's throwaway algorithm: SAC under a name and a config section of its own."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from robo_rl.algorithms.sac import SAC, SACConfig
from robo_rl.distributed import LOCAL, Reducer


@dataclass(frozen=True)
class ThrowawaySACConfig(SACConfig):
    """SAC's settings, with small networks by default."""

    actor_hidden: tuple[int, ...] = (32, 32)
    critic_hidden: tuple[int, ...] = (32, 32)


def throwaway_sac(
    obs_dim: int,
    critic_obs_dim: int,
    action_low: torch.Tensor,
    action_high: torch.Tensor,
    cfg: ThrowawaySACConfig,
    device: torch.device | str = "cpu",
    reducer: Reducer = LOCAL,
) -> SAC:
    """The registry's builder: SAC from the throwaway's section."""
    return SAC(obs_dim, critic_obs_dim, action_low, action_high, cfg, device, reducer=reducer)
'''

TEST = '''"""The throwaway SAC: built from its own section, it trains on the pendulum through `ExperimentConfig`."""

from __future__ import annotations

import torch
from torch import nn

from robo_rl.algorithms.sac import SAC
from robo_rl.algorithms.throwaway_sac import ThrowawaySACConfig
from robo_rl.api.envs import env_factory
from robo_rl.build import build_runner
from robo_rl.experiment import ExperimentConfig, TaskConfig
from robo_rl.runners.loop_config import LoopConfig
from robo_rl.runners.off_policy_config import OffPolicyRunnerConfig

LOOP = LoopConfig(max_iterations=30, eval_interval=0)


def test_it_trains_from_its_section() -> None:
    cfg = ExperimentConfig(
        name="throwaway_sac",
        algo="throwaway_sac",
        task=TaskConfig(name="pendulum", num_envs=2),
        throwaway_sac=ThrowawaySACConfig(actor_hidden=(16,)),
        off_policy=OffPolicyRunnerConfig(loop=LOOP, learning_starts=8, batch_size=8),
    )
    runner = build_runner(cfg, env_factory(), evaluate=False)
    algorithm = runner.algorithm
    assert isinstance(algorithm, SAC)
    assert [layer.out_features for layer in algorithm.actor.modules() if isinstance(layer, nn.Linear)][0] == 16
    before = [p.detach().clone() for p in algorithm.actor.parameters()]
    result = runner.learn()
    assert result.iterations == 30
    assert any(not torch.equal(a, b) for a, b in zip(before, algorithm.actor.parameters(), strict=True))
'''

IMPORT = f"from robo_rl.algorithms.{NAME} import ThrowawaySACConfig, {NAME}\n"
REGISTRATION = f'register(AlgorithmEntry("{NAME}", "off_policy", ThrowawaySACConfig, "SAC, renamed", {NAME}))\n'

TYPES = f'''from typing_extensions import assert_type

from robo_rl.algorithms.sac import SACConfig
from robo_rl.algorithms.{NAME} import ThrowawaySACConfig
from robo_rl.experiment import ExperimentConfig

cfg = ExperimentConfig(algo="{NAME}", {NAME}=ThrowawaySACConfig(actor_hidden=(16,)))
assert_type(cfg.{NAME}, ThrowawaySACConfig)
assert_type(cfg.sac, SACConfig)
ExperimentConfig({NAME}=SACConfig())  # type: ignore[arg-type]
ExperimentConfig(algo="throwaway_td3")  # type: ignore[arg-type]
'''
"""What the type checker must say of the new section: its type exactly (an unused `type: ignore` is an error)."""

GENERATED = {"README.md", "docs/ARCHITECTURE.md", "robo_rl/algorithms/registered.py", "robo_rl/experiment.py"}
WRITTEN = {f"robo_rl/algorithms/{NAME}.py", f"tests/robo_rl/algorithms/test_{NAME}.py"}
REGISTRY = "robo_rl/algorithms/registry.py"
SECTIONS = ("    # algorithm-sections:begin", "    # algorithm-sections:end")


def _outside_sections(text: str) -> str:
    """robo_rl/experiment.py without its generated algorithm sections."""
    return text[: text.index(SECTIONS[0])] + text[text.index(SECTIONS[1]) :]


def _edits(before: bytes, after: bytes) -> tuple[list[str], list[str]]:
    """The lines `after` removes from `before` and those it adds."""
    diff = list(difflib.ndiff(before.decode().splitlines(True), after.decode().splitlines(True)))
    return [line[2:] for line in diff if line.startswith("- ")], [line[2:] for line in diff if line.startswith("+ ")]


def _follow_the_guide(copy: Path) -> None:
    """The guide's two files and the registration line."""
    (copy / "robo_rl" / "algorithms" / f"{NAME}.py").write_text(ALGORITHM)
    (copy / "tests" / "robo_rl" / "algorithms" / f"test_{NAME}.py").write_text(TEST)
    registry = copy / REGISTRY
    source = registry.read_text()
    after = "from robo_rl.algorithms.td3 import TD3, TD3Config\n"
    registry.write_text(source.replace(after, after + IMPORT, 1) + REGISTRATION)


def test_a_new_algorithm_following_the_guide_needs_nothing_else(tmp_path: Path, project_copy: ModuleType) -> None:
    project = project_copy
    copy = tmp_path / "project"
    project.copy_project(copy, ["conftest.py", "test_registries.py", "robo_rl/algorithms/test_off_policy_contract.py"])
    before = project.files(copy)
    _follow_the_guide(copy)
    for command in project.docs_commands((copy / "Makefile").read_text()):
        done = project.run(copy, command, hide=project.HIDDEN)
        assert done.returncode == 0, f"{shlex.join(command)} with the core install:\n{done.stdout}{done.stderr}"

    after = project.files(copy)
    changed = project.changed(before, after)
    assert changed - GENERATED - WRITTEN == {REGISTRY}, "the guide's files are not all it takes"
    assert _edits(before[REGISTRY], after[REGISTRY]) == ([], [IMPORT, REGISTRATION]), "more than the registration"
    experiment = "robo_rl/experiment.py"
    assert _outside_sections(before[experiment].decode()) == _outside_sections(after[experiment].decode())
    assert f"    {NAME}: registered.ThrowawaySACConfig = " in after[experiment].decode()
    removed, added = _edits(before["README.md"], after["README.md"])
    assert len(removed) == len(added) == 1 and f"|{NAME}]" in added[0], "README: only the --algo list changes"

    checks = [
        [sys.executable, "docs/algorithm_sections.py", "--check"],
        [sys.executable, "docs/readme_lists.py", "--check"],
        [sys.executable, "docs/package_map.py", "--check"],
    ]
    generated = sorted(GENERATED - {"README.md", "docs/ARCHITECTURE.md"})
    if importlib.util.find_spec("ruff") is not None:  # the generated code is lint-clean and formatted
        checks += [[sys.executable, "-m", "ruff", "check", *generated], [sys.executable, "-m", "ruff", "format"]]
        checks[-1] += ["--check", *generated]
    if importlib.util.find_spec("mypy") is not None:
        (tmp_path / "types_of_the_section.py").write_text(TYPES)
        mypy = [sys.executable, "-m", "mypy", "--warn-unused-ignores", "--cache-dir", str(tmp_path / "mypy_cache")]
        checks.append([*mypy, str(tmp_path / "types_of_the_section.py")])
    for command in checks:
        done = project.run(copy, command)
        assert done.returncode == 0, f"{shlex.join(command)}:\n{done.stdout}{done.stderr}"

    pytest = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"]
    tests = [f"tests/robo_rl/algorithms/test_{NAME}.py", "tests/robo_rl/algorithms/test_off_policy_contract.py"]
    done = project.run(copy, [*pytest, *tests, "tests/test_registries.py"])
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]

    train = [sys.executable, "-m", "robo_rl.cli.main", "train", "pendulum_sac", "--algo", NAME, "--quiet"]
    train += ["--set", f"{NAME}.actor_hidden=[16]", "--max-iterations", "2", "--runs-root", str(tmp_path / "runs")]
    done = project.run(copy, train)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    (run,) = (tmp_path / "runs" / "pendulum_sac").iterdir()
    recorded = yaml.safe_load((run / "config.yaml").read_text())
    assert recorded["algo"] == NAME and recorded[NAME]["actor_hidden"] == [16]
