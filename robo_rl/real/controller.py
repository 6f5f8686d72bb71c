"""One control step from the latest observation to a safe command: the deploy pipeline without ROS.

`PolicyController` wires `ObservationAssembler` → `PolicyRuntime` → `SafetyFilter`, gated by a `Watchdog`, and
maps the result onto the command message fields; a ROS node only converts messages to and from field dicts.

A chunked policy (H actions per evaluation, `robo_rl.chunks`) goes through a `TimedChunkQueue` between the
runtime and the filter: each new observation's chunk is stamped with the observation's arrival time (step i due
at `t_obs + i * dt`), and each step sends the action due now, by temporal ensembling or a receding horizon
(`ChunkExecution`). When no chunk covers now (every queued action is in the past) the safe command goes out
with the fault "action chunk spent". Every action still passes the safety filter; stale inputs give the safe
command as for any policy, so a chunk bridges gaps in the inputs shorter than the staleness timeout, no longer.

A camera policy gets, with each observation, the newest frame of each camera (`observe_frame`, already cropped and
resized to its spec). Frames do not trigger anything: the state's arrival or the timer does, at the control rate,
and the newest frames go with it. A camera input is watched like any other: no frame for the staleness timeout
and the safe command goes out, naming it; a frame's age counts from its header stamp, so frames that arrive late
(a slow camera pipeline) go stale as silent ones do.

A policy with memory (`PolicyRuntime.memory`) carries its state from one of its commands to the next, and the state
is reset (`robo_rl.memory_spec.RESET_RULE`) whenever the policy's control starts: at `restart` (the node's
activation, which is an episode's start on the robot) and at the first policy step after any command that was not
the policy's own (a safe command for whatever fault: stale or missing inputs, non-finite values, the e-stop, the
move home; or the operator's action). A state carried across such a gap would describe a past the robot did not
live under the policy's control.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from robo_rl.chunks.execution import ChunkExecution, TimedChunkQueue
from robo_rl.real.airframe import check_airframe
from robo_rl.real.assembler import MissingFieldError, ObservationAssembler
from robo_rl.real.command import (
    command_fields,
    measured_actions,
    package_available,
    relative_actions,
    select_command,
    trajectory_timing,
)
from robo_rl.real.fault import Fault, FaultKind
from robo_rl.real.handover import Handover, HandoverStep, Mode, hold_vector
from robo_rl.real.profile import HOLD_MEASURED, JOINT_TRAJECTORY, CommandSpec, RobotProfile, held_joint_sources
from robo_rl.real.runtime import PolicyRuntime
from robo_rl.real.safety import SafetyFilter, SafetyResult
from robo_rl.real.watchdog import Watchdog


@dataclass(frozen=True)
class ControlOutput:
    """The result of one control step."""

    fields: dict[str, float]
    """Command message field → value, ready to copy into a `command_spec.type` message."""
    safety: SafetyResult
    """The filtered command `(action_dim,)` in policy units and what the filter did."""
    latency: float | None
    """Seconds from the observation's arrival to this command; None when the safe command was sent instead."""
    intervened: bool = False
    """The command is the operator's action (`intervene`), not the policy's."""
    handover: HandoverStep | None = None
    """Who is in control this period (`robo_rl.real.handover`); None for a profile without a hand-over section."""


class PolicyController:
    """Runs a checked policy on a robot profile; `observe(fields)` when messages arrive, `step()` every period.

    `step()` sends the safe command when observations are stale (any of the profile's inputs silent for longer
    than its staleness timeout), incomplete, non-finite, or the e-stop is latched; it never raises for bad data.
    An operator's action given to `intervene` replaces the policy's while it is fresh (same timeout), through the
    same safety filter.

    Integral observations (`integral(FIELD)` sources) run over the policy's uninterrupted control: they start from
    0 at `restart` and whenever the policy's own commands resume after a safe command or an operator's action, and
    only periods whose command was the policy's add to them (an e-stop or a fault never winds them up). A policy's
    memory is reset at the same moments (module docstring).
    """

    def __init__(
        self,
        runtime: PolicyRuntime,
        profile: RobotProfile,
        clock: Callable[[], float] = time.monotonic,
        available: Callable[[str], bool] = package_available,
        command_type: str = "",
        chunk_execution: ChunkExecution | None = None,
    ) -> None:
        runtime.check(profile)
        check_airframe(runtime, profile)  # a profile that states its frame: the policy's, or a multi-airframe one
        self.runtime = runtime
        self.profile = profile
        self.clock = clock
        self.command_spec: CommandSpec = select_command(profile, available, command_type)
        self.assembler = ObservationAssembler(
            profile.observations, profile.action_names, profile.safe_action, profile.dt, runtime.info.obs_high
        )
        hold = profile.safe_command == HOLD_MEASURED
        relative = relative_actions(self.command_spec, profile.action_names)
        self.safety = SafetyFilter(profile.actions, profile.dt, hold_measured=hold, relative=relative)
        self.measured_fields: dict[str, float] = {}
        """The fields of the last complete measured pose: the values relative command fields step from."""
        self.held_sources = held_joint_sources(profile, self.command_spec) if hold else ()
        """Per action: (its joint's measured position field, the command field it feeds); empty: a fixed safe
        command."""
        self.homing = False
        """`go_home` was asked: the move home replaces the policy's and the operator's commands."""
        self.timeout = profile.staleness_timeout
        self.watchdogs = {name: Watchdog(self.timeout, clock) for name in _watched_inputs(profile)}
        self.fields: dict[str, float] = {}
        self.frames: dict[str, np.ndarray] = {}
        """The newest frame of each camera, `(height, width, channels)` uint8 at its spec's size."""
        self.observed_at = float("nan")
        self.intervention: np.ndarray | None = None
        self.intervened_at = -math.inf
        self.chunks = _chunk_queue(runtime, profile, chunk_execution or ChunkExecution())
        self.chunk_stamp = -math.inf
        """Arrival time of the observation the newest chunk was made from."""
        self.policy_in_control = False
        """The last command was the policy's own (not the safe command, not the operator's)."""
        self.handover = _handover(profile, self.safety, clock)
        """Who is in control, for a profile with a hand-over section; None: the policy, from activation."""
        self.vehicle_gate: Callable[[], str] = _no_wait
        """Why an asked take-over waits for the vehicle ("" when it need not; the vehicle link's `takeover_wait`)."""
        self.vehicle_lost: Callable[[], str] = _no_wait
        """Why the vehicle no longer follows the policy ("" while it does; the vehicle link's `control_lost`)."""
        self.held_reason: Fault = VEHICLE_HOLDS
        """While the vehicle holds: why (the fault that handed back keeps its level until the next take-over)."""

    def restart(self) -> None:
        """Start control afresh (the node activates): the e-stop latch cleared, the integrals and the policy's
        memory from their reset values; with a hand-over section the vehicle holds until a take-over."""
        self.safety.reset()
        self.policy_in_control = False
        self._policy_starts()
        if self.handover is not None:
            self.handover.restart()
            self.held_reason = VEHICLE_HOLDS

    def observe(self, fields: Mapping[str, float], source: str | None = None) -> None:
        """Merge newly arrived message fields into the latest observation and feed the watchdog of `source`, the
        profile input they came from (every input's when None: one message carrying them all)."""
        self.fields.update(fields)
        self.observed_at = self.clock()
        pose = measured_actions(self.command_spec, self.profile.action_names, self.held_sources, fields)
        if pose is not None:  # one message with every joint: a complete measured pose
            self.safety.measure(pose)
            self.measured_fields = dict(fields)
        if source is None:
            for watchdog in self.watchdogs.values():
                watchdog.feed()
        else:
            self.watchdogs[source].feed()

    def observe_frame(self, camera: str, frame: np.ndarray, source: str, age: float = 0.0) -> None:
        """A camera's newly arrived frame (prepared for the policy) from the profile input `source`, taken `age` s
        ago by its header stamp (0: unknown): it replaces the camera's previous frame and feeds that input's
        watchdog as that much older (a frame older than the staleness timeout keeps the camera stale); it triggers
        no command."""
        self.frames[camera] = frame
        self.watchdogs[source].feed(age)

    def input_ages(self) -> dict[str, float]:
        """Seconds since each watched input's last message (inf before its first)."""
        return {name: watchdog.age() for name, watchdog in self.watchdogs.items()}

    def stale_inputs(self) -> list[str]:
        """The inputs silent for longer than the staleness timeout (all of them before their first message)."""
        return [name for name, watchdog in self.watchdogs.items() if watchdog.stale()]

    def go_home(self) -> None:
        """Move to the home pose (the actions' `safe` values) instead of the policy's or the operator's commands,
        rate limited (`SafetyFilter.home_command`), until `stop_homing`; a profile holding its measured pose only."""
        if not self.held_sources:
            raise ValueError(f"profile {self.profile.name!r}: go_home needs safe_command: {HOLD_MEASURED}")
        self.homing = True

    def stop_homing(self) -> None:
        """Hand control back: the next command is the policy's again (rate limited from the measured pose)."""
        self.homing = False

    def intervene(self, action: Sequence[float]) -> None:
        """The operator's action `(action_dim,)` in policy units, used instead of the policy's while fresh."""
        values = np.asarray(action, dtype=np.float64)
        if values.shape != (len(self.profile.actions),):
            raise ValueError(f"intervention shape {values.shape}, expected ({len(self.profile.actions)},)")
        self.intervention = values
        self.intervened_at = self.clock()

    def step(self) -> ControlOutput:
        """The command for this period."""
        if self.handover is not None and not self.homing:
            return self._handover_step(self.handover)
        fresh = self.intervention is not None and self.clock() - self.intervened_at <= self.timeout
        intervened = fresh and not self.homing
        if self.homing:
            result, latency = self._home(), None
        else:
            result, latency = self._intervened() if intervened else self._filtered()
        self.policy_in_control = not intervened and not result.fault
        if self.policy_in_control:
            self.assembler.commit_integrals()
        if not result.withheld:
            self.assembler.record_action(result.command)
        return ControlOutput(self.message_fields(result), result, latency, intervened and not result.fault)

    def _handover_step(self, handover: Handover) -> ControlOutput:
        """A period under the hand-over protocol: the vehicle holds (the safe command, with why), or the policy's
        command (blended during the ramp) through the safety filter; any fault hands back in this period. The
        operator's action replaces the policy's only while the policy is in control."""
        made: dict[str, object] = {}
        step = handover.step(
            lambda: self._handover_action(made), lambda: self._input_fault(made), self.vehicle_gate, self.vehicle_lost
        )
        if step.took_over:
            self._policy_starts()
            self.policy_in_control = True
            if handover.ramp_from is not None and not self.safety.hold_measured:
                # The rate limits start from what the vehicle's controller was doing (the hold command), not from
                # the safe command the vehicle never got (a Crazyflie: thrust -1 would cap the first command at 0).
                self.safety.previous = handover.ramp_from.copy()
        if step.mode is Mode.VEHICLE:
            return self._held(step, made)
        assert step.command is not None
        fresh = self.intervention is not None and self.clock() - self.intervened_at <= self.timeout
        if fresh:
            assert self.intervention is not None
            result, latency = self.safety(self.intervention), None
        else:
            obs = made.get("obs")
            result = self.safety(step.command, obs if isinstance(obs, np.ndarray) else None)
            latency = None if result.fault else self.clock() - self.observed_at
        if result.fault:  # e.g. a non-finite action: the vehicle takes over in this period
            made["fault"] = result.fault
            return self._held(handover.hand_back(str(result.fault)), made, result)
        if not fresh:
            self.assembler.commit_integrals()
        self.assembler.record_action(result.command)
        return ControlOutput(self.message_fields(result), result, latency, fresh, step)

    def _held(
        self, step: HandoverStep, made: Mapping[str, object], result: SafetyResult | None = None
    ) -> ControlOutput:
        """The vehicle holds: the safe command (a silent vehicle's output sends none), with why: the fault found
        this period (kept while the vehicle holds), else the reason of a requested hand-back."""
        self.policy_in_control = False
        fault = made.get("fault")
        if isinstance(fault, Fault):
            self.held_reason = fault
        elif step.handed_back and result is None:
            why = handover_reason(self.handover)
            self.held_reason = VEHICLE_HOLDS.with_detail(f" ({why})") if why else VEHICLE_HOLDS
        if result is None:
            result = self._safe(self.held_reason)
        if self.handover is not None and self.handover.settings.silent:
            # What the vehicle does while its controller holds it is its hold command, not the safe command it
            # never gets: the policy's previous-action observation starts from there at the next take-over.
            self.assembler.record_action(self.handover.hold())
        elif not result.withheld:
            self.assembler.record_action(result.command)
        return ControlOutput(self.message_fields(result), result, None, False, step)

    def _input_fault(self, made: dict[str, object]) -> str:
        """Why the policy may not command now: stale inputs or the e-stop ("" when it may), also in `made`."""
        stale = self.stale_inputs()
        fault = self._stale_fault(stale) if stale else self.safety.estop_reason if self.safety.estopped else None
        if fault is None:
            return ""
        made["fault"] = fault
        return fault

    def _handover_action(self, made: dict[str, object]) -> np.ndarray | None:
        """The policy's action for now (None, with `made["fault"]`, when it cannot give one)."""
        if not self.policy_in_control and self.handover is not None and self.handover.mode is not Mode.VEHICLE:
            self._policy_starts()
        try:
            obs = self.assembler(self.fields)
        except MissingFieldError as err:
            made["fault"] = Fault(FaultKind.MISSING_FIELDS, message=str(err))
            return None
        action = self._action(obs)
        if action is None:
            made["fault"] = self._spent_fault()
            return None
        made["obs"] = obs
        return action

    def message_fields(self, result: SafetyResult) -> dict[str, float]:
        """The command message fields of a filtered command: its actions' fields and, for a JointTrajectory, the
        point's time_from_start (the result's duration, else one period); empty when the command is withheld."""
        if result.withheld:
            return {}
        fields = command_fields(self.command_spec, self.profile.action_names, result.command, self.measured_fields)
        if self.command_spec.type == JOINT_TRAJECTORY:
            fields |= trajectory_timing(result.duration or self.profile.dt)
        return fields

    def _home(self) -> SafetyResult:
        """The move home, or the held pose while an input is stale."""
        stale = self.stale_inputs()
        if stale:
            return self._safe(self._stale_fault(stale))
        return self.safety.home_command(HOMING)

    def _intervened(self) -> tuple[SafetyResult, float | None]:
        assert self.intervention is not None
        return self.safety(self.intervention), None

    def _filtered(self) -> tuple[SafetyResult, float | None]:
        stale = self.stale_inputs()
        if stale:
            return self._safe(self._stale_fault(stale)), None
        if not self.policy_in_control:
            self._policy_starts()  # the policy's control starts (again) with this period
        try:
            obs = self.assembler(self.fields)
        except MissingFieldError as err:
            return self._safe(Fault(FaultKind.MISSING_FIELDS, message=str(err))), None
        action = self._action(obs)
        if action is None:
            return self._safe(self._spent_fault()), None
        result = self.safety(action, obs)
        if result.fault and self.chunks is not None:
            self.chunks.clear()  # a non-finite chunk must not feed the next steps' commands
        return result, (self.clock() - self.observed_at) if not result.fault else None

    def _policy_starts(self) -> None:
        """The policy's uninterrupted control begins: its integral observations and its memory are reset."""
        self.assembler.reset_integrals()
        self.runtime.reset_memory()

    def _action(self, obs: np.ndarray) -> np.ndarray | None:
        """The policy's action for now: its own, or the one due now from the chunks (None: all are past)."""
        if self.chunks is None:
            return self.runtime(np.nan_to_num(obs), self.frames)
        now = self.clock()
        if self.observed_at > self.chunk_stamp and self.chunks.wants_chunk(now):
            self.chunks.push(self.runtime.chunk(np.nan_to_num(obs), self.frames), self.observed_at)
            self.chunk_stamp = self.observed_at
        return self.chunks.due(now)

    def _safe(self, fault: Fault) -> SafetyResult:
        """The safe command; queued chunks are dropped (after a fault, control restarts from a fresh one)."""
        if self.chunks is not None:
            self.chunks.clear()
        return self.safety.safe_command(fault)

    def _spent_fault(self) -> Fault:
        horizon = self.runtime.action_chunk * self.profile.dt
        age = self.clock() - self.chunk_stamp
        detail = f"the newest chunk covers {horizon:g} s, its observation is {age:.3f} s old"
        return Fault(FaultKind.CHUNK_SPENT, detail)

    def _stale_fault(self, stale: list[str]) -> Fault:
        if len(stale) == len(self.watchdogs):
            return Fault(FaultKind.STALE)
        return Fault(FaultKind.STALE, f"no {', '.join(stale)} for {self.timeout} s")


HOMING = Fault(FaultKind.HOMING, message="going home (go_home asked)")
VEHICLE_HOLDS = Fault(FaultKind.VEHICLE)
"""The vehicle's controller is in charge, not for a fault (before a take-over, or a requested hand-back)."""


def _no_wait() -> str:
    return ""


def handover_reason(handover: Handover | None) -> str:
    """The reason of the last transition to the vehicle ("" without one)."""
    if handover is None or not handover.transitions:
        return ""
    return handover.transitions[-1].reason


def _handover(profile: RobotProfile, safety: SafetyFilter, clock: Callable[[], float]) -> Handover | None:
    """The hand-over protocol of a profile with a `handover:` section: the ramp starts from its hold command, or
    from the measured pose for a vehicle holding its measured pose."""
    settings = profile.handover
    if settings is None:
        return None
    fixed = hold_vector(settings, profile.safe_action)

    def hold() -> np.ndarray:
        if settings.vehicle == "hold_measured" and safety.measured is not None:
            return safety.step_of(safety.measured)
        return fixed

    return Handover(settings, profile.dt, hold, clock)


"""The fault of the move home: the policy's commands are not sent."""


def _chunk_queue(runtime: PolicyRuntime, profile: RobotProfile, execution: ChunkExecution) -> TimedChunkQueue | None:
    """The queue of a chunked policy's timestamped actions; None for a policy that outputs one action."""
    if runtime.action_chunk == 1:
        return None
    return TimedChunkQueue(runtime.action_chunk, runtime.action_dim, profile.dt, execution)


def _watched_inputs(profile: RobotProfile) -> list[str]:
    """The inputs that arrive as messages (derived ones are computed from them); one unnamed stream without any."""
    return [spec.name for spec in profile.inputs if not spec.derive] or [""]
