"""`--target crazyflie`: an out-of-tree controller app for crazyflie-firmware (`controllerOutOfTree*`), with the
observation assembled from the state estimate by the policy's observation names (robo_rl's quadrotor tasks), and
the actions turned into motor commands by the actuator model the policy states (`robo_rl.actuator`)."""

from __future__ import annotations

import math
import re
import struct
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import robo_rl
from robo_rl.actuator import ACTUATOR_KEY, CRAZYFLIE_PWM_FULL_SCALE, MotorActuator
from robo_rl.firmware_export.board import (
    README_FILE,
    Board,
    FolderWriter,
    TargetContext,
    c_comment,
    readme,
    render,
    template,
)

if TYPE_CHECKING:
    from robo_rl.firmware_export.ir import PolicyInfo
    from robo_rl.firmware_export.report import ExportReport

CRAZYFLIE_MAP_HEADER = "robo_rl_crazyflie_map.h"
CRAZYFLIE_POSITION_ERROR_CLIP = 0.5
"""Default of `ROBO_RL_CF_POSITION_ERROR_CLIP` (m, per axis): the controller clips the position error the policy
sees to +-this, as RLtools' "Learning to Fly" controller does; the metadata usually leaves it unbounded."""
POSITION_ERROR_CLIP_DEFINE = "ROBO_RL_CF_POSITION_ERROR_CLIP"

_CF_VECTORS = (
    "position_error",
    "position_error_integral",
    "velocity",
    "velocity_error",
    "reference_velocity",
    "angular_velocity",
)
_CF_VECTOR_NAME = re.compile(rf"^({'|'.join(_CF_VECTORS)})_([xyz])$")
_CF_POSITION_ERROR_NAME = re.compile(r"^position_error_([xyz])$")
_CF_INTEGRAL_NAME = re.compile(r"^position_error_integral_([xyz])$")
_CF_ROTATION_NAME = re.compile(r"^rotation_([0-2])([0-2])$")
_CF_HISTORY_NAME = re.compile(r"^previous_action_(\d+)_([0-3])$")
CRAZYFLIE_ACTIONS = ("rotor_0", "rotor_1", "rotor_2", "rotor_3")
_CF_RATES_HZ = (1000, 500, 250, 100, 50, 25)
"""Rates with a RATE_<N>_HZ constant in the firmware (divisors of its 1 kHz stabilizer loop)."""


def crazyflie_observation_source(name: str) -> str:
    """The C expression (in the controller's terms) that gives the observation element `name`.

    Supported: robo_rl's quadrotor observation names: position_error_{x,y,z}, position_error_integral_{x,y,z},
    rotation_{r}{c}, velocity_{x,y,z}, velocity_error_{x,y,z}, reference_velocity_{x,y,z}, angular_velocity_{x,y,z},
    previous_action_{k}_{i}.
    """
    if match := _CF_VECTOR_NAME.match(name):
        return f"signals->{match.group(1)}[{'xyz'.index(match.group(2))}]"
    if match := _CF_ROTATION_NAME.match(name):
        return f"signals->rotation[{3 * int(match.group(1)) + int(match.group(2))}]"
    if match := _CF_HISTORY_NAME.match(name):
        return f"history[{int(match.group(1))}][{int(match.group(2))}]"
    raise ValueError(name)


def crazyflie_clip_ranges(info: PolicyInfo) -> list[tuple[int, str, str, str]]:
    """`(index, name, low, high)` of every observation element the controller clips before the policy sees it,
    low/high as C expressions: the metadata bounds (obs_low/obs_high) where finite, and +-ROBO_RL_CF_POSITION_ERROR_CLIP
    for position_error_* (within the metadata bounds where those are finite, see `crazyflie_map_header`).
    Elements unbounded in the metadata (other than the position error) are not clipped."""
    ranges = []
    for i, (name, low, high) in enumerate(zip(info.obs_names, info.obs_low, info.obs_high, strict=True)):
        low_c: str | None
        high_c: str | None
        if _CF_POSITION_ERROR_NAME.match(name):
            low_c, high_c = _position_error_clip(low, high)
        else:
            low_c = _c_float(low) if math.isfinite(low) else None
            high_c = _c_float(high) if math.isfinite(high) else None
        if low_c is None and high_c is None:
            continue
        ranges.append((i, name, low_c or "-INFINITY", high_c or "INFINITY"))
    return ranges


def _position_error_clip(low: float, high: float) -> tuple[str, str]:
    """C expressions of one axis' position error clip range: +-ROBO_RL_CF_POSITION_ERROR_CLIP within the metadata
    bounds `low`/`high` where those are finite."""
    clip = f"(float)({POSITION_ERROR_CLIP_DEFINE})"
    low_c = f"fmaxf({_c_float(low)}, -{clip})" if math.isfinite(low) else f"-{clip}"
    high_c = f"fminf({_c_float(high)}, {clip})" if math.isfinite(high) else clip
    return low_c, high_c


def crazyflie_clip_list(info: PolicyInfo) -> str:
    """The clip ranges as a Markdown list for the README (one item per clipped element, then the unclipped)."""
    items, free = [], []
    for i, (name, low, high) in enumerate(zip(info.obs_names, info.obs_low, info.obs_high, strict=True)):
        bounded = math.isfinite(low) or math.isfinite(high)
        if _CF_POSITION_ERROR_NAME.match(name):
            within = f" within the metadata's [{low:g}, {high:g}]" if bounded else ""
            items.append(f"  - `obs[{i}]` {name}: ±`{POSITION_ERROR_CLIP_DEFINE}`{within}")
        elif bounded:
            items.append(f"  - `obs[{i}]` {name}: [{low:g}, {high:g}]")
        else:
            free.append(name)
    if free:
        items.append(f"  - not clipped (unbounded in the metadata): {', '.join(free)}")
    return "\n".join(items)


def _clip_function(info: PolicyInfo) -> str:
    ranges = crazyflie_clip_ranges(info)
    lines = [
        f"    obs[{i}] = robo_rl_cf_clip(obs[{i}], {low}, {high}); /* {c_comment(name)} */"
        for i, name, low, high in ranges
    ]
    clipped = {i for i, *_ in ranges}
    free = [name for i, name in enumerate(info.obs_names) if i not in clipped]
    if free:
        lines.append(f"    /* not clipped (unbounded in the metadata): {c_comment(', '.join(free))} */")
    if not ranges:
        lines.insert(0, "    (void)obs;")
    return (
        "/* Clips the observation to the range the policy was trained on, in place, before the policy sees it: the\n"
        " * metadata bounds (robo_rl.obs_low/obs_high) where finite, and the position error to\n"
        f" * +-{POSITION_ERROR_CLIP_DEFINE} m per axis (RLtools' Learning to Fly clips it to +-0.5 m). NaN and +-inf\n"
        " * pass through unchanged, so that the policy's non-finite check still rejects them. */\n"
        "static void robo_rl_cf_clip_observation(float *obs)\n{\n" + "\n".join(lines) + "\n}\n"
    )


def crazyflie_map_header(info: PolicyInfo) -> str:
    """`robo_rl_crazyflie_map.h`: the policy rate, the action bounds and rotor order, the function that fills the
    observation from the controller's signals, the one that clips it to the trained range (the metadata bounds
    where finite, the position error to +-ROBO_RL_CF_POSITION_ERROR_CLIP, default 0.5 m, a #define the user may
    override), the position error integral's update and the motor command of an action (the policy's actuator
    model), generated from the policy's metadata.

    Raises ValueError when the policy cannot be flown by the controller: observation names it cannot compute,
    actions other than rotor_0..3 with finite bounds, a control period that is not a firmware rate, or no
    actuator model (`robo_rl.actuator`) saying what an action means.
    """
    sources = _crazyflie_sources(info.obs_names)
    rate = _crazyflie_rate(info.dt)
    rotor_index = _crazyflie_rotor_index(info)
    actuator = crazyflie_actuator(info)
    integrals = _crazyflie_integrals(info)
    assert info.dt is not None and actuator.hover_action is not None  # checked above
    history_rows = max([int(m.group(1)) + 1 for n in info.obs_names if (m := _CF_HISTORY_NAME.match(n))], default=0)
    lows = ", ".join(_c_float(info.action_low[i]) for i in rotor_index)
    highs = ", ".join(_c_float(info.action_high[i]) for i in rotor_index)
    fill = "\n".join(
        f"    obs[{i}] = {source}; /* {c_comment(name)} [{c_comment(unit)}] */"
        for i, (name, unit, source) in enumerate(zip(info.obs_names, info.obs_units, sources, strict=True))
    )
    return (
        f"/* Generated by robo_rl {robo_rl.__version__} for task {c_comment(info.task or 'unknown')}: how the\n"
        " * Crazyflie controller builds the policy's observation and reads its actions. Included once, by\n"
        " * robo_rl_controller.c, after robo_rl_cf_signals_t. */\n"
        "#ifndef ROBO_RL_CRAZYFLIE_MAP_H\n#define ROBO_RL_CRAZYFLIE_MAP_H\n\n#include <math.h>\n\n"
        f"#define ROBO_RL_CF_POLICY_RATE_HZ {rate} /* policy control period {info.dt:g} s */\n"
        f"#define ROBO_RL_CF_POLICY_DT ({_c_float(info.dt)}) /* s, the period the position error integral uses */\n"
        f"#define ROBO_RL_CF_HISTORY_LENGTH {history_rows} /* previous actions in the observation */\n"
        f"#define ROBO_RL_CF_HISTORY_ROWS {max(history_rows, 1)}\n"
        "/* The action history at each hand-over: the action that holds the training frame in hover\n"
        f" * ({c_comment(actuator.frame or 'its frame')}, robo_rl.actuator's hover_action). */\n"
        f"#ifndef ROBO_RL_CF_INITIAL_ACTION\n#define ROBO_RL_CF_INITIAL_ACTION ({_c_float(actuator.hover_action)})\n"
        "#endif\n"
        "/* Clip range of the position error in the observation (m, per axis; override with -D...=value). */\n"
        f"#ifndef {POSITION_ERROR_CLIP_DEFINE}\n"
        f"#define {POSITION_ERROR_CLIP_DEFINE} ({CRAZYFLIE_POSITION_ERROR_CLIP}f)\n#endif\n\n"
        "/* Action index of rotor i (0 front-right, 1 back-right, 2 back-left, 3 front-left = M1..M4). */\n"
        f"static const int robo_rl_cf_rotor_action[4] = {{{', '.join(map(str, rotor_index))}}};\n"
        "#define ROBO_RL_CF_ROTOR_ACTION(i) (robo_rl_cf_rotor_action[(i)])\n"
        "/* Bounds of rotor i's action (the policy's output bounds). */\n"
        f"static const float robo_rl_cf_action_low[4] = {{{lows}}};\n"
        f"static const float robo_rl_cf_action_high[4] = {{{highs}}};\n\n"
        f"{_motor_command_function(actuator)}\n"
        "/* value clipped to [low, high]; NaN and +-inf are returned unchanged (the policy rejects them). */\n"
        "static float robo_rl_cf_clip(float value, float low, float high)\n{\n"
        "    if (!isfinite(value)) {\n        return value;\n    }\n"
        "    return value < low ? low : (value > high ? high : value);\n}\n\n"
        f"{_integral_function(info, integrals)}\n"
        "static void robo_rl_cf_fill_observation(float *obs, const robo_rl_cf_signals_t *signals,\n"
        "                                        const float (*history)[4])\n{\n"
        f"{'    (void)history;' + chr(10) if history_rows == 0 else ''}"
        f"{fill}\n}}\n\n"
        f"{_clip_function(info)}\n#endif\n"
    )


def crazyflie_actuator(info: PolicyInfo) -> MotorActuator:
    """The policy's actuator model, which the controller's motor command applies; ValueError when the policy does
    not state one (its actions' meaning is unknown), states no hover action, or a PWM range other than the
    firmware's (`powerDistribution` sends normalizedForces x UINT16_MAX in controlModeForce)."""
    actuator = info.actuator
    if actuator is None:
        raise ValueError(
            f"crazyflie target: the policy does not state its actuator model ({ACTUATOR_KEY}), so what its actions "
            "mean is unknown; re-export it with this robo_rl (from a run trained with this robo_rl, action_mode=motor)"
        )
    if not isinstance(actuator, MotorActuator):
        raise ValueError(
            f"crazyflie target: the policy's actuator model ({ACTUATOR_KEY}) is a {actuator.kind!r}, not a "
            "quadrotor's motor model"
        )
    if actuator.hover_action is None:
        raise ValueError(
            f"crazyflie target: the policy's actuator model ({ACTUATOR_KEY}) has no hover_action, the action "
            "history's start at each hand-over; re-export it with this robo_rl"
        )
    if actuator.pwm_full_scale != CRAZYFLIE_PWM_FULL_SCALE:
        raise ValueError(
            f"crazyflie target: the policy's actuator model has a PWM full scale of {actuator.pwm_full_scale}, "
            f"the Crazyflie's is {CRAZYFLIE_PWM_FULL_SCALE} (UINT16_MAX)"
        )
    return actuator


def _motor_command_function(actuator: MotorActuator) -> str:
    return (
        "/* The policy's actuator model (robo_rl.actuator, trained on frame "
        f"{c_comment(actuator.frame or 'unnamed')}): an action maps linearly\n"
        " * onto the normalized motor command u, the PWM ratio that the firmware's powerDistribution sends to the\n"
        " * motor as u * UINT16_MAX in controlModeForce:\n"
        " *   u = COMMAND_LOW + (action - ACTION_LOW) * COMMAND_SLOPE,\n"
        " *   COMMAND_SLOPE = (COMMAND_HIGH - COMMAND_LOW) / (ACTION_HIGH - ACTION_LOW),\n"
        " * the action clipped to its bounds first. The thrust that u gives is the motor's; in training it was\n"
        f" * {_thrust_curve_text(actuator)} N per rotor. */\n"
        f"#define ROBO_RL_CF_ACTION_LOW ({_c_float(actuator.action_low)})\n"
        f"#define ROBO_RL_CF_ACTION_HIGH ({_c_float(actuator.action_high)})\n"
        f"#define ROBO_RL_CF_COMMAND_LOW ({_c_float(actuator.command_low)})\n"
        f"#define ROBO_RL_CF_COMMAND_HIGH ({_c_float(actuator.command_high)})\n"
        f"#define ROBO_RL_CF_COMMAND_SLOPE ({_c_float(actuator.slope)})\n\n"
        "/* Motor command u (PWM ratio, in [COMMAND_LOW, COMMAND_HIGH]) of rotor i (M1..M4 = 0..3) for its action. */\n"
        "static float robo_rl_cf_motor_command(int i, float action)\n{\n"
        "    const float clipped = fminf(fmaxf(action, robo_rl_cf_action_low[i]), robo_rl_cf_action_high[i]);\n"
        "    const float command =\n"
        "        ROBO_RL_CF_COMMAND_LOW + (clipped - ROBO_RL_CF_ACTION_LOW) * ROBO_RL_CF_COMMAND_SLOPE;\n\n"
        "    return fminf(fmaxf(command, ROBO_RL_CF_COMMAND_LOW), ROBO_RL_CF_COMMAND_HIGH);\n}\n"
    )


def _thrust_curve_text(actuator: MotorActuator) -> str:
    c0, c1, c2 = actuator.thrust_curve
    return f"{c0:.6g} + {c1:.6g} u + {c2:.6g} u^2"


def _crazyflie_integrals(info: PolicyInfo) -> dict[int, float]:
    """Axis (0..2) -> limit L of every position_error_integral_* observation; ValueError unless its metadata
    bounds are a finite symmetric [-L, L] (the integral is clipped to them)."""
    limits = {}
    for name, low, high in zip(info.obs_names, info.obs_low, info.obs_high, strict=True):
        if match := _CF_INTEGRAL_NAME.match(name):
            if not (math.isfinite(high) and high > 0 and math.isclose(low, -high, rel_tol=1e-6)):
                raise ValueError(
                    f"crazyflie target: observation {name} needs finite bounds [-L, L] (the integral's limit), "
                    f"got [{low}, {high}]"
                )
            limits["xyz".index(match.group(1))] = high
    return limits


def _integral_function(info: PolicyInfo, limits: dict[int, float]) -> str:
    """`robo_rl_cf_integrate_position_error`: the position_error_integral_* observations' update (the training
    environment's rule) for the axes the policy observes."""
    bounds = {
        "xyz".index(m.group(1)): (low, high)
        for name, low, high in zip(info.obs_names, info.obs_low, info.obs_high, strict=True)
        if (m := _CF_POSITION_ERROR_NAME.match(name))
    }
    lines = []
    for axis, limit in sorted(limits.items()):
        low_c, high_c = _position_error_clip(*bounds.get(axis, (-math.inf, math.inf)))
        lines += [
            f"    error = robo_rl_cf_clip(position_error[{axis}], {low_c}, {high_c});",
            f"    integral[{axis}] = robo_rl_cf_clip(integral[{axis}] + ROBO_RL_CF_POLICY_DT * error, "
            f"{_c_float(-limit)}, {_c_float(limit)});",
        ]
    body = "    float error;\n\n" + "\n".join(lines) if lines else "    (void)integral;\n    (void)position_error;"
    return (
        "/* The position error integral the position_error_integral_* observations read (m*s, per axis), updated at\n"
        " * every policy step k as in training: I_k = clip(I_{k-1} + dt * e_k, -L, L), e_k the position error as the\n"
        " * policy sees it (clipped as robo_rl_cf_clip_observation clips it), L the observation's bound in the\n"
        " * metadata, I = 0 when the policy takes over. A non-finite error makes it non-finite: the policy then\n"
        " * rejects the observation (and the next hand-over starts it from 0 again). */\n"
        "static void robo_rl_cf_integrate_position_error(float integral[3], const float position_error[3])\n{\n"
        f"{body}\n}}\n"
    )


def _crazyflie_sources(names: Sequence[str]) -> list[str]:
    sources, unknown = [], []
    for name in names:
        try:
            sources.append(crazyflie_observation_source(name))
        except ValueError:
            unknown.append(name)
    if unknown:
        raise ValueError(
            f"crazyflie target: the controller cannot compute observation(s) {', '.join(unknown[:6])}"
            f"{' ...' if len(unknown) > 6 else ''}; it supports robo_rl's quadrotor observations (position_error_*, "
            "rotation_rc, velocity_*, velocity_error_*, reference_velocity_*, angular_velocity_*, previous_action_k_i)"
        )
    return sources


def _crazyflie_rate(dt: float | None) -> int:
    if dt is None:
        raise ValueError("crazyflie target: the ONNX file has no control period (robo_rl.dt metadata)")
    for rate in _CF_RATES_HZ:
        if math.isclose(dt * rate, 1.0, rel_tol=1e-6):
            return rate
    raise ValueError(
        f"crazyflie target: control period {dt:g} s is not one of the firmware rates "
        f"{', '.join(f'{r} Hz' for r in _CF_RATES_HZ)}"
    )


def _crazyflie_rotor_index(info: PolicyInfo) -> list[int]:
    if info.action_chunk > 1:
        raise ValueError(
            f"crazyflie target: the policy outputs chunks of {info.action_chunk} actions; the controller app sends "
            "one action per call (export a policy without chunks, or use --target c)"
        )
    if sorted(info.action_names) != list(CRAZYFLIE_ACTIONS):
        raise ValueError(
            f"crazyflie target: actions {list(info.action_names)} are not the motor commands "
            f"{list(CRAZYFLIE_ACTIONS)} (train with action_mode=motor)"
        )
    index = [info.action_names.index(name) for name in CRAZYFLIE_ACTIONS]
    for i in index:
        low, high = info.action_low[i], info.action_high[i]
        if not (math.isfinite(low) and math.isfinite(high) and low < high):
            raise ValueError(
                f"crazyflie target: action {info.action_names[i]} needs finite bounds, got [{low}, {high}]"
            )
    return index


def _c_float(value: float) -> str:
    return f"{struct.unpack('<f', struct.pack('<f', value))[0]!r}f"


def _actuator_text(actuator: MotorActuator) -> str:
    """The actuator model as the README states it."""
    return (
        f"action [{actuator.action_low:g}, {actuator.action_high:g}] → motor command u in "
        f"[{actuator.command_low:g}, {actuator.command_high:g}], linear (trained on frame "
        f"`{actuator.frame or 'unnamed'}`: thrust {_thrust_curve_text(actuator)} N per rotor, motor time constants "
        f"{actuator.motor_rise_time_constant:g} s rising, {actuator.motor_fall_time_constant:g} s falling"
        f"{_motor_model_text(actuator)})"
    )


def _motor_model_text(actuator: MotorActuator) -> str:
    if actuator.motor_model != "rotor_speed":
        return ""
    return (
        f"; rotor-speed motors: first order in rotor speed, idle at {actuator.motor_idle_speed:.3g} of full speed, "
        "falling at a rate proportional to the speed, the fall constant being the one at full speed"
    )


def write(context: TargetContext, out_dir: Path, dry_run: bool, report: ExportReport | None = None) -> list[str]:
    folder = FolderWriter(out_dir, dry_run)
    info = context.ir.info
    values = context.values()
    rate = _crazyflie_rate(info.dt)
    actuator = crazyflie_actuator(info)
    assert actuator.hover_action is not None  # crazyflie_actuator refuses a model without it
    for name in ("Makefile", "Kbuild", "app-config", "src/Kbuild", "src/robo_rl_controller.c"):
        folder.put(name, render(template(f"crazyflie/{name}"), values))
    folder.sources(context.sources, "src/")
    folder.put(f"src/{CRAZYFLIE_MAP_HEADER}", crazyflie_map_header(info))
    observation_list = "\n".join(
        f"  - `obs[{i}]` {name} ({unit}) = `{crazyflie_observation_source(name)}`"
        for i, (name, unit) in enumerate(zip(info.obs_names, info.obs_units, strict=True))
    )
    extra = {
        "RATE_HZ": f"RATE_{rate}_HZ",
        "PERIOD_MS": f"{1000 / rate:g}",
        "OBSERVATION_LIST": observation_list,
        "INITIAL_ACTION": _c_float(actuator.hover_action).removesuffix("f"),  # as the header defines it
        "ACTUATOR": _actuator_text(actuator),
        "CLIP_LIST": crazyflie_clip_list(info),
        "POSITION_ERROR_CLIP": f"{CRAZYFLIE_POSITION_ERROR_CLIP:g}",
    }
    folder.put(README_FILE, readme(context, template("crazyflie/README.md"), report, extra))
    return folder.paths


BOARD = Board(
    "crazyflie",
    "an out-of-tree controller app for crazyflie-firmware",
    write,
    qemu=True,
    check=crazyflie_map_header,
    order=2,
)
