"""The quadrotor_crazyswarm2 profile: a ctbr policy's body rates and collective thrust on crazyswarm2's
cmd_vel_legacy, with the Crazyflie firmware in rate mode, and its state from crazyswarm2's odometry and logged gyro.

The upstream code each stand-in below restates (in our words, as small functions) was read at these versions:
- IMRCLab/crazyswarm2 at f6154e2d51791a41e6f320c1ee166f782be02a20 (1.0.5 + 6 commits):
  crazyflie/src/crazyflie_server.cpp, `cmd_vel_legacy_changed` (roll = linear.y, pitch = -linear.x,
  yawrate = angular.z, thrust = linear.z clamped to [0, 60000] as uint16, then `sendSetpoint`), `on_logging_odom`
  (pose and stateEstimateZ.vx/vy/vz, i.e. a world-frame velocity, in twist.twist.linear; twist.twist.angular left
  zero), the `custom_topics` log blocks published as crazyflie_interfaces/msg/LogDataGeneric
  (crazyflie_interfaces/msg/LogDataGeneric.msg: header, uint32 timestamp, float32[] values, in the order of
  `vars`); crazyflie_server_py/crazyflie_server_py/crazyflie_server.py, `_cmd_vel_legacy_changed` (same mapping,
  sent through cflib).
- whoenig/crazyflie_cpp at 505db571d2a5a5cef87153140643d499330b5438 (the crazyflie_tools submodule's):
  `Crazyflie::sendSetpoint` packs roll, pitch, yawrate, thrust unchanged into `crtpSetpointRequest` (port 3).
- bitcraze/crazyflie-lib-python at 0417fba4c4e579710c6df5d6d73dacd46f420a45 (0.1.32 + 9):
  `Commander.send_setpoint` packs `-pitch`: the cflib backend negates pitch once more.
- bitcraze/crazyflie-firmware tag 2026.08 (54f31e243a0b28b67efef5ba20dbb6d9890a5478):
  src/modules/src/crtp_commander_rpyt.c (`crtpCommanderRpytDecodeSetpoint`: with stabModeRoll/Pitch = RATE (0)
  attitudeRate.roll = roll and attitudeRate.pitch = pitch in deg/s; yaw in rate mode attitudeRate.yaw = -yaw,
  "legacy rate input is inverted"; thrust 0 while locked (until a packet with thrust 0) or below MIN_THRUST 1000,
  else min(thrust, MAX_THRUST 60000)); src/modules/src/controller/controller_pid.c (`controllerPid` tracks
  rateDesired roll, pitch, yaw against gyro.x, -gyro.y, gyro.z); src/modules/src/stabilizer.c (log group `gyro`:
  x, y, z in deg/s; `compressState`: stateEstimateZ.vx/vy/vz are the estimator's world-frame velocity and
  stateEstimateZ.quat its body-to-world attitude quaternion); src/platform/interface/platform_defaults_cf2.h and
  src/drivers/src/motors.c (`motorsCompensateBatteryVoltage`, on by default for the Crazyflie 2.x: a thrust
  value i asks each motor for i / 65535 * THRUST_MAX N, THRUST_MAX = 0.12 N, none below THRUST_MIN = 0.0128 N).
- Bitcraze, "The coordinate system of the Crazyflie 2.X" (bitcraze.io/documentation/system/platform/
  cf2-coordinate-system): body axes x forward, y left, z up; roll and yaw right-handed, pitch left-handed
  (positive nose up), which is why the firmware's pitch rate is -gyro.y.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pytest
import torch

from robo_rl.real.assembler import ObservationAssembler
from robo_rl.real.command import command_actions, command_fields, cut_off
from robo_rl.real.derive import derive, quadrotor_odometry
from robo_rl.real.profile import CommandField, ProfileError, load_profile
from robo_rl.sim import make
from robo_rl.sim.quadrotor.actions import CtbrConfig
from robo_rl.sim.quadrotor.params import load_frame

DEG = 180.0 / math.pi
THRUST_MAX = 0.12
"""N per motor at thrust value 65535, crazyflie-firmware 2026.08 platform_defaults_cf2.h (2.1+ and legacy props)."""
THRUST_MIN = 0.012817578393224994
"""N per motor, the compensated firmware's cut-off (platform_defaults_cf2.h, 2.1+ propellers)."""
MIN_THRUST, MAX_THRUST = 1000, 60000
"""crtp_commander_rpyt.c: legacy thrust below MIN_THRUST is 0, above MAX_THRUST capped."""


@dataclass(frozen=True)
class Legacy:
    """The legacy RPYT packet (crtp_commander_rpyt.c's CommanderCrtpLegacyValues): deg, deg, deg/s, uint16."""

    roll: float
    pitch: float
    yaw: float
    thrust: int


def crazyswarm2_cpp(twist: dict[str, float]) -> Legacy:
    """crazyflie_server.cpp's cmd_vel_legacy callback, then crazyflie_cpp's packet (values unchanged)."""
    thrust = int(min(max(twist["linear.z"], 0.0), MAX_THRUST))
    return Legacy(twist["linear.y"], -twist["linear.x"], twist["angular.z"], thrust)


def crazyswarm2_cflib(twist: dict[str, float]) -> Legacy:
    """crazyflie_server.py's cmd_vel_legacy callback, then cflib's send_setpoint, which packs -pitch."""
    sent = crazyswarm2_cpp(twist)
    return Legacy(sent.roll, -sent.pitch, sent.yaw, sent.thrust)


@dataclass(frozen=True)
class RateSetpoint:
    roll: float
    """attitudeRate.roll, deg/s."""
    pitch: float
    """attitudeRate.pitch, deg/s (positive nose up)."""
    yaw: float
    """attitudeRate.yaw, deg/s."""
    thrust: float
    """setpoint.thrust."""


def rpyt_rate_mode(packet: Legacy, thrust_locked: bool = False) -> RateSetpoint:
    """crtp_commander_rpyt.c with flightmode.stabModeRoll = stabModePitch = 0 and stabModeYaw = 0 (rate)."""
    thrust = 0.0 if thrust_locked or packet.thrust < MIN_THRUST else float(min(packet.thrust, MAX_THRUST))
    return RateSetpoint(packet.roll, packet.pitch, -packet.yaw, thrust)


def pid_tracked_gyro(setpoint: RateSetpoint) -> tuple[float, float, float]:
    """The gyro (x, y, z, deg/s, body FLU) at which controller_pid.c's rate errors vanish: it tracks the rate
    setpoints against gyro.x, -gyro.y and gyro.z (the yaw rate in steady state: it integrates it into a yaw-angle
    setpoint that its attitude loop follows)."""
    return setpoint.roll, -setpoint.pitch, setpoint.yaw


def compensated_rotor_thrust(thrust: float) -> float:
    """N per motor the battery-compensated firmware asks of each motor for a thrust value (no torque demand)."""
    newton = thrust / 65535.0 * THRUST_MAX
    return newton if newton >= THRUST_MIN else 0.0


PROFILE = load_profile("quadrotor_crazyswarm2")
SPEC = PROFILE.commands[0]


def twist_of(action: list[float]) -> dict[str, float]:
    return command_fields(SPEC, PROFILE.action_names, np.array(action, dtype=np.float64))


def flown_body_rates(action: list[float]) -> np.ndarray:
    """FLU body rates in rad/s the Crazyflie flies for a policy action, through the C++ backend and the firmware."""
    return np.array(pid_tracked_gyro(rpyt_rate_mode(crazyswarm2_cpp(twist_of(action))))) / DEG


def test_the_profile_sends_the_legacy_setpoint_on_cmd_vel_legacy() -> None:
    assert PROFILE.driver == "crazyswarm2" and PROFILE.task == "quadrotor/hover"
    assert PROFILE.action_names == ("collective_thrust", "roll_rate", "pitch_rate", "yaw_rate")
    assert (SPEC.type, SPEC.topic) == ("geometry_msgs/msg/Twist", "cmd_vel_legacy")
    fields = {f.action: f.field for f in SPEC.fields}
    assert fields == {"collective_thrust": "linear.z", "roll_rate": "linear.y", "pitch_rate": "linear.x"} | {
        "yaw_rate": "angular.z"
    }
    assert all(not f.axis and not f.transform for f in SPEC.fields)  # signs and units are in the scales
    inputs = {spec.name: spec.type for spec in PROFILE.inputs if spec.type}
    assert inputs == {"odom": "nav_msgs/msg/Odometry", "gyro": "crazyflie_interfaces/msg/LogDataGeneric"}


def test_scales_are_the_policys_rates_in_deg_per_s_and_its_rotor_thrust_as_the_firmwares_value() -> None:
    """Rates: ctbr.max_body_rate (rad/s at action 1) in deg/s, yaw negated. Thrust: the nominal frame's rotor
    thrust range (its thrust curve at the min and max command, what the ctbr action spans) as 65535 * N /
    THRUST_MAX."""
    rates = CtbrConfig().max_body_rate
    scales = {f.action: f for f in SPEC.fields}
    assert scales["roll_rate"].scale == pytest.approx(rates[0] * DEG, rel=1e-7)
    assert scales["pitch_rate"].scale == pytest.approx(rates[1] * DEG, rel=1e-7)
    assert scales["yaw_rate"].scale == pytest.approx(-rates[2] * DEG, rel=1e-7)
    frame = load_frame("crazyflie_2_1")
    low, high = frame.min_rotor_thrust, frame.max_rotor_thrust
    thrust = scales["collective_thrust"]
    assert thrust.offset == pytest.approx(65535 / THRUST_MAX * (high + low) / 2, rel=1e-7)
    assert thrust.scale == pytest.approx(65535 / THRUST_MAX * (high - low) / 2, rel=1e-7)
    assert (thrust.ceiling, thrust.zero_below) == (MAX_THRUST, 2000.0)
    assert MIN_THRUST < thrust.offset - thrust.scale < thrust.zero_below  # only the lowest action is cut


@pytest.mark.parametrize(
    ("case", "action", "twist", "setpoint", "flu_rad_s"),
    [
        # Policy asks +1 rad/s roll rate (FLU: left side up) = action 0.1 of 10 rad/s → Twist linear.y = +57.296
        # deg/s; crazyflie_server.cpp sends roll = linear.y = +57.296; crtp_commander_rpyt.c (stabModeRoll = 0)
        # sets attitudeRate.roll = +57.296 deg/s; controller_pid.c drives gyro.x to +57.296 deg/s = +1 rad/s.
        ("roll +1 rad/s", [0.0, 0.1, 0.0, 0.0], {"linear.y": 57.29578}, (57.29578, 0.0, 0.0), (1.0, 0.0, 0.0)),
        # Policy asks +1 rad/s pitch rate (FLU about +y: nose down) = action 0.1 → linear.x = +57.296; the server
        # sends pitch = -linear.x = -57.296; the firmware sets attitudeRate.pitch = -57.296 deg/s (its pitch is
        # positive nose up) and tracks it against -gyro.y: gyro.y = +57.296 deg/s = +1 rad/s.
        ("pitch +1 rad/s", [0.0, 0.0, 0.1, 0.0], {"linear.x": 57.29578}, (0.0, -57.29578, 0.0), (0.0, 1.0, 0.0)),
        # Policy asks +1 rad/s yaw rate (FLU: counter-clockwise from above) = action 0.2 of 5 rad/s → angular.z =
        # -57.296; the server sends yawrate = -57.296; the firmware negates the legacy yaw rate: attitudeRate.yaw =
        # +57.296 deg/s, tracked against gyro.z = +1 rad/s.
        ("yaw +1 rad/s", [0.0, 0.0, 0.0, 0.2], {"angular.z": -57.29578}, (0.0, 0.0, 57.29578), (0.0, 0.0, 1.0)),
    ],
)
def test_hand_worked_rate_cases(
    case: str,
    action: list[float],
    twist: dict[str, float],
    setpoint: tuple[float, float, float],
    flu_rad_s: tuple[float, float, float],
) -> None:
    sent = twist_of(action)
    expected = {"linear.x": 0.0, "linear.y": 0.0, "angular.z": 0.0} | twist
    for field, value in expected.items():
        assert sent[field] == pytest.approx(value, abs=1e-3), (case, field)
    rates = rpyt_rate_mode(crazyswarm2_cpp(sent))
    assert (rates.roll, rates.pitch, rates.yaw) == pytest.approx(setpoint, abs=1e-3), case
    np.testing.assert_allclose(flown_body_rates(action), flu_rad_s, atol=1e-6, err_msg=case)


def test_random_actions_fly_the_policys_body_rates() -> None:
    """Whatever the action, the rates the firmware tracks are the simulator's ctbr setpoints (action × max rate,
    FLU)."""
    max_rate = np.array(CtbrConfig().max_body_rate)
    for action in np.random.default_rng(0).uniform(-1, 1, size=(50, 4)):
        np.testing.assert_allclose(flown_body_rates(list(action)), action[1:] * max_rate, atol=1e-9)


def test_the_cflib_backend_would_reverse_the_pitch_rate() -> None:
    """crazyswarm2's Python server negates linear.x and cflib negates the pitch again: the firmware then receives
    +linear.x, so this profile (written for the default C++ backend) would fly the pitch rate reversed there."""
    sent = twist_of([0.0, 0.0, 0.1, 0.0])
    gyro_y = pid_tracked_gyro(rpyt_rate_mode(crazyswarm2_cflib(sent)))[1] / DEG
    assert gyro_y == pytest.approx(-1.0)


def test_hand_worked_thrust_cases() -> None:
    """Hover: the crazyflie_2_1 frame's weight 0.0306 kg × 9.81 = 0.30019 N, 0.075047 N per rotor, is the ctbr
    action 0.3418 (rotor thrust spans 0.0035253..0.11013 N) → linear.z = 65535 × 0.075047 / 0.12 = 40984.8 → the
    server sends 40984 → setpoint.thrust 40984 → the compensated firmware asks 0.075046 N of each motor."""
    frame = load_frame("crazyflie_2_1")
    low, high = frame.min_rotor_thrust, frame.max_rotor_thrust
    hover = (frame.weight / 4 - (high + low) / 2) / ((high - low) / 2)
    assert hover == pytest.approx(0.34182, abs=1e-5)
    sent = twist_of([hover, 0.0, 0.0, 0.0])
    assert sent["linear.z"] == pytest.approx(40984.8, abs=0.1)
    setpoint = rpyt_rate_mode(crazyswarm2_cpp(sent))
    assert setpoint.thrust == 40984
    assert 4 * compensated_rotor_thrust(setpoint.thrust) == pytest.approx(frame.weight, rel=1e-4)
    # Full thrust: 60144 asked, 60000 sent (the firmware's cap): 0.10986 N per motor of the policy's 0.11013.
    assert twist_of([1.0, 0.0, 0.0, 0.0])["linear.z"] == MAX_THRUST
    assert compensated_rotor_thrust(MAX_THRUST) / high == pytest.approx(0.9976, abs=1e-4)


def test_the_safe_command_stops_the_motors_and_releases_the_thrust_lock() -> None:
    """The safe command (thrust action -1, zero rates) is sent as linear.z = 0: the firmware's legacy commander
    stays thrust-locked until it receives a thrust of exactly 0, and thrust 0 stops the motors."""
    sent = twist_of(list(PROFILE.safe_action))
    assert sent == {"linear.z": 0.0, "linear.y": 0.0, "linear.x": 0.0, "angular.z": 0.0}
    assert rpyt_rate_mode(crazyswarm2_cpp(sent), thrust_locked=True).thrust == 0.0
    # The policy's lowest thrust (0.0035 N per rotor, value 1925) is below what the compensated firmware gives a
    # motor anyway (THRUST_MIN): sending 0 there changes no motor's thrust.
    lowest = 65535 / THRUST_MAX * load_frame("crazyflie_2_1").min_rotor_thrust
    assert compensated_rotor_thrust(lowest) == 0.0
    assert twist_of([-0.99, 0.0, 0.0, 0.0])["linear.z"] > 2000.0


def test_state_from_crazyswarm2_odometry_and_gyro_equals_the_simulators_observation() -> None:
    """A tumbling simulated Crazyflie, published as crazyswarm2's C++ server does (pose, world-frame velocity in
    twist.linear, gyro log block in deg/s), gives the policy the simulator's own observation."""
    env = make("quadrotor/hover", num_envs=4, seed=3, params=("action_mode=ctbr", "position_integral_limit=0"))
    torch.manual_seed(0)
    for _ in range(20):
        obs = env.step(torch.rand(4, 4) * 2 - 1)[0]
    names = env.obs_spec.names
    assert names == PROFILE.obs_names
    target = tuple(float(v) for v in env.config.target_position)
    state_spec = next(spec for spec in PROFILE.inputs if spec.derive)
    assembler = ObservationAssembler(PROFILE.observations, PROFILE.action_names, PROFILE.safe_action)
    for index in range(4):
        state = env.state[index].double().numpy()
        odom = {f"odom.{k}": v for k, v in quadrotor_odometry(state).items() if not k.startswith("twist")}
        odom |= {f"odom.twist.twist.linear.{a}": float(state[7 + i]) for i, a in enumerate("xyz")}  # world frame
        gyro = {f"gyro.values[{i}]": float(state[10 + i]) * DEG for i in range(3)}  # deg/s, FLU
        fields = odom | gyro
        fields |= derive(state_spec, fields, target)
        observed = assembler(fields)
        for i, name in enumerate(names):
            if not name.startswith("previous_action"):
                assert observed[i] == pytest.approx(float(obs[index, i]), abs=2e-5), name


def test_command_actions_undo_the_rates_and_the_thrust() -> None:
    """sim_bridge reads the command back into actions: the rates and the thrust within the cut-off and cap."""
    action = [0.3, -0.4, 0.5, -0.6]
    back = command_actions(SPEC, twist_of(action))
    np.testing.assert_allclose([back[name] for name in PROFILE.action_names], action, atol=1e-9)


def test_ceiling_and_zero_below() -> None:
    assert cut_off(70000.0, 60000.0, 2000.0) == 60000.0
    assert cut_off(1999.0, 60000.0, 2000.0) == 0.0
    assert cut_off(2000.0, 60000.0, 2000.0) == 2000.0
    assert cut_off(-5.0, math.inf, -math.inf) == -5.0
    with pytest.raises(ProfileError, match="zero_below: must be < ceiling"):
        CommandField(action="a", field="linear.z", ceiling=10.0, zero_below=10.0)
    with pytest.raises(ProfileError, match="ceiling: must not be nan"):
        CommandField(action="a", field="linear.z", ceiling=math.nan)
