"""The loop settings live in `runner.loop` / `off_policy.loop`; configs written before keep loading (flat keys)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import yaml

from robo_rl.api.configs import preset, resolve_config
from robo_rl.api.runs import read_run_config
from robo_rl.config import ConfigError, apply_overrides, dump_yaml, from_dict, load_yaml, to_dict
from robo_rl.experiment import ExperimentConfig
from robo_rl.runners.loop_config import LOOP_FIELDS, LoopConfig, nest_loop_keys
from robo_rl.runners.off_policy import OFF_POLICY_LOOP, OffPolicyRunnerConfig
from robo_rl.runners.run_dir import RunDirectory

OLD_QUADROTOR_HOVER_SAC = """\
name: quadrotor_hover_sac
algo: sac
task:
  name: quadrotor/hover
  num_envs: 64
  eval_params:
  - backend=auto
sac:
  actor_hidden: [64, 64]
  critic_hidden: [128, 128]
off_policy:
  max_iterations: 100000
  learning_starts: 10000
  updates_per_step: 2
  batch_size: 512
  buffer_capacity: 2000000
  target_success_rate: 0.95
  eval_interval: 250
  eval_min_train_success: 0.5
  eval_episodes: 1000
"""
"""robo_rl/configs/quadrotor_hover_sac.yaml as it was shipped before `LoopConfig`: the loop keys flat."""


def _flattened(data: dict[str, Any]) -> dict[str, Any]:
    """A config's plain data as configs before `LoopConfig` wrote it: every runner section's loop keys flat."""
    out = dict(data)
    for section in ("runner", "off_policy"):
        nested = dict(out[section])
        out[section] = {**nested.pop("loop"), **nested}
    return out


def test_flat_loop_keys_move_into_loop() -> None:
    section = {"max_iterations": 7, "learning_starts": 3, "loop": {"eval_interval": 2, "max_iterations": 1}}
    assert nest_loop_keys(section) == {"learning_starts": 3, "loop": {"eval_interval": 2, "max_iterations": 7}}
    assert nest_loop_keys({"eval_episodes": 4}) == {"loop": {"eval_episodes": 4}}


def test_a_current_section_comes_back_equal() -> None:
    section = to_dict(OffPolicyRunnerConfig())
    assert nest_loop_keys(section) == section
    assert nest_loop_keys({"loop": None, "max_iterations": 3}) == {"loop": None, "max_iterations": 3}


def test_loop_fields_are_the_eleven_shared_settings() -> None:
    assert LOOP_FIELDS == {
        "max_iterations",
        "target_return",
        "target_success_rate",
        "eval_interval",
        "eval_min_train_success",
        "eval_sequential",
        "eval_episodes",
        "eval_precheck_episodes",
        "eval_precheck_margin",
        "save_interval",
        "save_every_s",
    }


def test_an_old_flat_preset_file_loads_into_the_nested_config(tmp_path: Path) -> None:
    old = tmp_path / "hover.yaml"
    old.write_text(OLD_QUADROTOR_HOVER_SAC, encoding="utf-8")
    assert load_yaml(ExperimentConfig, old).task.eval_config == {"backend": "auto"}  # eval_params upgraded too
    cfg = resolve_config(str(old), [])
    assert cfg == preset("quadrotor_hover_sac")
    assert cfg.off_policy.loop.eval_episodes == 1000 and cfg.off_policy.loop.save_interval == 10_000


def test_an_old_run_directory_config_loads(tmp_path: Path) -> None:
    for cfg in (preset("pendulum_ppo"), preset("pendulum_sac")):
        run = RunDirectory.create(tmp_path, cfg.name, 0, yaml.safe_dump(_flattened(to_dict(cfg))), "test")
        assert "loop" not in yaml.safe_load(run.config_file.read_text(encoding="utf-8"))["runner"]
        assert read_run_config(run) == cfg


def test_old_override_keys_still_set_the_loop() -> None:
    old = apply_overrides(preset("pendulum_ppo"), ["runner.max_iterations=7", "off_policy.eval_interval=3"])
    new = apply_overrides(preset("pendulum_ppo"), ["runner.loop.max_iterations=7", "off_policy.loop.eval_interval=3"])
    assert old == new
    assert new.runner.loop.max_iterations == 7 and new.off_policy.loop.eval_interval == 3
    assert new.loop == replace(preset("pendulum_ppo").runner.loop, max_iterations=7)


def test_a_partial_loop_section_keeps_the_runner_s_own_defaults() -> None:
    """`off_policy.loop` with one key: the others are the off-policy defaults, not `LoopConfig`'s (on-policy)."""
    cfg = from_dict(ExperimentConfig, {"off_policy": {"loop": {"max_iterations": 5}}})
    assert cfg.off_policy.loop == replace(OFF_POLICY_LOOP, max_iterations=5)
    assert cfg.runner.loop == LoopConfig()
    assert OFF_POLICY_LOOP.eval_interval != LoopConfig().eval_interval  # else this test would prove nothing


def test_generated_configs_use_the_nested_keys(tmp_path: Path) -> None:
    dump_yaml(preset("pendulum_sac"), tmp_path / "config.yaml")
    data = yaml.safe_load((tmp_path / "config.yaml").read_text(encoding="utf-8"))
    for section in ("runner", "off_policy"):
        assert not LOOP_FIELDS & set(data[section]) and set(data[section]["loop"]) == LOOP_FIELDS


def test_a_bad_old_key_value_names_the_nested_path() -> None:
    with pytest.raises(ConfigError, match=r"^runner\.loop\.max_iterations: expected int"):
        apply_overrides(ExperimentConfig(), ["runner.max_iterations=fast"])
