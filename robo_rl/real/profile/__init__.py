"""Robot profiles: what a deployed policy must look like for one robot, and how its actions become commands.

A profile is a YAML file mapped onto frozen dataclasses; unknown or missing keys and bad values stop with one
line naming the file and the field, e.g. `rc_car.yaml: actions[1].rate_limit: must be > 0, got -1.0`.
Bundled profiles live in `robo_rl/real/profiles/` and load by name with `load_profile("rc_car")`. The optional
sections `workspace`, `action_box` and `episode` set up learning on the robot (`robo_rl.real.safety_box`,
`robo_rl.real.episode`).

Modules: `schema` (`RobotProfile`) with its sections `signals` (observations, actions, commands, inputs),
`learning` (workspace, action box, episodes) and `vehicles` (PX4, crazyswarm2, VESC); `sources` (what an
observation source means); `checks` (the checks across sections); `loading` (files and parsed YAML through
`robo_rl.config.from_dict`); `errors` (`ProfileError`). The names below are the ones users import.
"""

from robo_rl.real.profile.checks import held_joint_sources
from robo_rl.real.profile.errors import ProfileError
from robo_rl.real.profile.learning import ActionBound, EpisodeSettings, ResetMove, WorkspaceLimit
from robo_rl.real.profile.loading import bundled_profiles, load_profile, profile_from_dict
from robo_rl.real.profile.schema import KINDS, RobotProfile
from robo_rl.real.profile.signals import (
    COMPRESSED_IMAGE,
    DERIVATIONS,
    HOLD_MEASURED,
    IMAGE,
    IMAGE_TYPES,
    JOINT_STATE,
    JOINT_TRAJECTORY,
    ActionLimit,
    CommandField,
    CommandSpec,
    CropBox,
    InputSpec,
    ObservationField,
)
from robo_rl.real.profile.sources import UNIT_CONVERSIONS, history_source, integral_source, source_input, unit_factor
from robo_rl.real.profile.vehicles import CrazyswarmSettings, Px4Settings, VescCalibration

__all__ = [
    "COMPRESSED_IMAGE",
    "DERIVATIONS",
    "HOLD_MEASURED",
    "IMAGE",
    "IMAGE_TYPES",
    "JOINT_STATE",
    "JOINT_TRAJECTORY",
    "KINDS",
    "UNIT_CONVERSIONS",
    "ActionBound",
    "ActionLimit",
    "CommandField",
    "CommandSpec",
    "CrazyswarmSettings",
    "CropBox",
    "EpisodeSettings",
    "InputSpec",
    "ObservationField",
    "ProfileError",
    "Px4Settings",
    "ResetMove",
    "RobotProfile",
    "VescCalibration",
    "WorkspaceLimit",
    "bundled_profiles",
    "held_joint_sources",
    "history_source",
    "integral_source",
    "load_profile",
    "profile_from_dict",
    "source_input",
    "unit_factor",
]
