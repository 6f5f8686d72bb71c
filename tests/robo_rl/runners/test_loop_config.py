"""The loop settings live in `runner.loop` / `off_policy.loop`."""

from __future__ import annotations

from dataclasses import fields, replace
from pathlib import Path

import pytest
import yaml

from robo_rl.api.configs import preset
from robo_rl.config import ConfigError, apply_overrides, dump_yaml, from_dict
from robo_rl.experiment import ExperimentConfig
from robo_rl.runners.loop_config import LoopConfig
from robo_rl.runners.off_policy_config import OFF_POLICY_LOOP

LOOP_FIELDS = {field.name for field in fields(LoopConfig)}


def test_loop_fields_are_the_twelve_shared_settings() -> None:
    assert LOOP_FIELDS == {
        "max_iterations",
        "target_return",
        "target_success_rate",
        "max_eval_cost",
        "eval_interval",
        "eval_min_train_success",
        "eval_sequential",
        "eval_episodes",
        "eval_precheck_episodes",
        "eval_precheck_margin",
        "save_interval",
        "save_every_s",
    }


def test_override_keys_set_the_loop() -> None:
    new = apply_overrides(preset("pendulum_ppo"), ["runner.loop.max_iterations=7", "off_policy.loop.eval_interval=3"])
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


def test_a_loop_key_outside_loop_is_an_unknown_key() -> None:
    with pytest.raises(ConfigError, match=r"^off_policy\.eval_interval: unknown key"):
        apply_overrides(ExperimentConfig(), ["off_policy.eval_interval=3"])
    with pytest.raises(ConfigError, match=r"^runner\.max_iterations: unknown key"):
        apply_overrides(ExperimentConfig(), ["runner.max_iterations=5"])
    with pytest.raises(ConfigError, match=r"^runner\.loop\.max_iterations: expected int"):
        apply_overrides(ExperimentConfig(), ["runner.loop.max_iterations=fast"])
