"""The log readers: a Crazyflie CSV (cflib's variable names and units, bitcraze/crazyflie-firmware stabilizer.c and
motors.c) and a robo_rl recorder bag (MCAP, the quadrotor_crazyflie profile's topics), both back to a FlightLog."""

from __future__ import annotations

import math
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest

from robo_rl.sysid import Airframe, FlightLog, NotIdentifiable, identify
from robo_rl.sysid.crazyflie_csv import COLUMNS, read_crazyflie_csv, write_crazyflie_csv


def test_a_csv_row_reads_in_si_units_and_robo_rl_s_rotor_order(tmp_path: Path) -> None:
    row = {name: "0" for name in COLUMNS}
    row |= {"timestamp": "1500", "gyro.x": "180", "acc.z": "1.0", "motor.m1": "65535", "motor.m4": "32768"}
    row |= {"stateEstimate.vx": "0.5", "stateEstimate.qz": "0.6", "stateEstimate.qw": "0.8"}
    path = tmp_path / "one.csv"
    path.write_text(",".join(COLUMNS) + "\n" + ",".join(row[c] for c in COLUMNS) + "\n")
    log = read_crazyflie_csv(path)
    assert log.time[0] == 1.5 and log.body_rates[0, 0] == pytest.approx(math.pi)
    assert log.specific_force is not None and log.specific_force[0, 2] == pytest.approx(9.81)
    assert log.commands[0].tolist() == pytest.approx([1.0, 0.0, 0.0, 32768 / 65535])  # M1..M4 = rotors 0..3
    assert log.quaternion[0].tolist() == [0.8, 0.0, 0.0, 0.6] and log.velocity[0, 0] == 0.5  # w first; world frame


def test_a_csv_round_trip_keeps_the_log(tmp_path: Path, excited_log: FlightLog) -> None:
    path = tmp_path / "flight.csv"
    write_crazyflie_csv(path, excited_log)
    back = read_crazyflie_csv(path)
    assert np.allclose(back.time, excited_log.time) and np.allclose(back.body_rates, excited_log.body_rates)
    assert np.abs(back.commands - excited_log.commands).max() <= 0.5 / 65535 + 1e-12  # PWM rounding
    assert back.specific_force is not None and excited_log.specific_force is not None
    assert np.allclose(back.specific_force, excited_log.specific_force)
    assert np.allclose(back.quaternion, excited_log.quaternion) and np.allclose(back.velocity, excited_log.velocity)


def test_a_csv_without_a_column_or_with_a_bad_cell_is_refused_in_one_line(tmp_path: Path) -> None:
    path = tmp_path / "bad.csv"
    path.write_text("timestamp,gyro.x\n0,1\n")
    with pytest.raises(NotIdentifiable, match=r"missing column\(s\) gyro.y, gyro.z, motor.m1"):
        read_crazyflie_csv(path)
    path.write_text(",".join(COLUMNS) + "\n" + ",".join(["1"] * 7 + ["x"] + ["1"] * (len(COLUMNS) - 8)) + "\n")
    with pytest.raises(NotIdentifiable, match=r"row 2, column motor\.m1: 'x' is not a number"):
        read_crazyflie_csv(path)


def test_the_crazyflie_profile_sends_pwm_as_command_times_65535() -> None:
    """The bag reader's command = PWM / 65535 is the profile's mapping of actions [-1, 1] to data[0..3]."""
    from robo_rl.real.profile import load_profile

    profile = load_profile("quadrotor_crazyflie")
    (spec,) = profile.commands
    assert spec.topic == "cmd_motors" and [f.field for f in spec.fields] == [f"data[{i}]" for i in range(4)]
    for field, action in zip(spec.fields, profile.actions, strict=True):
        low, high = field.offset + field.scale * action.low, field.offset + field.scale * action.high
        assert (low, high) == (0.0, 65535.0)


def _write_bag(path: Path, log: FlightLog, namespace: str) -> None:
    from rosbags.rosbag2 import StoragePlugin, Writer
    from rosbags.typesys import Stores, get_typestore

    from robo_rl.sysid.airframe import quaternion_matrices

    store = get_typestore(Stores.LATEST)
    t = store.types
    body_velocity = np.einsum("kji,kj->ki", quaternion_matrices(log.quaternion), log.velocity)
    with Writer(path, version=9, storage_plugin=StoragePlugin.MCAP) as writer:
        odom = writer.add_connection(f"{namespace}/odom", "nav_msgs/msg/Odometry", typestore=store)
        cmd = writer.add_connection(f"{namespace}/cmd_motors", "std_msgs/msg/Float32MultiArray", typestore=store)
        for k in range(len(log)):
            stamp = round(float(100.0 + log.time[k]) * 1e9)
            header = t["std_msgs/msg/Header"](t["builtin_interfaces/msg/Time"](0, 0), "world")
            w, x, y, z = log.quaternion[k]
            pose = t["geometry_msgs/msg/Pose"](
                t["geometry_msgs/msg/Point"](*log.position[k]), t["geometry_msgs/msg/Quaternion"](x, y, z, w)
            )
            twist = t["geometry_msgs/msg/Twist"](
                t["geometry_msgs/msg/Vector3"](*body_velocity[k]), t["geometry_msgs/msg/Vector3"](*log.body_rates[k])
            )
            message = t["nav_msgs/msg/Odometry"](
                header,
                "body",
                t["geometry_msgs/msg/PoseWithCovariance"](pose, np.zeros(36)),
                t["geometry_msgs/msg/TwistWithCovariance"](twist, np.zeros(36)),
            )
            # the command goes out just after the state it answers, as a controller's would
            pwm = np.round(log.commands[k] * 65535).astype(np.float32)
            layout = t["std_msgs/msg/MultiArrayLayout"]([], 0)
            writer.write(odom, stamp, store.serialize_cdr(message, "nav_msgs/msg/Odometry"))
            command = t["std_msgs/msg/Float32MultiArray"](layout, pwm)
            writer.write(cmd, stamp + 1000, store.serialize_cdr(command, "std_msgs/msg/Float32MultiArray"))


def test_a_recorder_bag_reads_back_and_identifies(tmp_path: Path, reference: ModuleType) -> None:
    pytest.importorskip("rosbags", reason="rosbags (.venv-ros, make ros-venv) writes and reads the bag")
    from robo_rl.sysid.excitation import ExcitationPlan
    from robo_rl.sysid.recorder_bag import read_recorder_bag

    log = reference.reference_flight(ExcitationPlan(seconds=30.0))  # noise-free: the velocity path is exact
    bag = tmp_path / "bag"
    _write_bag(bag, log, "/cf1")
    back = read_recorder_bag(bag, "/cf1")
    n = len(log) - 1  # the last command came after the last odometry: no state to pair it with
    assert back.specific_force is None and len(back) == n
    assert np.allclose(back.time, log.time[:n], atol=1e-6) and np.allclose(back.commands, log.commands[:n], atol=1e-5)
    assert np.allclose(back.velocity, log.velocity[:n], atol=1e-3)
    assert np.allclose(back.body_rates, log.body_rates[:n], atol=1e-2)
    fit = identify(back, Airframe.from_fields(reference.BASE_FIELDS))
    assert fit.motor_rise_time_constant.value == pytest.approx(0.055, rel=0.03)
    assert fit.motor_fall_time_constant.value == pytest.approx(0.25, rel=0.03)
    assert fit.inertia[2].value == pytest.approx(reference.TRUE_FIELDS["inertia"][2], rel=0.03)
    with pytest.raises(NotIdentifiable, match="no topic /cf2/odom, /cf2/cmd_motors in the bag"):
        read_recorder_bag(bag, "/cf2")
