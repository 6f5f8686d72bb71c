"""The root of a robot profile's schema: `RobotProfile`, its sections (`signals`, `learning`, `vehicles`) and its
own fields; the checks across sections run from its `__post_init__`, so every profile made is checked."""

from __future__ import annotations

import re
from dataclasses import dataclass

from robo_rl.real.handover import HandoverSettings
from robo_rl.real.profile.checks import check_profile
from robo_rl.real.profile.errors import require, require_unique
from robo_rl.real.profile.learning import ActionBound, EpisodeSettings, WorkspaceLimit
from robo_rl.real.profile.signals import IMAGE_TYPES, ActionLimit, CommandSpec, InputSpec, ObservationField
from robo_rl.real.profile.vehicles import CrazyswarmSettings, Px4Settings, VescCalibration

KINDS = ("quadrotor", "rc_car", "arm")
"""`RobotProfile.kind` choices."""


@dataclass(frozen=True)
class RobotProfile:
    """A robot profile: what a deployed policy must look like for one robot, and how its actions become commands.

    Each section checks its own fields; the checks across sections are `robo_rl.real.profile.checks`'s."""

    name: str
    """Profile name (the file stem for bundled profiles)."""
    kind: str
    """One of `KINDS`: quadrotor, rc_car, arm."""
    task: str
    """Task the policy must have been trained on (`robo_rl.task`)."""
    dt: float
    """Control period in seconds the robot runs at; the policy's `robo_rl.dt` must match within `dt_tolerance`."""
    dt_tolerance: float
    """Largest accepted |policy dt - dt| in seconds."""
    staleness_timeout: float
    """Seconds without a new observation after which the safe command is sent."""
    observations: tuple[ObservationField, ...]
    """Policy observations in the order the policy expects them."""
    actions: tuple[ActionLimit, ...]
    """Policy actions in the order the policy outputs them."""
    commands: tuple[CommandSpec, ...]
    """Command message choices, preferred first (the first whose package is importable is used)."""
    inputs: tuple[InputSpec, ...] = ()
    """Topics and derivations feeding the observation sources (needed by the ROS nodes, not by the core)."""
    driver: str = ""
    """The robot driver the profile is written against (`robo_rl.real.drivers`: px4, crazyswarm2, sim_bridge,
    ackermann, ros2_control); a profile that driver cannot serve is refused, saying why. Empty: not checked."""
    workspace: tuple[WorkspaceLimit, ...] = ()
    """Limits on observation sources while learning on the robot; leaving them ends the episode. Empty: none."""
    action_box: tuple[ActionBound, ...] = ()
    """Tighter action bounds while learning on the robot. Empty: the actions' own bounds."""
    episode: EpisodeSettings | None = None
    """Episodes of learning on the robot; None: human resets, no step limit."""
    px4: Px4Settings | None = None
    """PX4 fault hold and motor order (driver px4); None: the defaults of `Px4Settings`."""
    crazyswarm2: CrazyswarmSettings | None = None
    """Take-off, landing and hand-back through crazyswarm2's high-level commander (driver crazyswarm2, with a
    handover section of vehicle crazyswarm2); None: the defaults of `CrazyswarmSettings`."""
    handover: HandoverSettings | None = None
    """Who holds the vehicle while the policy does not, and how the policy takes over (`robo_rl.real.handover`);
    None: the policy commands from activation and every fault sends the safe command."""
    vesc: VescCalibration | None = None
    """A VESC car's speed and steering calibration, its vesc.yaml's (`VescCalibration`): the servo must reach every
    steering angle the actions command, the ESC every forward speed, and a policy's reverse must stop where its
    simulator's did (`robo_rl.real.policy_fit.esc_mismatches`). None: not checked."""
    safe_command: str = "fixed"
    """What the node commands on a fault, e-stop or deactivation. "fixed": each action's `safe` value (motors off,
    zero speed). "hold_measured" (position-commanded joints: every command a JointTrajectory whose
    `points[0].positions[i]` fields come from the joints of a JointState input): the last complete measured pose
    of the joints, taken when the safe commands begin and held while they last; nothing before the first measured
    pose after activation. The rate limits then restart from the measured pose, and the actions' `safe` values are
    the home pose, commanded only on request (policy_node's `go_home`), rate limited."""
    task_params: tuple[str, ...] = ()
    """`key=value` settings of `task` the policy must have been trained with besides the task's defaults (e.g.
    `action_mode=ctbr` where the commands are body rates); sim_bridge makes its simulator with them. `frame=NAME`
    states the airframe: a policy must have been trained on it or on several airframes (`robo_rl.real.airframe`,
    checked from the policy's recorded task config). Empty: none."""

    def __post_init__(self) -> None:
        require(bool(self.name), "name", "must not be empty")
        require(bool(self.task), "task", "must not be empty")
        for param in self.task_params:
            require(bool(re.match(r"^\w[\w.]*=", param)), "task_params", f"expected key=value, got {param!r}")
        require(self.kind in KINDS, "kind", f"must be one of {KINDS}, got {self.kind!r}")
        require(self.dt > 0, "dt", f"must be > 0, got {self.dt}")
        require(self.dt_tolerance >= 0, "dt_tolerance", f"must be >= 0, got {self.dt_tolerance}")
        require(self.staleness_timeout > 0, "staleness_timeout", f"must be > 0, got {self.staleness_timeout}")
        require(len(self.observations) > 0, "observations", "must not be empty")
        require(len(self.actions) > 0, "actions", "must not be empty")
        require(len(self.commands) > 0, "commands", "must not be empty")
        require_unique([o.name for o in self.observations], "observations")
        require_unique([a.name for a in self.actions], "actions")
        require_unique([i.name for i in self.inputs], "inputs")
        check_profile(self)

    @property
    def obs_names(self) -> tuple[str, ...]:
        return tuple(o.name for o in self.observations)

    @property
    def image_inputs(self) -> tuple[InputSpec, ...]:
        """The inputs carrying camera frames, in profile order."""
        return tuple(spec for spec in self.inputs if spec.type in IMAGE_TYPES)

    @property
    def action_names(self) -> tuple[str, ...]:
        return tuple(a.name for a in self.actions)

    @property
    def safe_action(self) -> tuple[float, ...]:
        """The safe command in policy units, in action order."""
        return tuple(a.safe for a in self.actions)
