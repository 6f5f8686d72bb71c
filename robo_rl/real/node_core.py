"""The policy node's control logic without ROS: inputs → commands, deadlines, e-stop, takeover and faults.

`PolicyNodeCore` wraps a `PolicyController` for real/ros/policy_node.py, which only converts messages and owns
the ROS entities. Clocks and the two outputs (the command fields to publish, the status when the command's fault
changes) are injected, so the logic runs and is tested without ROS. All of it is thread-safe as the node uses
it: input, watchdog and timer callbacks step the controller under one lock.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Protocol

import numpy as np

from robo_rl.chunks.execution import EXECUTION_MODES, ChunkExecution
from robo_rl.real.controller import ControlOutput, PolicyController
from robo_rl.real.derive import derived_fields
from robo_rl.real.fault import Fault, FaultKind, InputError, Level, fault_level
from robo_rl.real.handover import REQUESTS, Mode, VehicleLink
from robo_rl.real.latency import LatencyStats
from robo_rl.real.safety import SafetyResult

TRIGGERS = ("observation", "timer")

Decoder = Callable[[Any], dict[str, float]]
"""A message of one input → its flat fields (`odom.twist.twist.linear.x` → value)."""


class FrameDecoder(Protocol):
    """A message of one image input → its camera's frame, ready for the policy (`robo_rl.real.images.FrameDecoder`);
    InputError for a frame it cannot read."""

    @property
    def camera(self) -> str: ...

    def __call__(self, message: Any) -> np.ndarray: ...


@dataclass(frozen=True)
class NodeSettings:
    """The node's control parameters; the messages of bad values name the ROS parameter."""

    trigger: str = "observation"
    """One command per message of the first input ("observation") or per period from the latest ("timer")."""
    target: tuple[float, ...] = (0.0, 0.0, 0.0)
    """Quadrotor hover point (m), for the derived inputs."""
    deadline: float = 0.0
    """Seconds from an input's header stamp to its command; 0: the profile's dt."""
    max_missed_deadlines: int = 10
    """Consecutive late commands that latch the e-stop; 0: never."""
    chunk_execution: str = "ensemble"
    """A chunked policy's actions: "ensemble" (temporal ensembling, the default: a new chunk from every
    observation, so the command follows the latest one, averaged with the earlier chunks' predictions, which
    smooths the switch between chunks; a mean of in-bounds actions stays in bounds) or "receding" (receding
    horizon: `chunk_execute` actions of a chunk open loop, then the newest observation's chunk)."""
    ensemble_decay: float = 0.01
    """Temporal ensembling's m: weights `exp(-m * i)`, i = 0 for the oldest prediction (ACT's 0.01)."""
    chunk_execute: int = 0
    """Receding horizon: actions executed from one chunk before a newer one replaces it; 0: all H."""

    def __post_init__(self) -> None:
        if self.trigger not in TRIGGERS:
            raise ValueError(f"parameter 'trigger': must be one of {TRIGGERS}, got {self.trigger!r}")
        if len(self.target) != 3 or not all(math.isfinite(value) for value in self.target):
            raise ValueError(f"parameter 'target': expected finite [x, y, z], got {list(self.target)}")
        if not 0.0 <= self.deadline < math.inf:
            raise ValueError(
                f"parameter 'deadline': must be finite and >= 0 (0: the profile's dt), got {self.deadline}"
            )
        if self.max_missed_deadlines < 0:
            raise ValueError(
                f"parameter 'max_missed_deadlines': must be >= 0 (0: never), got {self.max_missed_deadlines}"
            )
        if self.chunk_execution not in EXECUTION_MODES:
            raise ValueError(
                f"parameter 'chunk_execution': must be one of {EXECUTION_MODES}, got {self.chunk_execution!r}"
            )
        if self.chunk_execute < 0:
            raise ValueError(f"parameter 'chunk_execute': must be >= 0 (0: the whole chunk), got {self.chunk_execute}")
        if not math.isfinite(self.ensemble_decay):
            raise ValueError(f"parameter 'ensemble_decay': must be finite, got {self.ensemble_decay}")

    def chunks(self, horizon: int) -> ChunkExecution:
        """The execution of a policy's chunks of `horizon` actions; ValueError naming the parameter."""
        execution = ChunkExecution(self.chunk_execution, self.ensemble_decay, self.chunk_execute)
        if self.chunk_execute > horizon:
            raise ValueError(f"parameter 'chunk_execute': {self.chunk_execute} > the policy's chunk of {horizon}")
        return execution


class NodeCounters:
    """What the node did since activation, as /diagnostics reports it."""

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        self.commands = 0
        self.safe_commands = 0
        self.interventions = 0
        self.missed_deadlines = 0
        self.consecutive_missed = 0
        self.last_fault = ""
        self.skipped_messages = 0
        self.last_skipped = ""
        self.withheld_commands = 0
        self.compute_latency = LatencyStats()
        self.stamp_latency = LatencyStats()
        self.stamps = StampCounters()
        self.fault_onsets: dict[str, int] = {}
        """Per fault kind (its text, e.g. "stale observation"): how many times the commands turned to it."""

    def values(self, active: bool, extra_missed: int = 0) -> dict[str, object]:
        """The diagnostics key values; `extra_missed`: the timer loop's missed ticks, added to missed_deadlines."""
        return {
            "active": active,
            "commands": self.commands,
            "safe_commands": self.safe_commands,
            "interventions": self.interventions,
            "missed_deadlines": self.missed_deadlines + extra_missed,
            "last_fault": self.last_fault,
            "skipped_messages": self.skipped_messages,
            "last_skipped": self.last_skipped,
            "withheld_commands": self.withheld_commands,
            **self.stamps.values(),
            **{f"faults.{kind}": count for kind, count in sorted(self.fault_onsets.items())},
            "compute_latency_p50_ms": self.compute_latency.percentile(50) * 1e3,
            "compute_latency_p99_ms": self.compute_latency.percentile(99) * 1e3,
            "stamp_latency_p50_ms": self.stamp_latency.percentile(50) * 1e3,
            "stamp_latency_p99_ms": self.stamp_latency.percentile(99) * 1e3,
            "stamp_latency_max_ms": self.stamp_latency.maximum() * 1e3,
        }


class StampCounters:
    """The input messages judged by their header stamps (`PolicyNodeCore`'s stamp rule), as /diagnostics reports
    them; all but `gaps` were skipped."""

    def __init__(self) -> None:
        self.future = 0
        """Stamped later than now by more than the staleness timeout (a clock ahead, or a bogus stamp)."""
        self.old = 0
        """Stamped earlier than now by more than the staleness timeout: stale on arrival."""
        self.duplicate = 0
        """The same stamp as the input's last accepted message: a copy."""
        self.reordered = 0
        """An earlier stamp than the input's last accepted message: overtaken on the way."""
        self.gaps = 0
        """Trigger-input messages stamped more than 1.5 periods after the last accepted one: messages went missing
        in between (dropped, or skipped by the rules above)."""
        self.last = ""
        """The last skipped message's input and why."""

    def values(self) -> dict[str, object]:
        return {
            "future_stamps": self.future,
            "old_stamps": self.old,
            "duplicate_messages": self.duplicate,
            "reordered_messages": self.reordered,
            "stamp_gaps": self.gaps,
            "last_stamp_skip": self.last,
        }


class PolicyNodeCore:
    """One configured policy node: decodes inputs, steps the controller, publishes and accounts for commands.

    `decoders` are the profile's subscribed inputs by name, in profile order; the first one triggers the commands
    (trigger "observation"). `frame_decoders` are its image inputs by name: their frames go with the next command
    and never trigger one. `publish_command(fields, fault)` sends one command (`fault` says why it is the safe
    one; "" for the policy's or the operator's action); `status_changed(level, message)` is
    called when the command's fault changes (level OK, WARN or ERROR of diagnostic_msgs). `now_monotonic` (s)
    times the computation, `now_ros_ns` (ns, the clock of the inputs' header stamps) the deadlines. `counters`
    may outlive this object (the node keeps reporting them after cleanup).

    The stamp rule: a stamped message (a header with a non-zero stamp) is skipped and counted (`StampCounters`) when
    its stamp is more than the staleness timeout away from `now_ros_ns` (either way), or not later than its input's
    last accepted one (a copy, or overtaken by a newer message); it then feeds no watchdog and triggers nothing, as
    an unreadable message. So an old observation never reaches the policy, and a message from the past cannot
    replace a newer one. The clocks of the stamps and of the node must agree within the staleness timeout.
    """

    def __init__(
        self,
        controller: PolicyController,
        settings: NodeSettings,
        decoders: Mapping[str, Decoder],
        publish_command: Callable[[dict[str, float], str], None],
        status_changed: Callable[[int, str], None],
        now_monotonic: Callable[[], float],
        now_ros_ns: Callable[[], int],
        counters: NodeCounters | None = None,
        frame_decoders: Mapping[str, FrameDecoder] | None = None,
        vehicle: VehicleLink | None = None,
    ) -> None:
        if not decoders:
            raise ValueError("no inputs to decode: the first input triggers the commands")
        self.controller = controller
        self.settings = settings
        self.decoders = dict(decoders)
        self.frame_decoders = dict(frame_decoders or {})
        self.publish_command = publish_command
        self.status_changed = status_changed
        self.now_monotonic = now_monotonic
        self.now_ros_ns = now_ros_ns
        self.counters = counters if counters is not None else NodeCounters()
        self.trigger_input = next(iter(self.decoders))
        self.derives = any(spec.derive for spec in controller.profile.inputs)
        self.deadline = settings.deadline or controller.profile.dt
        self.lock = threading.Lock()
        self.active = False
        self.last_stamps: dict[str, int] = {}
        """Per input: the header stamp (ns) of its last accepted message."""
        self.vehicle = vehicle
        if vehicle is not None:
            controller.vehicle_gate = vehicle.takeover_wait
            controller.vehicle_lost = vehicle.control_lost
        """The vehicle's side of the hand-over (crazyswarm2's commander, PX4's modes); None: the setpoints only."""
        handover = controller.profile.handover
        self.silent = handover is not None and handover.silent
        """While the vehicle holds, no command goes out: its controller holds it only without our setpoints (a
        quadrotor's safe command, zero thrust, must never be sent in the air)."""

    # ------------------------------------------------------------------------------------------------ lifecycle

    def activate(self) -> None:
        """Start control: clears the e-stop latch, the integral observations, a policy's memory (an episode starts:
        `PolicyController`) and the counters."""
        with self.lock:
            self.controller.restart()
            self.counters.reset()
            self.last_stamps.clear()
        self.active = True

    def stop(self, reason: str, halt: Callable[[], None] = lambda: None) -> bool:
        """Stop control and send the safe command once, with `reason` as its fault; False when not active.

        `halt` runs in between: it stops the node's timers and loop thread, so that the safe command is the last.
        """
        if not self.active:
            return False
        self.active = False
        halt()
        fault = Fault(FaultKind.STOPPED, message=reason)
        with self.lock:
            self.controller.stop_homing()
            result = self.controller.safety.safe_command(fault)
            handover = self.controller.handover
            step = None if handover is None else handover.hand_back(reason)
        output = self._output(result)
        self._send(output if step is None else replace(output, handover=step), None, None)
        return True

    def request(self, word: str) -> str:
        """An operator's request (the node's `vehicle_request` topic): "policy" (take over, after the vehicle
        link's readiness check), "vehicle" (hand back), or the vehicle link's own (crazyswarm2's "takeoff",
        "land"). Returns "" when accepted, else why not (also the status)."""
        handover = self.controller.handover
        if handover is None:
            why = f"profile {self.controller.profile.name!r} has no handover section"
        elif word == "policy":
            why = self.vehicle.ready() if self.vehicle is not None else ""
            why = why or ("" if self.active else "the node is not active")
            if not why:
                with self.lock:
                    handover.request_policy()
        elif word == "vehicle":
            with self.lock:
                handover.request_vehicle()
            why = ""
        elif self.vehicle is not None:
            with self.lock:
                why = self.vehicle.request(word)
        else:
            why = f"unknown request {word!r} (this vehicle takes {', '.join(REQUESTS)})"
        if why:
            self.status_changed(Level.WARN, f"request {word!r} refused: {why}")
        return why

    # -------------------------------------------------------------------------------------------------- control

    def on_input(self, source: str, message: object) -> None:
        """A message of input `source`: observed; when it is the trigger input, the command for it goes out."""
        if source in self.frame_decoders:
            self._on_frame(source, message)
            return
        received = self.now_monotonic()
        try:
            fields = self.decoders[source](message)
        except InputError as err:  # e.g. another publisher's JointState on the topic: skipped, feeds no watchdog
            self._skip(source, err)
            return
        stamp = stamp_ns(message)
        with self.lock:
            if stamp is not None and not self._stamp_accepted(source, stamp):
                return
            if self.derives:
                merged = {**self.controller.fields, **fields}
                fields |= derived_fields(self.controller.profile, merged, self.settings.target)
            self.controller.observe(fields, source)
            if not (source == self.trigger_input and self.active and self.settings.trigger == "observation"):
                return
            output = self.controller.step()
        self._send(output, received, stamp)

    def _stamp_accepted(self, source: str, stamp: int) -> bool:
        """The stamp rule (class docstring); counts what it skips and the trigger input's gaps (under the lock)."""
        counts, now = self.counters.stamps, self.now_ros_ns()
        window = round(self.controller.profile.staleness_timeout * 1e9)
        last = self.last_stamps.get(source)
        if last is not None and last - now > window:
            last = None  # the node's clock went back (a simulation restarted): judge afresh
        why = ""
        if stamp - now > window:
            counts.future += 1
            why = f"stamped {(stamp - now) * 1e-9:.3f} s ahead of the node's clock"
        elif now - stamp > window:
            counts.old += 1
            why = f"stamped {(now - stamp) * 1e-9:.3f} s ago"
        elif last is not None and stamp <= last:
            kind = "duplicate" if stamp == last else "reordered"
            setattr(counts, kind, getattr(counts, kind) + 1)
            why = f"{kind}: not later than the last accepted message"
        if why:
            counts.last = f"{source}: {why}"
            return False
        if last is not None and source == self.trigger_input and stamp - last > 1.5e9 * self.controller.profile.dt:
            counts.gaps += 1
        self.last_stamps[source] = stamp
        return True

    def _on_frame(self, source: str, message: object) -> None:
        """A frame of image input `source`: decoded, cropped and resized here, outside the lock (the control step
        only reads the newest), then kept for the next command, aged by its header stamp (on the clock of the
        inputs' stamps, as the deadlines are)."""
        decoder = self.frame_decoders[source]
        try:
            frame = decoder(message)
        except InputError as err:  # e.g. an encoding the profile's camera does not send: skipped, feeds no watchdog
            self._skip(source, err)
            return
        stamp = stamp_ns(message)
        age = 0.0 if stamp is None else (self.now_ros_ns() - stamp) * 1e-9
        with self.lock:
            self.controller.observe_frame(decoder.camera, frame, source, age)

    def _skip(self, source: str, err: InputError) -> None:
        """A message the profile cannot read: counted, never guessed at. Only complete messages feed the input's
        watchdog, so without them the input goes stale and the safe command follows within its timeout."""
        with self.lock:
            self.counters.skipped_messages += 1
            self.counters.last_skipped = f"{source}: {err}"

    def on_watchdog(self) -> None:
        """Observation trigger, every period: while the trigger input is stale, one command (safe, or the
        operator's action). While it arrives, its messages trigger the commands, safe ones when another input is
        stale."""
        with self.lock:
            if self.trigger_input not in self.controller.stale_inputs():
                return
            output = self.controller.step()
        self._send(output, None, None)

    def tick(self) -> float | None:
        """Timer trigger, every period: the command from the latest inputs; returns its latency (ControlLoop)."""
        started = self.now_monotonic()
        with self.lock:
            output = self.controller.step()
        self._send(output, started, None)
        return output.latency

    def estop(self) -> None:
        """Latch the safe command until the next `activate`."""
        with self.lock:
            self.controller.safety.estop()

    def go_home(self) -> None:
        """The rate-limited move home replaces the policy's commands until the next `stop` (deactivation); asked
        while inactive, it starts at the next activation. ValueError for a profile without a held pose."""
        with self.lock:
            self.controller.go_home()

    def resume_policy(self) -> None:
        """End the move home: the policy commands again, rate limited from the measured pose."""
        with self.lock:
            self.controller.stop_homing()

    def intervene(self, action: Sequence[float]) -> None:
        """The operator's action in policy units; ValueError when its length is not the action dimension."""
        with self.lock:
            self.controller.intervene(list(action))

    # ----------------------------------------------------------------------------------------------- accounting

    def _output(self, result: SafetyResult) -> ControlOutput:
        return ControlOutput(self.controller.message_fields(result), result, None)

    def _send(self, output: ControlOutput, received: float | None, stamp: int | None) -> None:
        step = output.handover
        if step is not None and self._vehicle_sends(output):
            self._account(output, received, stamp)
            return
        if output.safety.withheld:  # a held pose before any measured one: nothing is sent, not even the home pose
            self.counters.withheld_commands += 1
            fault = output.safety.fault
            withheld = " (nothing sent: no measured pose yet)"
            self._status(fault.with_detail(withheld) if isinstance(fault, Fault) else f"{fault}{withheld}")
            return
        self.publish_command(output.fields, output.safety.fault)
        self._account(output, received, stamp)

    def _vehicle_sends(self, output: ControlOutput) -> bool:
        """The vehicle link's part of this period; True when nothing else is published: the link sent it, or the
        vehicle holds and must not get the safe command."""
        step = output.handover
        assert step is not None
        sent = False
        if self.vehicle is not None:
            sent = self.vehicle.on_step(step, output.fields, self.controller.fields)
        return sent or (self.silent and step.mode is Mode.VEHICLE)

    def _account(self, output: ControlOutput, received: float | None, stamp: int | None) -> None:
        counters = self.counters
        counters.commands += 1
        counters.interventions += int(output.intervened)
        fault = output.safety.fault
        if received is not None and not fault:
            counters.compute_latency.record(self.now_monotonic() - received)
        latched: Fault | None = None
        if stamp:
            latency = (self.now_ros_ns() - stamp) * 1e-9
            counters.stamp_latency.record(latency)
            latched = self._deadline(latency)
        if fault:
            counters.safe_commands += 1
        self._status(fault)
        if latched:  # reported last, so that the status of this command's own fault does not replace it
            counters.last_fault = "missed deadlines"
            counters.fault_onsets["missed deadlines"] = counters.fault_onsets.get("missed deadlines", 0) + 1
            self.status_changed(*fault_status(latched))

    def _status(self, fault: str) -> None:
        if fault != self.counters.last_fault:
            self.counters.last_fault = fault
            if fault:
                kind = fault.kind.text if isinstance(fault, Fault) else fault
                self.counters.fault_onsets[kind] = self.counters.fault_onsets.get(kind, 0) + 1
            self.status_changed(*fault_status(fault))

    def _deadline(self, latency: float) -> Fault | None:
        """Count a late command; the fault when it latches the e-stop, None otherwise."""
        counters = self.counters
        if latency <= self.deadline:
            counters.consecutive_missed = 0
            return None
        counters.missed_deadlines += 1
        counters.consecutive_missed += 1
        limit = self.settings.max_missed_deadlines
        if limit > 0 and counters.consecutive_missed >= limit and not self.controller.safety.estopped:
            self.controller.safety.estop()
            return Fault(FaultKind.MISSED_DEADLINES, f"{counters.consecutive_missed} in a row, e-stop latched")
        return None

    # ---------------------------------------------------------------------------------------------- diagnostics

    def diagnostics(self, extra_missed: int = 0) -> dict[str, object]:
        """The diagnostics key values; `extra_missed` as in `NodeCounters.values`."""
        values = self.counters.values(self.active, extra_missed)
        values["command_type"] = self.controller.command_spec.type
        values["estopped"] = self.controller.safety.estopped
        if self.controller.held_sources:
            values["homing"] = self.controller.homing
        # Read without the lock: a status change publishes the diagnostics from within the accounting, and the
        # ages are floats replaced whole.
        ages = self.controller.input_ages()
        values["stale_inputs"] = ", ".join(name for name in self.controller.stale_inputs() if name)
        values |= {f"input_age_ms.{name or 'observation'}": age * 1e3 for name, age in ages.items()}
        if self.controller.handover is not None:
            values |= self.controller.handover.diagnostics()
        if self.vehicle is not None:
            values |= self.vehicle.diagnostics()
        chunks = self.controller.chunks
        if chunks is not None:
            values["action_chunk"] = chunks.horizon
            values["chunk_execution"] = chunks.execution.mode
        return values


def fault_status(fault: str) -> tuple[Level, str]:
    """The status for a command's fault: (OK, "active") without one, else its kind's level (`robo_rl.real.fault`)."""
    if not fault:
        return Level.OK, "active"
    return fault_level(fault), f"safe command: {fault}"


def stamp_ns(message: object) -> int | None:
    """The header stamp of a message in ns; None without a header or with a zero stamp."""
    header = getattr(message, "header", None)
    if header is None:
        return None
    return int(header.stamp.sec) * 1_000_000_000 + int(header.stamp.nanosec) or None
