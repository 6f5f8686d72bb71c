"""Fixtures of the sysid tests: the reference quadrotor (reference_quadrotor.py, loaded by path since the tests
import in importlib mode) and the logs it flies, made once per session."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

from robo_rl.sysid.excitation import ExcitationPlan
from robo_rl.sysid.flight_log import FlightLog


def _load() -> ModuleType:
    name = "sysid_reference_quadrotor"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, Path(__file__).with_name("reference_quadrotor.py"))
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


@pytest.fixture(scope="session")
def reference() -> ModuleType:
    """The reference quadrotor module: TRUE_FIELDS, BASE_FIELDS, ReferenceQuadrotor, reference_flight."""
    return _load()


@pytest.fixture(scope="session")
def flights() -> ModuleType:
    """bench/sysid_l2f.py: the excitation flights on L2F and RotorPy, and their base frames."""
    spec = importlib.util.spec_from_file_location("sysid_l2f", Path(__file__).parents[3] / "bench" / "sysid_l2f.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="session")
def excited_log() -> FlightLog:
    """60 s of the full excitation plan, with sensor noise."""
    return _load().reference_flight(ExcitationPlan(), noise=1.0)


@pytest.fixture(scope="session")
def hover_log() -> FlightLog:
    """60 s of hovering without excitation, with sensor noise (the feedback reacts to it)."""
    return _load().reference_flight(ExcitationPlan(axes=()), noise=1.0)
