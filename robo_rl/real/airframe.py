"""The airframe a quadrotor profile flies, checked against the airframe its policy was trained on.

A profile states its frame among its `task_params` (`frame=px4_x500`): sim_bridge then simulates that frame, and a
policy fits the profile only when the task config it recorded at training time (`robo_rl.task_config`, which
`robo-rl export` writes) names the same `frame`, or sets `airframes` (a policy trained on a distribution of
airframes, meant to fly frames it never saw). A policy trained on another frame, e.g. a Crazyflie's 27 g dynamics
flown on a 2 kg PX4 vehicle, is refused, naming both frames; so is one that records no task config (nothing says
what it was trained on). A profile that states no frame is not checked. Frames are compared by name: no simulator
code is loaded here.
"""

from __future__ import annotations

import json
from typing import Any

from robo_rl.artifact import PREFIX
from robo_rl.real.profile import RobotProfile
from robo_rl.real.runtime import PolicyRuntime, ProfileMismatchError

FRAME_PARAM = "frame"
"""The task parameter (and the key of the recorded task config) that names the airframe."""
AIRFRAMES_KEY = "airframes"
"""The recorded task config's key of a multi-airframe distribution (quadrotor/hover's `HoverConfig.airframes`, an
`AirframeDistribution` recorded as its fields; null when off): set (not null, not empty) on a policy trained across
airframes."""
TASK_CONFIG_KEY = PREFIX + "task_config"


def profile_frame(profile: RobotProfile) -> str:
    """The airframe `profile` flies (its `frame=NAME` task parameter, the last one given); "" when it states none."""
    frames = [param.split("=", 1)[1] for param in profile.task_params if param.split("=", 1)[0] == FRAME_PARAM]
    return frames[-1] if frames else ""


def airframe_mismatches(task_config: str | None, profile: RobotProfile) -> list[str]:
    """Why a policy whose recorded task config is `task_config` (canonical JSON, None when the file has none) may
    not fly `profile`'s airframe; [] when it may (or the profile states no frame)."""
    frame = profile_frame(profile)
    if not frame:
        return []
    flies = f"profile {profile.name!r} flies frame {frame!r}"
    config = _config_mapping(task_config)
    if config is None:
        return [f"frame: the policy does not record the task config it was trained with ({TASK_CONFIG_KEY}), so "
                f"not its airframe; {flies} (export the run with robo-rl export)"]  # fmt: skip
    if _is_set(config.get(AIRFRAMES_KEY)):
        return []
    trained = config.get(FRAME_PARAM)
    if trained == frame:
        return []
    which = "names no frame" if trained is None else f"was trained on frame {trained!r}"
    remedy = f"deploy a policy trained on frame {frame!r} or on several airframes ({AIRFRAMES_KEY} in its task config)"
    return [f"frame: the policy {which}, {flies}: {remedy}"]


def check_airframe(runtime: PolicyRuntime, profile: RobotProfile) -> None:
    """Raise ProfileMismatchError when the policy of `runtime` was not trained on the airframe `profile` flies (its
    metadata is read only when the profile states a frame)."""
    if not profile_frame(profile):
        return
    props = runtime.session.get_modelmeta().custom_metadata_map
    found = airframe_mismatches(props.get(TASK_CONFIG_KEY), profile)
    if found:
        raise ProfileMismatchError(runtime.path.name, profile.name, found)


def _config_mapping(task_config: str | None) -> dict[str, Any] | None:
    """The recorded task config as a mapping; None when there is none or it is not a JSON object."""
    if not task_config:
        return None
    try:
        data = json.loads(task_config)
    except json.JSONDecodeError:
        return None
    return data if isinstance(data, dict) else None


def _is_set(value: Any) -> bool:
    """A recorded `airframes` that describes a distribution: present, not null, not empty."""
    return bool(value)
