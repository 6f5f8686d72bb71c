"""ObservationAssembler: fields by name into policy order, declared unit conversions, action history."""

from __future__ import annotations

import math

import numpy as np
import pytest

from robo_rl.real.assembler import MissingFieldError, ObservationAssembler
from robo_rl.real.profile import ObservationField, load_profile

FIELDS = (
    ObservationField("heading", "imu.yaw", "rad", source_unit="deg"),
    ObservationField("speed", "odom.speed", "m/s", source_unit="km/h"),
    ObservationField("height", "range.z", "m"),
    ObservationField("last_drive", "previous_action[0].drive", "1"),
    ObservationField("drive_before", "previous_action[1].drive", "1"),
)


def _assembler() -> ObservationAssembler:
    return ObservationAssembler(FIELDS, action_names=("steer", "drive"), safe_action=(0.0, -0.5))


def test_policy_order_and_unit_conversion() -> None:
    obs = _assembler()({"range.z": 2.5, "odom.speed": 36.0, "imu.yaw": 90.0, "unused": 1.0})
    assert obs.dtype == np.float32
    np.testing.assert_allclose(obs, [math.pi / 2, 10.0, 2.5, -0.5, -0.5], rtol=1e-6)


def test_action_history_starts_at_the_safe_command_and_shifts() -> None:
    assembler = _assembler()
    fields = {"range.z": 0.0, "odom.speed": 0.0, "imu.yaw": 0.0}
    assembler.record_action(np.array([0.1, 0.3]))
    np.testing.assert_allclose(assembler(fields)[3:], [0.3, -0.5])
    assembler.record_action(np.array([0.2, 0.7]))
    np.testing.assert_allclose(assembler(fields)[3:], [0.7, 0.3], rtol=1e-6)


def test_missing_fields_are_all_named() -> None:
    with pytest.raises(MissingFieldError) as info:
        _assembler()({"range.z": 1.0})
    assert info.value.missing == ("imu.yaw", "odom.speed")
    assert str(info.value) == "missing observation fields: imu.yaw, odom.speed"


def test_record_action_checks_shape() -> None:
    with pytest.raises(ValueError, match=r"action shape \(3,\), expected \(2,\)"):
        _assembler().record_action(np.zeros(3))


def test_rc_car_profile_reads_two_steps_of_history() -> None:
    profile = load_profile("rc_car")
    assembler = ObservationAssembler(profile.observations, profile.action_names, profile.safe_action)
    fields = {o.source: float(i) for i, o in enumerate(profile.observations) if not o.source.startswith("previous")}
    assembler.record_action(np.array([0.25, 0.5]))
    assembler.record_action(np.array([-0.25, 1.0]))
    obs = assembler(fields)
    np.testing.assert_array_equal(obs[:27], np.arange(27, dtype=np.float32))
    np.testing.assert_array_equal(obs[27:], [-0.25, 1.0, 0.25, 0.5])


INTEGRAL_FIELDS = (
    ObservationField("error_x", "state.error.x", "m"),
    ObservationField("error_integral_x", "integral(state.error.x)", "m*s"),
    ObservationField("error_integral_y", "integral(state.error.y)", "m*s", source_unit="cm"),
)
INTEGRAL_BOUNDS = (math.inf, 0.25, 0.05)


def test_integral_sources_follow_the_training_rule_over_committed_periods() -> None:
    """I_k = clip(I_{k-1} + dt * e_k, -L, L) with L the policy's obs_high (hand-computed, dt = 0.1 s); a period
    is kept only once committed (its command was the policy's), and a reset starts again from 0."""
    assembler = ObservationAssembler(INTEGRAL_FIELDS, ("u",), (0.0,), dt=0.1, obs_high=INTEGRAL_BOUNDS)
    fields = {"state.error.x": 1.0, "state.error.y": 20.0}  # y in cm: 0.2 m
    np.testing.assert_allclose(assembler(fields), [1.0, 0.1, 0.02], rtol=1e-6)
    np.testing.assert_allclose(assembler(fields), [1.0, 0.1, 0.02], rtol=1e-6)  # not committed: not kept
    assembler.commit_integrals()
    np.testing.assert_allclose(assembler(fields), [1.0, 0.2, 0.04], rtol=1e-6)
    assembler.commit_integrals()
    np.testing.assert_allclose(assembler(fields), [1.0, 0.25, 0.05], rtol=1e-6)  # 0.3 and 0.06, clipped to L
    assembler.commit_integrals()
    np.testing.assert_allclose(assembler({**fields, "state.error.x": -1.0}), [-1.0, 0.15, 0.05], rtol=1e-6)
    assembler.commit_integrals()
    np.testing.assert_allclose(assembler.integrals, [0.15, 0.05])
    assembler.reset_integrals()
    np.testing.assert_allclose(assembler(fields), [1.0, 0.1, 0.02], rtol=1e-6)


def test_a_failed_or_non_finite_period_leaves_the_integral_as_it_was() -> None:
    assembler = ObservationAssembler(INTEGRAL_FIELDS, ("u",), (0.0,), dt=0.1, obs_high=INTEGRAL_BOUNDS)
    assembler({"state.error.x": 1.0, "state.error.y": 0.0})
    assembler.commit_integrals()
    with pytest.raises(MissingFieldError, match=r"state\.error\.y"):
        assembler({"state.error.x": 1.0})
    assembler.commit_integrals()  # nothing pending: a no-op
    obs = assembler({"state.error.x": math.nan, "state.error.y": 0.0})
    assert math.isnan(obs[1])  # the policy's observation is non-finite: the safety filter sends the safe command
    np.testing.assert_allclose(assembler.integrals, [0.1, 0.0])


def test_integral_sources_need_the_period_and_a_positive_bound() -> None:
    with pytest.raises(ValueError, match=r"integrate: the assembler needs the control period and obs_high"):
        ObservationAssembler(INTEGRAL_FIELDS, ("u",), (0.0,))
    with pytest.raises(ValueError, match=r"integral's bound \(obs_high\) must be > 0"):
        ObservationAssembler(INTEGRAL_FIELDS, ("u",), (0.0,), dt=0.1, obs_high=(1.0, 0.0, 1.0))
