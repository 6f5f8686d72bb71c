"""A checkpoint holds the env's own state (exact resume), and an env that cannot give one says so: a task that
forgets `state_dict` must not silently lose exact resume."""

from __future__ import annotations

import functools

import pytest

from robo_rl.sim import names
from robo_rl.sim.registry import _entry
from robo_rl.storage.checkpoint import env_state


class _Forgot:
    """A task without state_dict that declares nothing."""


class _Robot:
    resumable = False


class _Simulator:
    def state_dict(self) -> dict[str, int]:
        return {"steps": 3}


def test_env_state_is_the_state_dict_or_none_when_declared_and_an_error_otherwise() -> None:
    assert env_state(_Simulator()) == {"steps": 3}
    assert env_state(_Robot()) is None
    with pytest.raises(TypeError, match="_Forgot has no state_dict"):
        env_state(_Forgot())


@pytest.mark.parametrize("name", names())
def test_every_registered_task_can_be_resumed_or_says_it_cannot(name: str) -> None:
    factory = _entry(name)[0]
    cls = factory.func if isinstance(factory, functools.partial) else factory
    resumable = callable(getattr(cls, "state_dict", None)) and callable(getattr(cls, "load_state_dict", None))
    assert resumable or getattr(cls, "resumable", True) is False, f"{name}: {cls.__name__} neither"
