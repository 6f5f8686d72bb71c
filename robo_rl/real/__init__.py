"""robo_rl.real: deploy an exported `policy.onnx` on a robot without torch or ROS (numpy + onnxruntime).

Pipeline: `ObservationAssembler` (message fields → obs by name) → `PolicyRuntime` (onnxruntime, metadata checked
against a `RobotProfile`) → `SafetyFilter` (non-finite guard, clip, rate limits, e-stop latch), gated by a
`Watchdog` (stale observations → safe command), run at a fixed rate by `ControlLoop`. `PolicyController` wires
them, and `NodeCore` (node_core.py) is a node's control logic on injected clocks; `robo_rl.real.fault` names why
a safe command went out. The rclpy nodes (`robo_rl.real.ros`) convert messages only; nothing else here imports
ROS (tests/test_import_layers.py). onnxruntime is imported when a policy loads.
"""

from robo_rl.real.assembler import MissingFieldError, ObservationAssembler
from robo_rl.real.command import command_fields, package_available, select_command
from robo_rl.real.controller import ControlOutput, PolicyController
from robo_rl.real.loop import ControlLoop, LoopStats
from robo_rl.real.policy_fit import ProfileMismatchError, mismatches
from robo_rl.real.policy_info import PolicyFileError, PolicyInfo
from robo_rl.real.profile import (
    ActionLimit,
    CommandField,
    CommandSpec,
    ObservationField,
    ProfileError,
    RobotProfile,
    bundled_profiles,
    load_profile,
    profile_from_dict,
)
from robo_rl.real.runtime import PolicyRuntime
from robo_rl.real.safety import SafetyFilter, SafetyResult
from robo_rl.real.watchdog import Watchdog

__all__ = [
    "ActionLimit",
    "CommandField",
    "CommandSpec",
    "ControlLoop",
    "ControlOutput",
    "LoopStats",
    "MissingFieldError",
    "ObservationAssembler",
    "ObservationField",
    "PolicyController",
    "PolicyFileError",
    "PolicyInfo",
    "PolicyRuntime",
    "ProfileError",
    "ProfileMismatchError",
    "RobotProfile",
    "SafetyFilter",
    "SafetyResult",
    "Watchdog",
    "bundled_profiles",
    "command_fields",
    "load_profile",
    "mismatches",
    "package_available",
    "profile_from_dict",
    "select_command",
]
