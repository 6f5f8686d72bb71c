"""Typed task configs at the edge (robo_rl.api.configs): a task's settings arrive as YAML or `--set` text and leave
as the task's own config class; evaluation follows the training settings it changes."""

from __future__ import annotations

from dataclasses import replace

import pytest

from robo_rl.api.configs import override, preset, resolve_task
from robo_rl.config import ConfigError
from robo_rl.sim.pendulum import PendulumConfig
from robo_rl.sim.quadrotor import HoverConfig


def test_the_task_shorthand_is_the_task_config_key() -> None:
    short = override(preset("pendulum_ppo"), ["task.max_torque=2.5", "task.num_envs=4"])
    long = override(preset("pendulum_ppo"), ["task.config.max_torque=2.5", "task.num_envs=4"])
    assert short == long
    assert short.task.config == PendulumConfig(max_torque=2.5) and short.task.num_envs == 4


def test_a_change_to_the_training_settings_reaches_the_evaluation() -> None:
    """quadrotor_hover_ppo trains with a randomized thrust and evaluates with the nominal one, both on the numba step
    where it applies; a new frame must reach both."""
    cfg = override(preset("quadrotor_hover_ppo"), ["task.frame=crazyflie_2_1_bare_2023", "task.alive_reward=5"])
    assert isinstance(cfg.task.eval_config, HoverConfig)
    assert cfg.task.config.frame == cfg.task.eval_config.frame == "crazyflie_2_1_bare_2023"
    assert cfg.task.eval_config.alive_reward == 5.0 and cfg.task.eval_config.backend == "auto"
    assert cfg.task.config.backend == "auto"
    assert (
        cfg.task.eval_config.randomization.thrust_coefficient == 0.0 < cfg.task.config.randomization.thrust_coefficient
    )


def test_a_bad_task_setting_names_its_key() -> None:
    with pytest.raises(ConfigError, match=r"task\.config: no_such_field: unknown key"):
        override(preset("pendulum_ppo"), ["task.no_such_field=1"])
    with pytest.raises(ConfigError, match=r"task\.config: max_torque: expected float"):
        override(preset("pendulum_ppo"), ["task.max_torque=strong"])
    with pytest.raises(ConfigError, match=r"params: unknown key"):
        override(preset("pendulum_ppo"), ["task.params=[max_torque=2.5]"])
    hover_on_pendulum = replace(preset("pendulum_ppo").task, config=HoverConfig())
    with pytest.raises(ConfigError, match="task 'pendulum' takes a PendulumConfig, got a HoverConfig"):
        resolve_task(replace(preset("pendulum_ppo"), task=hover_on_pendulum))
    with pytest.raises(ConfigError, match=r"task\.name: unknown task 'nope'"):
        override(preset("pendulum_ppo"), ["task.name=nope"])
