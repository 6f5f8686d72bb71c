"""`robo-rl sysid LOG --frame BASE -o frame.yaml`: a quadrotor frame identified from a flight log."""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path
from typing import TYPE_CHECKING, Any

from robo_rl.api.bad_file import check_output

if TYPE_CHECKING:
    from robo_rl.sysid.flight_log import FlightLog
from robo_rl.cli.sysid_chain import add_chain_arguments, check_chain_arguments, run_chain

DESCRIPTION = """\
Identify a quadrotor's thrust curve, motor time constants and inertia from a flight log, and write them as a frame
file (BASE's fields with the fitted ones replaced) for training:
  robo-rl sysid flight.csv --frame crazyflie_2_1 -o my_crazyflie.yaml
  robo-rl train quadrotor_hover_ppo --set task.frame=my_crazyflie.yaml
This is the path from a real drone: log a minute of flight, identify, train, fly. In one command:
  robo-rl sysid flight.csv --frame crazyflie_2_1 -o my_crazyflie.yaml --train quadrotor_hover_ppo
identifies, trains on the fitted frame, exports policy.onnx only if it passes the hover gate there (--gate, 95 % of
fresh flights), flies it on the fitted frame in onnxruntime and in L2F's own Crazyflie, and writes one report
(sysid_report.txt and .json in the run directory, with a copy of the frame).

Inputs (LOG; --format picks the reader, else the name and header do):
  cfclient  a Crazyflie's own log as cfclient's "log to file" writes it: a folder with one CSV per log block
        (Timestamp in ms, then the block's variables), or one such file. Blocks: motor.m1..m4; gyro.x/y/z and
        optionally acc.x/y/z; the state in full (stateEstimate.x/y/z, vx/vy/vz, qx/qy/qz/qw) or compressed as
        crazyswarm2 logs it (stateEstimateZ.x/y/z mm, vx/vy/vz mm/s, quat, rateRoll/ratePitch/rateYaw mrad/s).
        Merged on the motor block's samples. The firmware low-pass filters the accelerometer (30 Hz) and gyro
        (80 Hz) at 1 kHz (sensors_bmi088_bmp388.c, filter.c): a 7.5 and a 2.8 ms delay, undone by default
        (--sensor-filters); left in, they make the motors look 15 % slower.
  csv   a Crazyflie log in cflib's variable names: timestamp (ms), gyro.x/y/z (deg/s), acc.x/y/z (g, optional),
        motor.m1..m4 (PWM 0..65535; M1 front-right, M2 back-right, M3 back-left, M4 front-left = rotors 0..3),
        stateEstimate.x/y/z (m), stateEstimate.vx/vy/vz (m/s, world), stateEstimate.qx/qy/qz/qw.
  mcap  a robo_rl recorder bag of the quadrotor_crazyflie profile: `odom` (nav_msgs/Odometry, twist in the body
        frame) and `cmd_motors` (std_msgs/Float32MultiArray, PWM in data[0..3]) under --namespace; needs rosbags.
Fitted: thrust_curve (c0 + c1 u + c2 u^2 N per rotor, u = PWM / 65535), motor_rise_time_constant and
motor_fall_time_constant, inertia (Ixx, Iyy, Izz), and the motor model, chosen by the log's evidence: "command"
(first order in the command, constant rise and fall constants) or "rotor_speed" (first order in rotor speed, spinning
down at a rate proportional to the speed, with motor_idle_speed), each tried with and without rotor aerodynamics
(thrust lost to climbing, rotor drag; fitted, not kept). Kept from BASE: the mass (motion only tells thrust / mass, so
the curve is in N for BASE's mass), the rotor geometry and torque_to_thrust (the torques are computed from them),
drag and gravity. Thrust is measured by the accelerometer when the log has one, else by the velocity's derivative.
Each value is printed with a standard error that holds up on real logs: the residuals' (widened for their
correlation) and, in quadrature, half the difference between the log's two halves, the change at half the sample
rate, the spread over the models the log cannot tell apart and the thrust the model misses for stretches of the
flight; the frame file's header says what was fitted from which log, with which model.
Refuses (one line, exit 2, nothing written) a log that cannot identify a parameter: commands that never vary
(thrust_curve), no fast rising or falling command steps (the time constants), too little rotation about an axis
(its inertia), a standard error over 10 % (naming what widened it: too little excitation, or a model that does not
hold on this log, e.g. a sagging battery), too short (< 10 s), non-finite values, missing columns or topics, and a
column whose unit the physics contradicts, naming the unit its values look like (the accelerometer must average
about 1 g up, the gyro must match the attitude's turning, the velocity's derivative the accelerometer, the
position's derivative the velocity; samples 0.5 ms to 2 s apart; commands reaching a good part of full PWM).
A log that identifies everything: hover, and on top fly collective steps (~0.15 of full command, up and down, held
0.4 s), roll and pitch doublets and yaw doublets (robo_rl.sysid.excitation flies this in simulation).
"""


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "sysid",
        help="identify a quadrotor frame (thrust curve, motor constants, inertia) from a flight log",
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("log", type=Path, help="the flight log: a Crazyflie CSV, or a recorder bag (.mcap or its folder)")
    p.add_argument("--frame", required=True, help="the base frame: a bundled frame name or a frame YAML file")
    p.add_argument("-o", "--output", type=Path, default=Path("frame.yaml"), help="frame file (default frame.yaml)")
    p.add_argument(
        "--format",
        choices=("mcap", "csv", "cfclient"),
        help="the log's format (default: from its name and header; see above)",
    )
    p.add_argument(
        "--sensor-filters",
        choices=("auto", "firmware", "none"),
        default="auto",
        help="undo the Crazyflie firmware's accelerometer and gyro low-pass delays (7.5 and 2.8 ms): firmware "
        "(a real Crazyflie's log, whatever its format), none (a simulator's), or auto: firmware for a cfclient log",
    )
    p.add_argument("--namespace", default="/", help="the robot's ROS namespace in a bag (default /)")
    p.add_argument(
        "--thrust-from",
        choices=("auto", "accelerometer", "velocity"),
        default="auto",
        help="what measures thrust (default: the accelerometer when the log has one)",
    )
    add_chain_arguments(p)
    p.set_defaults(func=main)


def log_format(path: Path, given: str | None) -> str:
    if given:
        return given
    if path.is_dir():
        if (path / "metadata.yaml").exists() or any(p.suffix == ".mcap" for p in path.iterdir()):
            return "mcap"
        if any(p.suffix.lower() == ".csv" for p in path.iterdir()):
            return "cfclient"
        raise ValueError(f"{path}: a folder with neither a bag (metadata.yaml, .mcap) nor cfclient's .csv files")
    if path.suffix.lower() == ".csv":
        return "cfclient" if _cfclient_header(path) else "csv"
    if path.suffix.lower() == ".mcap":
        return "mcap"
    raise ValueError(f"{path}: cannot tell the log's format from its name; give --format mcap, csv or cfclient")


def _cfclient_header(path: Path) -> bool:
    """cfclient writes `Timestamp` (cflib scripts and robo_rl's layout `timestamp`); stateEstimateZ is its too."""
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            header = handle.readline()
    except OSError:
        return False
    names = [n.strip().lstrip("\ufeff") for n in header.split(",")]
    return "Timestamp" in names or any(n.startswith("stateEstimateZ.") for n in names)


def read_log(args: argparse.Namespace) -> FlightLog:
    from robo_rl.sysid.cfclient_log import read_cfclient_log
    from robo_rl.sysid.crazyflie_csv import read_crazyflie_csv
    from robo_rl.sysid.crazyflie_filters import without_firmware_filters
    from robo_rl.sysid.recorder_bag import read_recorder_bag

    kind = log_format(args.log, args.format)
    if kind == "cfclient":
        log = read_cfclient_log(args.log)
    else:
        log = read_crazyflie_csv(args.log) if kind == "csv" else read_recorder_bag(args.log, args.namespace)
    if args.sensor_filters == "firmware" or (args.sensor_filters == "auto" and kind == "cfclient"):
        return without_firmware_filters(log)
    return log


def base_fields(frame: str) -> dict[str, Any]:
    """BASE's fields, read by the simulator's frame loader (lazily: the sysid core needs no simulator)."""
    from robo_rl.sim.quadrotor.params import load_frame

    return dataclasses.asdict(load_frame(frame))


def main(args: argparse.Namespace) -> int:
    from robo_rl.cli.progress import terminal
    from robo_rl.sysid import Airframe, identify
    from robo_rl.sysid.frame_file import frame_text, identified_fields, report_lines, write_frame

    if args.output.suffix.lower() not in (".yaml", ".yml"):
        raise ValueError(f"--output {args.output}: frame files are .yaml")
    check_output(args.output, "--output")
    if not args.log.exists():
        raise FileNotFoundError(f"{args.log}: no such log")
    if args.train:
        check_chain_arguments(args)
    base = base_fields(args.frame)
    if args.train:
        terminal().print(f"1/5 identify the frame from {args.log}", markup=False, highlight=False)
    log = read_log(args)
    fit = identify(log, Airframe.from_fields(base), args.thrust_from)
    fields = identified_fields(base, fit, args.output.stem, log.source)
    write_frame(args.output, frame_text(fields, fit, str(base["name"]), log.source))
    out = terminal()
    lines = report_lines(fit, base)
    for line in lines:
        out.print(line, markup=False, highlight=False)
    out.print(f"wrote {args.output}")
    if not args.train:
        return 0
    return run_chain(args, args.output, fit, lines, lambda line: out.print(line, markup=False, highlight=False))
