from __future__ import annotations

import dataclasses
import hashlib
from dataclasses import dataclass, field
from typing import Literal, Optional

import pytest
import yaml

from robo_rl.config import (
    ConfigError,
    apply_overrides,
    config_hash,
    dump_yaml,
    from_dict,
    load_yaml,
    to_dict,
)

# This file uses `from __future__ import annotations`, so every annotation below is a string that from_dict
# must resolve; `Plain` (made by make_dataclass) carries real type objects instead.


@dataclass(frozen=True)
class PPO:
    learning_rate: float = 1e-3
    clip_param: float = 0.2
    num_epochs: int = 5
    schedule: Literal["fixed", "adaptive"] = "adaptive"
    target_kl: float | None = 0.01


@dataclass(frozen=True)
class Runner:
    max_iterations: int = 1000
    experiment: str = "hover"
    log: bool = True
    seed: Optional[int] = None  # noqa: UP045 - the typing.Optional spelling must work too
    hidden_dims: tuple[int, ...] = (64, 64)
    obs_clip: tuple[float, ...] = (-5.0, 5.0)
    image_shape: tuple[int, int] = (64, 48)


@dataclass(frozen=True)
class Train:
    ppo: PPO = field(default_factory=PPO)
    runner: Runner = field(default_factory=Runner)


@dataclass(frozen=True)
class Positive:
    gain: float = 1.0

    def __post_init__(self) -> None:
        if self.gain <= 0:
            raise ValueError(f"gain must be > 0, got {self.gain}")


Plain = dataclasses.make_dataclass("Plain", [("x", int, 1)], frozen=True)

PPO_KEYS = "clip_param, learning_rate, num_epochs, schedule, target_kl"


def _error(fn, *args) -> str:
    with pytest.raises(ConfigError) as info:
        fn(*args)
    message = str(info.value)
    assert "\n" not in message
    return message


def test_round_trip_through_dict_and_yaml(tmp_path):
    cfg = Train(
        ppo=PPO(learning_rate=3e-4, schedule="fixed", target_kl=None),
        runner=Runner(seed=7, hidden_dims=(256, 128, 64), obs_clip=(-1.5, 2.0), image_shape=(8, 4)),
    )
    data = to_dict(cfg)
    assert data["runner"]["hidden_dims"] == [256, 128, 64]
    assert data["ppo"]["target_kl"] is None
    assert from_dict(Train, data) == cfg
    assert from_dict(Train, yaml.safe_load(yaml.safe_dump(data))) == cfg
    dump_yaml(cfg, tmp_path / "train.yaml")
    assert load_yaml(Train, tmp_path / "train.yaml") == cfg


def test_missing_keys_keep_nested_defaults():
    cfg = from_dict(Train, {"ppo": {"clip_param": 0.1}})
    assert cfg == Train(ppo=PPO(clip_param=0.1), runner=Runner())
    assert from_dict(Train, {}) == Train()


def test_empty_file_gives_defaults(tmp_path):
    path = tmp_path / "empty.yaml"
    path.write_text("")
    assert load_yaml(Train, path) == Train()


def test_plain_annotations_without_future_import():
    assert from_dict(Plain, {"x": 2}) == Plain(x=2)
    assert _error(from_dict, Plain, {"x": "two"}) == "x: expected int, got str 'two'"


def test_unknown_key_names_dotted_path_and_suggests_close_match():
    message = _error(from_dict, Train, {"ppo": {"lerning_rate": 1e-3}})
    assert message == f"ppo.lerning_rate: unknown key (did you mean 'learning_rate'? valid: {PPO_KEYS})"


def test_unknown_key_without_close_match_lists_valid_keys():
    message = _error(from_dict, Train, {"optimizer": {}})
    assert message == "optimizer: unknown key (valid: ppo, runner)"


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        ({"ppo": {"learning_rate": "fast"}}, "ppo.learning_rate: expected float, got str 'fast'"),
        ({"ppo": {"learning_rate": "0.5"}}, "ppo.learning_rate: expected float, got str '0.5'"),
        ({"ppo": {"num_epochs": 0.5}}, "ppo.num_epochs: expected int, got float 0.5"),
        ({"ppo": {"num_epochs": True}}, "ppo.num_epochs: expected int, got bool True"),
        ({"ppo": {"clip_param": False}}, "ppo.clip_param: expected float, got bool False"),
        ({"ppo": {"clip_param": [0.1, 0.2]}}, "ppo.clip_param: expected float, got list [0.1, 0.2]"),
        ({"ppo": {"clip_param": None}}, "ppo.clip_param: expected float, got null"),
        ({"ppo": {"target_kl": "x"}}, "ppo.target_kl: expected float, got str 'x'"),
        ({"runner": {"experiment": 3}}, "runner.experiment: expected str, got int 3"),
        ({"runner": {"log": "yes please"}}, "runner.log: expected bool, got str 'yes please'"),
        ({"ppo": 0.1}, "ppo: expected a mapping, got float 0.1"),
        ({"runner": {"hidden_dims": 64}}, "runner.hidden_dims: expected a list, got int 64"),
        ({"runner": {"hidden_dims": [64, 0.5]}}, "runner.hidden_dims[1]: expected int, got float 0.5"),
        ({"runner": {"image_shape": [64]}}, "runner.image_shape: expected 2 items, got 1"),
    ],
)
def test_wrong_types_name_the_key_path(data, expected):
    assert _error(from_dict, Train, data) == expected


def test_top_level_must_be_a_mapping():
    assert _error(from_dict, Train, [1, 2]) == "(top level): expected a mapping, got list [1, 2]"


def test_numbers_are_converted_to_the_field_type():
    cfg = from_dict(Train, {"ppo": {"learning_rate": 1, "num_epochs": 3.0}})
    assert cfg.ppo.learning_rate == 1.0 and isinstance(cfg.ppo.learning_rate, float)
    assert cfg.ppo.num_epochs == 3 and isinstance(cfg.ppo.num_epochs, int)


def test_exponent_without_dot_is_read_as_number():
    data = yaml.safe_load("ppo:\n  learning_rate: 1e-3\nrunner:\n  max_iterations: 1e6\n")
    assert data["ppo"]["learning_rate"] == "1e-3"  # the PyYAML (YAML 1.1) quirk being worked around
    cfg = from_dict(Train, data)
    assert cfg.ppo.learning_rate == 0.001
    assert cfg.runner.max_iterations == 1_000_000 and isinstance(cfg.runner.max_iterations, int)
    assert _error(from_dict, Train, {"runner": {"max_iterations": "1e-3"}}) == (
        "runner.max_iterations: expected int, got str '1e-3'"
    )


def test_literal_values():
    assert from_dict(Train, {"ppo": {"schedule": "fixed"}}).ppo.schedule == "fixed"
    message = _error(from_dict, Train, {"ppo": {"schedule": "cosine"}})
    assert message == "ppo.schedule: expected one of 'fixed', 'adaptive', got str 'cosine'"


def test_optional_accepts_none_and_the_inner_type():
    cfg = from_dict(Train, {"ppo": {"target_kl": None}, "runner": {"seed": 3}})
    assert cfg.ppo.target_kl is None
    assert cfg.runner.seed == 3
    assert from_dict(Train, {"runner": {"seed": None}}).runner.seed is None


def test_tuple_fields_become_tuples():
    cfg = from_dict(Train, {"runner": {"hidden_dims": [32], "obs_clip": [-1, 1.5], "image_shape": [3, 2]}})
    assert cfg.runner.hidden_dims == (32,)
    assert cfg.runner.obs_clip == (-1.0, 1.5) and isinstance(cfg.runner.obs_clip[0], float)
    assert cfg.runner.image_shape == (3, 2)


def test_post_init_error_becomes_config_error_with_path():
    assert _error(from_dict, Positive, {"gain": -1}) == "(top level): gain must be > 0, got -1.0"


def test_overrides_set_nested_values():
    cfg = apply_overrides(
        Train(),
        [
            "ppo.learning_rate=3e-4",
            "runner.max_iterations=100",
            "runner.hidden_dims=[32, 16]",
            "ppo.target_kl=null",
        ],
    )
    expected = Train(
        ppo=PPO(learning_rate=3e-4, target_kl=None), runner=Runner(max_iterations=100, hidden_dims=(32, 16))
    )
    assert cfg == expected
    assert apply_overrides(cfg, []) == cfg


def test_overrides_are_type_checked_like_yaml():
    assert _error(apply_overrides, Train(), ["runner.max_iterations=fast"]) == (
        "runner.max_iterations: expected int, got str 'fast'"
    )
    assert _error(apply_overrides, Train(), ["ppo.lerning_rate=1"]) == (
        f"ppo.lerning_rate: unknown key (did you mean 'learning_rate'? valid: {PPO_KEYS})"
    )
    assert _error(apply_overrides, Train(), ["pp.learning_rate=1"]) == (
        "pp: unknown key (did you mean 'ppo'? valid: ppo, runner)"
    )


@pytest.mark.parametrize(
    ("override", "expected"),
    [
        ("ppo.learning_rate", "'ppo.learning_rate': malformed override, expected 'dotted.key=value'"),
        ("=3", "'=3': malformed override, expected 'dotted.key=value'"),
        ("ppo.clip_param.x=1", "ppo.clip_param: is a float, not a section; cannot set ppo.clip_param.x"),
    ],
)
def test_malformed_overrides(override, expected):
    assert _error(apply_overrides, Train(), [override]) == expected


def test_override_with_bad_yaml_value_names_the_key():
    message = _error(apply_overrides, Train(), ["ppo.clip_param=[1"])
    assert message.startswith("ppo.clip_param: cannot parse override value '[1': line 1, column 3: ")


def test_config_hash_is_stable_and_tracks_values():
    assert config_hash(Plain(x=1)) == hashlib.sha256(b'{"x":1}').hexdigest()[:12]
    assert config_hash(Train()) == config_hash(from_dict(Train, to_dict(Train())))
    assert config_hash(Train(ppo=PPO(learning_rate=1))) == config_hash(Train(ppo=PPO(learning_rate=1.0)))
    assert config_hash(Train(ppo=PPO(clip_param=0.3))) != config_hash(Train())
    assert len(config_hash(Train())) == 12


def test_load_yaml_syntax_error_is_one_line_with_file_and_line(tmp_path):
    path = tmp_path / "broken.yaml"
    path.write_text("ppo:\n  learning_rate: [1e-3\n  clip_param: 0.2\n")
    message = _error(load_yaml, Train, path)
    assert message.startswith(f"{path}: line ")


def test_load_yaml_prefixes_value_errors_with_file(tmp_path):
    path = tmp_path / "x.yaml"
    path.write_text("ppo:\n  clip_param: wide\n")
    assert _error(load_yaml, Train, path) == f"{path}: ppo.clip_param: expected float, got str 'wide'"


def test_set_values_sets_typed_values_without_text_in_between() -> None:
    from robo_rl.config import set_values
    from robo_rl.experiment import ExperimentConfig

    cfg = set_values(ExperimentConfig(), {"task.num_envs": 64, "seed": 3, "task.device": "null"})
    assert (cfg.task.num_envs, cfg.seed, cfg.task.device) == (64, 3, "null")  # "null" stays a string
    with pytest.raises(ConfigError, match=r"task\.num_envs: expected int, got str"):
        set_values(ExperimentConfig(), {"task.num_envs": "64"})
    with pytest.raises(ConfigError, match="nmu_envs"):
        set_values(ExperimentConfig(), {"task.nmu_envs": 64})
