"""A Crazyflie's own logs as cfclient writes them (robo_rl.sysid.cfclient_log) and the firmware's sensor filters
(robo_rl.sysid.crazyflie_filters).

Sources: cfclient's log writer (bitcraze/crazyflie-clients-python, logdatawriter.py: one CSV per log block, a
`Timestamp` column then the block's variables); the firmware (bitcraze/crazyflie-firmware): sensors_bmi088_bmp388.c
filters acc at 30 Hz and gyro at 80 Hz at 1 kHz with filter.c's 2-pole low-pass, stabilizer.c's compressState packs
stateEstimateZ (mm, mm/s, mrad/s with ratePitch = -gyro.y, the quaternion (x, y, z, w) by quatcompress.h). The
filter is checked against SciPy's Butterworth design; the flight's 1 kHz IMU goes through SciPy's lfilter.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest
from scipy.signal import butter, group_delay, lfilter, lfilter_zi

from robo_rl.cli.main import main
from robo_rl.sysid import Airframe, FlightLog, identify
from robo_rl.sysid.cfclient_log import quaternion_decompress, read_cfclient_log
from robo_rl.sysid.crazyflie_filters import ACCEL_DELAY, GYRO_DELAY, lpf2p, without_firmware_filters
from robo_rl.sysid.excitation import ExcitationPlan, fly_excitation


def test_the_firmware_filter_is_scipy_s_butterworth_and_its_delay() -> None:
    for cutoff, delay in ((30.0, ACCEL_DELAY), (80.0, GYRO_DELAY)):
        b, a = lpf2p(cutoff)
        reference_b, reference_a = butter(2, cutoff, fs=1000.0)
        np.testing.assert_allclose(b, reference_b, atol=1e-15)
        np.testing.assert_allclose(a, reference_a, atol=1e-15)
        assert delay == pytest.approx(group_delay((b, a), w=[1e-4], fs=1000.0)[1][0] / 1000.0, rel=1e-6)
    assert 7.0e-3 < ACCEL_DELAY < 8.0e-3 and 2.5e-3 < GYRO_DELAY < 3.0e-3


def quatcompress(q: tuple[float, float, float, float]) -> int:
    """The firmware's quatcompress (quatcompress.h), restated: the largest element's index, then each other
    element's sign (flipped when the largest is negative) and 9-bit magnitude, rounded."""
    largest = max(range(4), key=lambda i: abs(q[i]))
    negate = q[largest] < 0
    packed = largest
    for i in range(4):
        if i != largest:
            negative = (q[i] < 0) ^ negate
            magnitude = int(511 * abs(q[i]) / math.sqrt(0.5) + 0.5)
            packed = (packed << 10) | (int(negative) << 9) | magnitude
    return packed


def test_quaternion_decompress_against_hand_values_and_the_firmware_s_packing() -> None:
    assert quaternion_decompress(3 << 30) == (0.0, 0.0, 0.0, 1.0)  # identity: w largest, the rest 0
    half = 511 * 0.5 / math.sqrt(0.5)  # 0.5 in 1/sqrt(2)/511 units: 361.33 -> 361
    x, y, z, w = quaternion_decompress((0 << 30) | (361 << 20) | (361 << 10) | 361)  # x largest, y z w = 0.5
    assert (y, z, w) == pytest.approx((0.5, 0.5, 0.5), abs=1e-3) and x == pytest.approx(0.5, abs=2e-3)
    assert half == pytest.approx(361.33, abs=0.01)
    rng = np.random.default_rng(0)
    for q in rng.standard_normal((200, 4)):
        q /= np.linalg.norm(q)
        back = np.array(quaternion_decompress(quatcompress(tuple(q))))
        assert min(np.abs(back - q).max(), np.abs(back + q).max()) < 2e-3  # the same rotation, 9-bit elements


@dataclass(frozen=True)
class Flight:
    log: FlightLog
    force: np.ndarray
    """(10 (N - 1) + 1, 3) m/s^2 at 1 kHz, through the firmware's 30 Hz filter."""
    rates: np.ndarray
    """(10 (N - 1) + 1, 3) rad/s at 1 kHz, through the 80 Hz filter."""


def _filtered(values: np.ndarray, cutoff: float) -> np.ndarray:
    b, a = butter(2, cutoff, fs=1000.0)
    return np.column_stack([lfilter(b, a, c, zi=lfilter_zi(b, a) * c[0])[0] for c in values.T])


@pytest.fixture(scope="module")
def flight(reference: ModuleType) -> Flight:
    """30 s of the excitation flight with the IMU sampled at 1 kHz (plus vibration noise), filtered as the
    firmware does, and logged at 100 Hz."""
    sim = reference.ReferenceQuadrotor(reference.TRUE_FIELDS, dt=0.001, substeps=1)
    forces, rates = [sim.specific_force()], [sim.state[10:13].copy()]

    def step(commands: np.ndarray) -> np.ndarray:
        for _ in range(10):
            state = sim.step(commands)
            forces.append(sim.specific_force())
            rates.append(sim.state[10:13].copy())
        return state

    log = fly_excitation(step, sim.state[:13].copy(), reference.BASE_FIELDS, ExcitationPlan(seconds=30.0))
    rng = np.random.default_rng(0)
    force = np.array(forces) + 0.3 * rng.standard_normal((len(forces), 3))
    rate = np.array(rates) + 0.05 * rng.standard_normal((len(rates), 3))
    return Flight(log, _filtered(force, 30.0), _filtered(rate, 80.0))


def _write_block(folder: Path, name: str, stamps: np.ndarray, columns: dict[str, np.ndarray]) -> None:
    lines = ["Timestamp," + ",".join(columns)]
    for k, stamp in enumerate(stamps):
        lines.append(f"{int(stamp)}" + "".join(f",{values[k]}" for values in columns.values()))
    (folder / f"{name}-20261130T15-00-00.csv").write_text("\n".join(lines) + "\n")


def _write_cfclient(folder: Path, flight: Flight, compressed: bool) -> None:
    log = flight.log
    stamps = np.round(log.time * 1000).astype(int) + 12_000  # the firmware's tick since power-on
    pwm = np.round(log.commands * 65535).astype(int)
    _write_block(folder, "Motors", stamps, {f"motor.m{i + 1}": pwm[:, i] for i in range(4)})
    force, rates = flight.force[3::10] / 9.81, np.degrees(flight.rates[3::10])  # another block, 3 ms later
    imu = {"acc.x": force[:, 0], "acc.y": force[:, 1], "acc.z": force[:, 2]}
    if not compressed:
        imu = {"gyro.x": rates[:, 0], "gyro.y": rates[:, 1], "gyro.z": rates[:, 2], **imu}
    _write_block(folder, "Imu", stamps[: len(force)] + 3, imu)
    w, x, y, z = log.quaternion.T
    if compressed:
        milli = flight.rates[::10] * 1000.0
        state = {f"stateEstimateZ.{a}": np.round(1000 * log.position[:, i]).astype(int) for i, a in enumerate("xyz")}
        state |= {f"stateEstimateZ.v{a}": np.round(1000 * log.velocity[:, i]).astype(int) for i, a in enumerate("xyz")}
        state["stateEstimateZ.quat"] = np.array([quatcompress((x[k], y[k], z[k], w[k])) for k in range(len(w))])
        rates = {"rateRoll": milli[:, 0], "ratePitch": -milli[:, 1], "rateYaw": milli[:, 2]}  # compressState
        state |= {f"stateEstimateZ.{n}": np.round(v).astype(int) for n, v in rates.items()}
        _write_block(folder, "StateZ", stamps[::2], {n: v[::2] for n, v in state.items()})  # 50 Hz
    else:
        pose = {f"stateEstimate.{a}": log.position[:, i] for i, a in enumerate("xyz")}
        pose |= {f"stateEstimate.v{a}": log.velocity[:, i] for i, a in enumerate("xyz")}
        _write_block(folder, "Pose", stamps, pose)
        _write_block(folder, "Attitude", stamps, dict(zip(("qx", "qy", "qz", "qw"), (x, y, z, w), strict=True)))
        (folder / "Attitude-20261130T15-00-00.csv").write_text(
            (folder / "Attitude-20261130T15-00-00.csv")
            .read_text()
            .replace("qx,qy,qz,qw", "stateEstimate.qx,stateEstimate.qy,stateEstimate.qz,stateEstimate.qw")
        )


def _errors(fit: object, reference: ModuleType) -> dict[str, tuple[float, float]]:
    true = reference.TRUE_FIELDS
    pairs = {"rise": (fit.motor_rise_time_constant, true["motor_rise_time_constant"])}  # type: ignore[attr-defined]
    pairs["fall"] = (fit.motor_fall_time_constant, true["motor_fall_time_constant"])  # type: ignore[attr-defined]
    for i in range(3):
        pairs[f"I{i}"] = (fit.inertia[i], true["inertia"][i])  # type: ignore[attr-defined]
    return {k: (e.value / t - 1.0, (e.value - t) / e.standard_error) for k, (e, t) in pairs.items()}


def test_a_cfclient_log_with_the_firmware_s_filters_identifies_within_two_errors(
    flight: Flight, reference: ModuleType, tmp_path: Path
) -> None:
    _write_cfclient(tmp_path, flight, compressed=False)
    log = read_cfclient_log(tmp_path)
    assert len(log) == len(flight.log) - 2 and log.specific_force is not None  # the IMU block: 3 ms later
    base = Airframe.from_fields(reference.BASE_FIELDS)
    undone = _errors(identify(without_firmware_filters(log), base), reference)
    assert max(abs(z) for _, z in undone.values()) <= 2.0, undone
    left_in = _errors(identify(log, base), reference)
    assert left_in["rise"][0] > 0.08  # the filters' 7.5 ms read as slower motors
    assert abs(undone["rise"][0]) < 0.3 * left_in["rise"][0]


def test_compressed_state_blocks_read_as_the_full_ones(flight: Flight, tmp_path: Path) -> None:
    full, packed = tmp_path / "full", tmp_path / "packed"
    full.mkdir()
    packed.mkdir()
    _write_cfclient(full, flight, compressed=False)
    _write_cfclient(packed, flight, compressed=True)
    a, b = read_cfclient_log(full), read_cfclient_log(packed)
    # the full log starts one motor sample later (its gyro is in the IMU block, which starts 3 ms later)
    n = min(len(a), len(b) - 1)
    assert b.column("velocity") == ("stateEstimateZ.vx/vy/vz", "mm/s")
    np.testing.assert_allclose(b.position[1 : n + 1], a.position[:n], atol=0.002)  # mm, 50 Hz interpolated
    # the compressed rates come from the 100 Hz gyro samples, the full ones from the IMU block's 3 ms later
    np.testing.assert_allclose(b.body_rates[1 : n + 1], a.body_rates[:n], atol=0.5)
    assert float(np.mean(np.abs(b.body_rates[1 : n + 1] - a.body_rates[:n]))) < 0.05  # ratePitch's sign undone
    assert np.abs(np.einsum("ki,ki->k", b.quaternion[1 : n + 1], a.quaternion[:n])).min() > 0.999


def test_a_cfclient_folder_through_the_command(
    flight: Flight, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "logdata"
    folder.mkdir()
    _write_cfclient(folder, flight, compressed=True)
    out = tmp_path / "mine.yaml"
    assert main(["sysid", str(folder), "--frame", "crazyflie_2_1", "-o", str(out)]) == 0
    assert "firmware sensor filters undone" in out.read_text()
    (folder / "Motors-20261130T15-00-00.csv").unlink()
    assert main(["sysid", str(folder), "--frame", "crazyflie_2_1", "-o", str(out)]) == 2
    assert "no log block has motor.m1, motor.m2, motor.m3, motor.m4" in capsys.readouterr().err
    empty = tmp_path / "empty"
    empty.mkdir()
    assert main(["sysid", str(empty), "--frame", "crazyflie_2_1"]) == 2
    assert "neither a bag" in capsys.readouterr().err
