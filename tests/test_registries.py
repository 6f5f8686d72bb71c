"""The registries are the one list of algorithms, tasks, presets and firmware boards: the config, the CLI and the
README agree with them. Loads with the core install (no ONNX, MuJoCo or PyBullet); what needs more imports it
where it is tested."""

from __future__ import annotations

import dataclasses
import importlib
import pkgutil
import re
import subprocess
import sys
import typing
from pathlib import Path

import pytest

import robo_rl.sim
from robo_rl.algorithms import registry as algorithms
from robo_rl.algorithms.registered import AlgorithmName
from robo_rl.api.configs import preset_names
from robo_rl.config import ConfigError, from_dict
from robo_rl.experiment import ExperimentConfig
from robo_rl.firmware_export import boards
from robo_rl.firmware_export.board import Board
from robo_rl.sim.presets import declared_presets, preset_modules

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()


def _readme_choices(option: str) -> set[str]:
    match = re.search(rf"{option} ([a-z0-9_|-]+)", README)
    assert match, f"README has no `{option} a|b|...` line"
    return set(match.group(1).split("|"))


def test_every_algorithm_has_its_config_section() -> None:
    fields = {field.name: field for field in dataclasses.fields(ExperimentConfig)}
    for entry in algorithms.entries():
        assert entry.name in fields, f"ExperimentConfig has no section {entry.name!r}"
        assert isinstance(getattr(ExperimentConfig(), entry.name), entry.config)
        assert entry.loop_section in fields


def test_algo_outside_the_registry_is_a_config_error_naming_the_registered() -> None:
    expected = "algo: expected one of " + ", ".join(repr(name) for name in algorithms.names())
    with pytest.raises(ConfigError, match=expected):
        from_dict(ExperimentConfig, {"algo": "a2c"})
    registered = f"registered: {', '.join(algorithms.names())}"
    with pytest.raises(ValueError, match=f"unknown algorithm 'a2c'; {registered}"):
        ExperimentConfig(algo="a2c")  # type: ignore[arg-type]


def test_the_algorithm_names_are_the_registered_ones() -> None:
    assert typing.get_args(AlgorithmName) == algorithms.names()


def test_the_algorithm_types_are_written_from_the_registry() -> None:
    """`AlgorithmName` (robo_rl/algorithms/registered.py) and `ExperimentConfig`'s algorithm sections are written by
    docs/algorithm_sections.py from the registry (run in a process of its own, where no test has registered one)."""
    check = subprocess.run(
        [sys.executable, str(ROOT / "docs" / "algorithm_sections.py"), "--check"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert check.returncode == 0, check.stderr


def test_an_algorithm_registers_once_with_its_builders() -> None:
    sac, ppo = algorithms.algorithm("sac"), algorithms.algorithm("ppo")
    with pytest.raises(ValueError, match="already registered"):
        algorithms.register(sac)
    with pytest.raises(ValueError, match="every algorithm needs a builder"):
        algorithms.register(dataclasses.replace(sac, name="sac2", build=None))  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="on-policy algorithms, and only they, need a policy builder"):
        algorithms.register(dataclasses.replace(ppo, name="ppo2", build_policy=None))
    with pytest.raises(ValueError, match="on-policy algorithms, and only they, need a policy builder"):
        algorithms.register(dataclasses.replace(sac, name="sac2", build_policy=ppo.build_policy))
    with pytest.raises(ValueError, match="'module:function' hook"):
        algorithms.register(dataclasses.replace(ppo, name="ppo2", prepare="robo_rl.hil.reinflow_clone.clone_flow"))
    for name in ("sac-2", "class"):
        with pytest.raises(ValueError, match="a name is an identifier"):
            algorithms.register(dataclasses.replace(sac, name=name))  # type: ignore[arg-type]
    assert ppo.loop_section == "runner" and sac.loop_section == "off_policy"
    assert "ppo2" not in algorithms.names() and "sac2" not in algorithms.names()


def test_every_algorithm_builds_from_its_entry_and_sections() -> None:
    """Every entry's builders read sections that exist, and a `prepare` hook names a function that imports."""
    fields = {field.name for field in dataclasses.fields(ExperimentConfig)}
    for entry in algorithms.entries():
        assert callable(entry.build) and entry.section("build") in fields
        if entry.loop == "on_policy":
            assert callable(entry.build_policy) and entry.section("policy") in fields
        if entry.prepare is not None:
            module, _, name = entry.prepare.partition(":")
            assert callable(getattr(importlib.import_module(module), name)), entry.prepare


def test_the_composition_root_names_no_algorithm() -> None:
    """robo_rl/build.py dispatches through the registry: no registered name appears in it."""
    source = (ROOT / "robo_rl" / "build.py").read_text().lower()
    named = [name for name in algorithms.names() if re.search(rf"\b{name}\b", source)]
    assert not named, f"robo_rl/build.py names {named}: give the registry entry a builder or hook instead"


def test_cli_choices_and_readme_come_from_the_registries() -> None:
    from robo_rl.cli.export import TARGETS as CLI_TARGETS
    from robo_rl.cli.main import build_parser

    parser = build_parser()
    train = parser._subparsers._group_actions[0].choices["train"]  # type: ignore[union-attr]
    algo = next(action for action in train._actions if action.dest == "algo")
    assert tuple(algo.choices) == algorithms.names()
    assert _readme_choices("--algo") == set(algorithms.names())
    assert CLI_TARGETS == ("onnx", *boards.names())
    assert _readme_choices("--target") == set(boards.names())


def test_the_export_targets_are_the_boards() -> None:
    pytest.importorskip("onnx")
    from robo_rl.firmware_export.targets import FIRMWARE_TARGETS, QEMU_TARGETS, TARGETS

    assert TARGETS == ("onnx", *FIRMWARE_TARGETS) and FIRMWARE_TARGETS == boards.names()
    assert set(QEMU_TARGETS) == {name for name, board in boards.BOARDS.items() if board.qemu}


def test_every_board_module_defines_its_board() -> None:
    modules = [info.name for info in pkgutil.iter_modules(boards.__path__)]
    assert len(modules) == len(boards.BOARDS) >= 4
    for module in modules:
        board = boards.BOARDS[module.replace("_", "-")]
        assert isinstance(board, Board) and callable(board.write)
    with pytest.raises(ValueError, match="unknown firmware target 'stm32'; choose one of c, cortex-m4"):
        boards.board("stm32")


def test_readme_lists_every_task_and_preset() -> None:
    """README's task table and preset list are written by docs/readme_lists.py from the registries (run in a
    process of its own, where no test has registered a task): they must be current, and name every task and preset."""
    check = subprocess.run(
        [sys.executable, str(ROOT / "docs" / "readme_lists.py"), "--check"], capture_output=True, text=True, check=False
    )
    assert check.returncode == 0, check.stderr
    table = README[README.index("<!-- tasks:begin") : README.index("<!-- tasks:end")]
    presets = README[README.index("<!-- presets:begin") : README.index("<!-- presets:end")]
    assert all(f"`{name}`" in table for name in robo_rl.sim.names() if not name.startswith("test/"))
    for name in preset_names():
        assert f"`{name}`" in presets, f"README's preset list lacks {name}"
        assert (ROOT / "robo_rl" / "configs" / f"{name}.yaml").is_file(), f"no robo_rl/configs/{name}.yaml"


def test_every_task_folder_declares_its_presets_in_a_literal() -> None:
    """The preset names read from a task folder's source (without importing its simulator) are its `PRESETS`."""
    from robo_rl.sim.presets import presets_of

    modules = preset_modules()
    assert "robo_rl.sim.double_integrator.presets" in modules and "robo_rl.sim.pendulum.presets" in modules
    for module in modules:
        try:
            presets = presets_of(module)
        except ModuleNotFoundError as err:  # a backend the core install lacks (MuJoCo)
            assert not (err.name or "robo_rl").startswith("robo_rl"), err
            continue
        assert declared_presets(module) == list(presets), module
