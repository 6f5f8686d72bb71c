"""Task registry: build any simulated task by name, with config fields overridden by keyword.

A factory is an env class (or function) called as `factory(num_envs, device=..., config=..., seed=...)`
whose `config` parameter defaults to a frozen config dataclass instance; that default is the task's config,
and `make` overrides its fields with `dataclasses.replace`. A factory may be registered as an import path
`"package.module:Name"`: it is imported on first use, so that `import robo_rl.sim` does not load every backend
(MuJoCo, PyBullet, matplotlib) and a task whose backend is missing fails only when it is built.
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import torch

from robo_rl.config import ConfigError, apply_overrides, merge
from robo_rl.envs import BatchedEnv

EnvFactory = Callable[..., BatchedEnv]

_TASKS: dict[str, tuple[EnvFactory, Any] | str] = {}
_ABOUT: dict[str, tuple[str, str]] = {}
_VEHICLE: dict[str, str] = {}


def register(name: str, factory: EnvFactory | str, backend: str = "torch", about: str = "", vehicle: str = "") -> None:
    """Register `factory` (or its import path `"module:Name"`, imported on first use) under `name`; its
    `config` parameter default is the task's default config. `backend` and `about` are README's task table row
    (tasks with the same pair share a row; docs/readme_lists.py writes it). `vehicle`: import path of the task's
    vehicle card, a function of its config returning a JSON object (`robo_rl.artifact`'s `robo_rl.vehicle`); ""
    for a task that states none."""
    if name in _TASKS:
        raise ValueError(f"task {name!r} is already registered")
    _TASKS[name] = factory if isinstance(factory, str) else (factory, _default_config(factory))
    _ABOUT[name] = (backend, about)
    if vehicle:
        _VEHICLE[name] = vehicle


def vehicle_card(name: str, config: Any) -> dict[str, Any] | None:
    """Task `name`'s vehicle card for its config `config` (`task_settings`), or None when the task states none."""
    _entry(name)
    path = _VEHICLE.get(name)
    if path is None:
        return None
    module, _, attribute = path.partition(":")
    card: dict[str, Any] = getattr(importlib.import_module(module), attribute)(task_settings(name, config))
    return card


def about(name: str) -> tuple[str, str]:
    """(backend, one-line description) of task `name`, as registered (without importing the task)."""
    _known(name)
    return _ABOUT[name]


def make(
    name: str,
    num_envs: int,
    device: str | torch.device = "cpu",
    seed: int | None = None,
    params: Sequence[str] = (),
    config: Any = None,
    **overrides: Any,
) -> BatchedEnv:
    """Build `num_envs` copies of task `name` on `device`.

    `config` is the task's config (an instance of its config class, a mapping of changes to its defaults, or None:
    the defaults; `task_settings`). `params` are `"key=value"` strings laid over it, nested keys dotted
    (`"randomization.mass=0.2"`): text from a command line, a profile or a ROS parameter, parsed and validated like
    CLI `--set` overrides (ConfigError naming the key). `overrides` then replace top-level fields by keyword.
    """
    factory, _ = _entry(name)
    default = task_settings(name, config)
    if params:
        try:
            default = apply_overrides(default, params)
        except ConfigError as err:
            raise ConfigError(f"task params of {name!r}: {err}") from None
    valid = [field.name for field in dataclasses.fields(default)]
    unknown = sorted(set(overrides) - set(valid))
    if unknown:
        raise ValueError(f"unknown config field(s) {unknown} for task {name!r}; valid fields: {valid}")
    config = dataclasses.replace(default, **overrides)
    return factory(num_envs, device=device, config=config, seed=seed)


def task_settings(name: str, config: Any, key: str = "task.config") -> Any:
    """Task `name`'s config from `config`: its defaults for None, an instance of its config class as it is, a mapping
    of changes laid over the defaults (validated: ConfigError naming `key` and the field)."""
    default = _entry(name)[1]
    if config is None:
        return default
    if isinstance(config, Mapping):
        return merge(default, config, key)
    if type(config) is not type(default):
        raise ConfigError(
            f"{key}: task {name!r} takes a {type(default).__name__}, got a {type(config).__name__} (another task's?)"
        )
    return config


def with_fast_step(name: str, params: Sequence[str]) -> list[str]:
    """`params` with `backend=auto` first when task `name` has a numba step (a `backend` field) and `params` do not
    choose one: the fused step where it applies, the torch step elsewhere. For one env stepped in real time
    (sim_bridge), where the torch step's per-op overhead dominates (0.9 ms vs 0.03 ms for the quadrotor)."""
    fields = {field.name for field in dataclasses.fields(default_config(name))}
    chosen = any(p.split("=", 1)[0].strip() == "backend" for p in params)
    return list(params) if "backend" not in fields or chosen else ["backend=auto", *params]


def default_config(name: str) -> Any:
    """The default config dataclass instance of task `name` (what `make` overrides)."""
    return _entry(name)[1]


def in_registration_order() -> list[str]:
    """Registered task names in the order they were registered (README's task table)."""
    return list(_TASKS)


def names() -> list[str]:
    """Registered task names, sorted."""
    return sorted(_TASKS)


def _known(name: str) -> None:
    """ValueError naming the registered tasks where `name` is not one."""
    if name not in _TASKS:
        raise ValueError(f"unknown task {name!r}; registered tasks: {names()}")


def _entry(name: str) -> tuple[EnvFactory, Any]:
    """(factory, default config) of `name`, importing a factory registered by path."""
    _known(name)
    entry = _TASKS[name]
    if isinstance(entry, str):
        module, _, attribute = entry.partition(":")
        factory = getattr(importlib.import_module(module), attribute)
        entry = _TASKS[name] = (factory, _default_config(factory))
    return entry


def _default_config(factory: EnvFactory) -> Any:
    parameter = inspect.signature(factory).parameters.get("config")
    default = None if parameter is None else parameter.default
    if not dataclasses.is_dataclass(default) or isinstance(default, type):
        raise TypeError(f"{factory!r} needs a `config` parameter defaulting to a config dataclass instance")
    return default
