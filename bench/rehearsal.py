"""The hand-over rehearsals of issue 48 with trained policies: each vehicle's own controller holds it, the policy
takes over on request, an input falls silent, the vehicle takes back, the policy takes over again, a requested
hand-back (and for the Crazyflie a take-off and a landing by its high-level commander), against each vehicle's
stand-in with physics, in stepped time (robo_rl.sim.rehearsal).

Per vehicle it reports: rule violations (the Crazyflie firmware's thrust lock or a zero-thrust packet in the air;
a PX4 command rejected, a setpoint executed without the offboard signal, PX4's offboard-loss failsafe acting; a
steering angle or speed the VESC chain clamps otherwise than the simulator; a trajectory joint_trajectory_controller
drops, on a clock 1 s ahead), control periods in the air with the motors off, per transition the periods from the
input's staleness timeout to the vehicle's controller in charge, and the largest command step, position and tilt
excursion in the second after it (against the ramp's bound dt / ramp of the command's range).

    cd bench && ../.venv/bin/python rehearsal.py --crazyflie CF.onnx --px4 X500.onnx --car CAR.onnx --arm ARM.onnx
    # → results/rehearsal.json; a vehicle without a policy file is skipped
"""

from __future__ import annotations

import argparse
import json
from dataclasses import replace
from pathlib import Path
from typing import Any

from machine import machine_info

from robo_rl.real.handover import HandoverSettings
from robo_rl.real.node_core import NodeSettings
from robo_rl.real.profile import load_profile
from robo_rl.sim.rehearsal import rehearse, standard_plan
from robo_rl.sim.rehearsal.arm import ArmRig
from robo_rl.sim.rehearsal.car import CarRig
from robo_rl.sim.rehearsal.crazyflie import CrazyflieRig
from robo_rl.sim.rehearsal.px4 import Px4Rig, SimulatedPx4

RAMP_CAR = 0.5
RAMP_ARM = 0.5
"""The car's and the arm's bundled profiles have no handover section (their policy commands from activation, as
learning on the robot needs): the rehearsal adds one (the ESC's speed 0; the measured pose held)."""


def _no_messages(_: str) -> bool:
    return False


def crazyflie(policy: str) -> dict[str, Any]:
    profile = load_profile("quadrotor_crazyswarm2")
    assert profile.crazyswarm2 is not None
    target = (0.0, 0.0, profile.crazyswarm2.takeoff_height)
    rig = CrazyflieRig(profile, target)
    report = rehearse(rig, policy, standard_plan(True, "odom"), NodeSettings(target=target), _no_messages)
    return _result(report, {"landed_height_m": float(rig.world.position()[2]), "firmware": rig.firmware.log[:12]})


def px4(policy: str) -> dict[str, Any]:
    profile = load_profile("quadrotor_px4")
    target = (0.0, 0.0, 1.0)
    rig = Px4Rig(SimulatedPx4(profile, target))
    report = rehearse(rig, policy, standard_plan(False, "odom", settle=5.0), NodeSettings(target=target), _no_messages)
    modes = [(round(t, 2), mode, why) for t, mode, why in rig.commander.modes]
    return _result(report, {"px4_modes": modes})


def car(policy: str) -> dict[str, Any]:
    profile = replace(load_profile("rc_car"), handover=HandoverSettings("stop", ramp=RAMP_CAR))
    rig = CarRig(profile)
    report = rehearse(rig, policy, standard_plan(False, "track"), available=_no_messages)
    return _result(report, {"laps": rig.sim.stats()})


def arm(policy: str) -> dict[str, Any]:
    profile = replace(load_profile("arm"), handover=HandoverSettings("hold_measured", ramp=RAMP_ARM))
    rig = ArmRig(profile, ["action_mode=position"], skew=1.0)
    report = rehearse(rig, policy, standard_plan(False, "joint_states"), available=_no_messages)
    return _result(report, {"controller_clock_skew_s": rig.skew})


def _result(report: Any, extra: dict[str, Any]) -> dict[str, Any]:
    transitions = [
        {
            "time_s": round(t.time, 3),
            "to": t.to,
            "cause": t.cause,
            "response_periods": t.response_periods,
            "command_jump": round(t.command_jump, 5),
            "position_jump_m": round(t.position_jump, 4),
            "tilt_jump_rad": round(t.attitude_jump, 4),
        }
        for t in report.transitions
    ]
    return {**report.summary(), "transitions": transitions, **extra}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    for name in ("crazyflie", "px4", "car", "arm"):
        parser.add_argument(f"--{name}", help=f"the {name}'s trained policy.onnx (skipped when not given)")
    parser.add_argument("--out", default=str(Path(__file__).parent / "results" / "rehearsal.json"))
    args = parser.parse_args()
    runs = {"crazyflie": crazyflie, "px4": px4, "car": car, "arm": arm}
    results: dict[str, Any] = {"machine": machine_info()}
    for name, run in runs.items():
        policy = getattr(args, name)
        if policy:
            results[name] = {"policy": policy, **run(policy)}
            print(name, json.dumps(results[name]["transitions"]), results[name]["violations"])
    Path(args.out).write_text(json.dumps(results, indent=1, default=str) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
