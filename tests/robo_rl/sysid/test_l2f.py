"""robo_rl.sysid against the outside simulator: fly L2F's native Crazyflie (PyPI l2f) through the excitation
flight (bench/sysid_l2f.py) and fit it; the fitted values must be within a few percent of L2F's own."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest

from robo_rl.sysid import Airframe, identify

pytest.importorskip("l2f", reason="L2F (PyPI l2f) is not installed")


def _bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("sysid_l2f", Path(__file__).parents[3] / "bench" / "sysid_l2f.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_fits_l2f_s_crazyflie_within_a_few_percent() -> None:
    bench = _bench()
    log, truth = bench.l2f_flight(seconds=40.0)
    fit = identify(log, Airframe.from_fields(bench.BASE))
    u = np.linspace(*fit.command_range, 11)
    fitted = np.polynomial.polynomial.polyval(u, [e.value for e in fit.thrust_curve])
    assert np.max(np.abs(fitted / np.polynomial.polynomial.polyval(u, truth["thrust_curve"]) - 1)) < 0.03
    assert fit.motor_rise_time_constant.value == pytest.approx(truth["motor_rise_time_constant"], rel=0.05)
    assert fit.motor_fall_time_constant.value == pytest.approx(truth["motor_fall_time_constant"], rel=0.05)
    assert [e.value for e in fit.inertia] == pytest.approx(truth["inertia"], rel=0.05)
