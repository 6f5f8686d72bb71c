"""The soak on the wall clock, a benchmark (bench/soak.py --real-time): policy_node flying sim_bridge's quadrotor in
real time through the fault-injecting relay, with rates, deadlines, latencies and memory measured.

argv: LOG_DIR POLICY SECONDS SEED EVERY_MESSAGES. sim_bridge runs in real time (100 Hz, lockstep off) on
/cf1/sim/odom and /cf1/sim/cmd_motors; policy_node on the bundled quadrotor_crazyflie profile (50 ms staleness,
e-stop after 10 late commands in a row) on /cf1/odom and /cf1/cmd_motors; this script relays the odometry to the
node as it comes (every EVERY_MESSAGES messages a fault of scenario_soak.py's kinds but the clock jump: the node's
clock is the machine's) and the node's commands to sim_bridge. The process stop keeps its backlog here: the
messages sent while the node is stopped wait for it, and it reads them on the wall clock.

Checked on every command, as in stepped time but without knowing when the node reads each message: finite, within
the rate limit, and the safe command or the policy's answer to one of the messages handed over (each answer used
once, in order); an answer to a message the node must skip whatever the timing (a copy, an overtaken message, one
stamped 1 s or 1 h off) is a violation. Measured: commands per second, the node's missed deadlines and latencies
(/diagnostics), answers whose message was older than the staleness timeout when the command arrived here, RSS. A
latched e-stop (missed deadlines) is counted and cleared by deactivate → activate, as an operator would.
"""

from __future__ import annotations

import math
import os
import random
import signal
import sys
import time
from collections import deque
from pathlib import Path
from typing import Any

import numpy as np
import rclpy
from diagnostic_msgs.msg import DiagnosticArray
from harness import Processes, finish, ros_args
from lifecycle_msgs.msg import Transition
from lifecycle_msgs.srv import ChangeState
from nav_msgs.msg import Odometry
from rclpy.qos import QoSProfile, ReliabilityPolicy, qos_profile_sensor_data
from scenario_soak import NODE, NS, odom_values, odometry_message, rss_growth, rss_kib
from soak_model import FAULT_KINDS, PWM, Odom, Policy, Referee, answers, fault_schedule
from std_msgs.msg import Float32MultiArray

from robo_rl.real.profile import load_profile
from robo_rl.real.ros.executor import make_executor

KINDS = tuple(kind for kind in FAULT_KINDS if kind != "clock_jump")
DELAY_MESSAGES = 3
STOP_S = 0.3
RESTART_MESSAGES = 3
CANDIDATES = 200
"""Messages handed over that an answer may still come for."""


class Candidate:
    """A message handed over: its stamp and the policy's answer (None: the node must skip it, or must answer it
    with the safe command)."""

    def __init__(self, stamp: int, action: np.ndarray | None) -> None:
        self.stamp, self.action = stamp, action


class RealTimeSoak:
    """The relay and the lenient referee on the wall clock (module docstring)."""

    def __init__(self, log_dir: Path, policy: str, seed: int, every: int, seconds: float) -> None:
        self.processes = Processes(log_dir)
        profile = load_profile("quadrotor_crazyflie")
        bridge = {"profile": "quadrotor_crazyflie", "task": "quadrotor/hover", "lockstep": False, "seed": seed}
        remap = ["-r", "odom:=sim/odom", "-r", "cmd_motors:=sim/cmd_motors"]
        self.processes.start("sim_bridge", "sim_bridge", *ros_args("sim_bridge", "/cf1", **bridge), *remap)
        params = {"profile": "quadrotor_crazyflie", "policy": policy, "autostart": True}
        self.node_process = self.processes.start(
            "policy_node", "policy_node", *ros_args("policy_node", "/cf1", **params)
        )
        rclpy.init()
        self.probe = rclpy.create_node("soak")
        self.executor = make_executor()
        self.executor.add_node(self.probe)
        # The referee's answers and staleness only: the matching below is this class's own.
        self.referee = Referee(Policy(policy), round(profile.staleness_timeout * NS), round(profile.dt * NS), 0.0)
        self.rate_limit = profile.actions[0].rate_limit * profile.dt
        self.rng = random.Random(seed + 1)
        rate = 1.0 / profile.dt
        self.schedule = fault_schedule(self.rng.randrange(1 << 30), round(seconds * rate), every, start=every)
        self.schedule = {step: kind if kind in KINDS else "drop" for step, kind in self.schedule.items()}
        self.step = 0
        self.held: list[Odom] = []
        self.hold_until = self.silent_until = self.swap_at = -1
        self.candidates: deque[Candidate] = deque(maxlen=CANDIDATES)
        self.previous: np.ndarray | None = None
        self.counts: dict[str, int] = {}
        self.violations: list[str] = []
        self.injected: dict[str, int] = {}
        self.diagnostics: dict[str, str] = {}
        self.rss_kib: list[tuple[float, int]] = []
        self.resume_at = math.inf
        self.reactivations = 0
        reliable = QoSProfile(depth=1000, reliability=ReliabilityPolicy.RELIABLE)
        self.relay_pub: Any = self._relay_publisher()
        self.sim_cmd_pub = self.probe.create_publisher(Float32MultiArray, "/cf1/sim/cmd_motors", 10)
        self.probe.create_subscription(Odometry, "/cf1/sim/odom", self._on_sim_odom, qos_profile_sensor_data)
        self.probe.create_subscription(Float32MultiArray, "/cf1/cmd_motors", self._on_command, reliable)
        self.probe.create_subscription(DiagnosticArray, "/diagnostics", self._on_diagnostics, reliable)
        self.change_state = self.probe.create_client(ChangeState, f"{NODE}/change_state")

    def _relay_publisher(self) -> Any:
        return self.probe.create_publisher(Odometry, "/cf1/odom", qos_profile_sensor_data)

    def _count(self, key: str) -> None:
        self.counts[key] = self.counts.get(key, 0) + 1

    # ------------------------------------------------------------------------------------------------- the relay

    def _on_sim_odom(self, message: Odometry) -> None:
        stamp = message.header.stamp.sec * NS + message.header.stamp.nanosec
        odom, index = Odom(stamp, odom_values(message)), self.step
        self.step += 1
        kind = self.schedule.get(index, "")
        if kind:
            self.injected[kind] = self.injected.get(kind, 0) + 1
            self._start(kind, index)
        if index <= self.silent_until:
            return  # dropped, or no publisher while it restarts
        if index <= self.hold_until:
            self.held.append(odom)
            return
        out, self.held = [*self.held, odom], []
        if index == self.swap_at:
            out.reverse()
        for item in self._poisoned(kind, out):
            self._hand_over(item)

    def _start(self, kind: str, index: int) -> None:
        """A fault that starts at message `index`."""
        if kind == "delay":
            self.hold_until = index + DELAY_MESSAGES - 1
        elif kind == "drop":
            self.silent_until = index + self.rng.randint(1, 8) - 1
        elif kind == "publisher_restart":
            self.probe.destroy_publisher(self.relay_pub)
            self.relay_pub = None
            self.silent_until = index + RESTART_MESSAGES - 1
        elif kind == "sigstop":
            os.kill(self.node_process.pid, signal.SIGSTOP)
            self.resume_at = time.monotonic() + STOP_S
        elif kind == "reorder":
            self.hold_until, self.swap_at = index, index + 1

    def _poisoned(self, kind: str, out: list[Odom]) -> list[Odom]:
        last = out[-1]
        if kind == "duplicate":
            return [*out, last]
        if kind in ("future_stamp", "past_stamp"):
            shift = round(self.rng.choice((1.0, 3600.0)) * NS)
            return [*out[:-1], Odom(last.stamp + (shift if kind == "future_stamp" else -shift), last.values)]
        if kind == "non_finite":
            values = list(last.values)
            values[self.rng.randrange(len(values))] = self.rng.choice((math.nan, math.inf, -math.inf))
            return [*out[:-1], Odom(last.stamp, tuple(values))]
        return out

    def _hand_over(self, odom: Odom) -> None:
        newest = self.candidates[-1].stamp if self.candidates else None
        off = abs(odom.stamp - self.probe.get_clock().now().nanoseconds) > NS // 2
        skip = off or (newest is not None and odom.stamp <= newest)
        finite = all(math.isfinite(v) for v in odom.values)
        action = None if skip or not finite else self.referee.answer(odom)
        if not skip:
            self.candidates.append(Candidate(odom.stamp, action))
        if self.relay_pub is not None:
            self.relay_pub.publish(odometry_message(odom))

    # ---------------------------------------------------------------------------------------------- the referee

    def _on_command(self, message: Float32MultiArray) -> None:
        data = list(message.data)
        self.sim_cmd_pub.publish(Float32MultiArray(data=data))
        self._count("commands")
        values = np.asarray(data, dtype=np.float64)
        if not np.all(np.isfinite(values)):
            self.violations.append(f"non-finite command {data}")
            return
        action = (values - PWM) / PWM
        safe = bool(np.all(values == 0.0))
        if not safe and self.previous is not None and np.abs(action - self.previous).max() > self.rate_limit + 1e-6:
            self.violations.append(f"jump {self.previous.tolist()} -> {action.tolist()}")
        self.previous = action
        if safe:
            self._count("safe_commands")
            return
        self._match(data)

    def _match(self, data: list[float]) -> None:
        """The oldest handed-over message this command answers; it and the ones before it are used up."""
        for index, candidate in enumerate(self.candidates):
            if candidate.action is not None and answers(data, candidate.action):
                age = self.probe.get_clock().now().nanoseconds - candidate.stamp
                if age > self.referee.staleness_ns:
                    self._count("answers_older_than_timeout_on_arrival")
                for _ in range(index + 1):
                    self.candidates.popleft()
                self._count("policy_answers")
                return
        self.violations.append(f"command {data} answers no message handed over")

    def _on_diagnostics(self, message: DiagnosticArray) -> None:
        for status in message.status:
            if status.name == NODE:
                self.diagnostics = {kv.key: kv.value for kv in status.values} | {"message": status.message}

    # ---------------------------------------------------------------------------------------------------- the run

    def run(self, seconds: float) -> float:
        """Relay for `seconds` of wall time once the node answers; returns the seconds relayed."""
        deadline = time.monotonic() + 120.0
        while self.counts.get("commands", 0) < 10 and time.monotonic() < deadline:
            self.executor.spin_once(timeout_sec=0.01)
        self.counts.clear()
        self.violations.clear()
        start = time.monotonic()
        next_sample = start
        while (now := time.monotonic()) < start + seconds:
            self.executor.spin_once(timeout_sec=0.002)
            if now >= self.resume_at:
                os.kill(self.node_process.pid, signal.SIGCONT)
                self.resume_at = math.inf
            if self.relay_pub is None and self.step > self.silent_until:
                self.relay_pub = self._relay_publisher()
            if now >= next_sample:
                self.rss_kib.append((now - start, rss_kib(self.node_process.pid)))
                next_sample += 1.0
            if self.diagnostics.get("estopped") == "True":
                self._reactivate()
        return time.monotonic() - start

    def _reactivate(self) -> None:
        """The operator clears a latched e-stop: deactivate, then activate."""
        self.diagnostics = {}
        self.reactivations += 1
        for transition in (Transition.TRANSITION_DEACTIVATE, Transition.TRANSITION_ACTIVATE):
            request = ChangeState.Request()
            request.transition.id = transition
            future = self.change_state.call_async(request)
            deadline = time.monotonic() + 10.0
            while not future.done() and time.monotonic() < deadline:
                self.executor.spin_once(timeout_sec=0.01)


def main() -> None:
    log_dir, policy = Path(sys.argv[1]), sys.argv[2]
    seconds, seed, every = float(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
    soak = RealTimeSoak(log_dir, policy, seed, every, seconds)
    relayed = soak.run(seconds)
    os.kill(soak.node_process.pid, signal.SIGCONT)  # in case the run ended within a stop
    soak.diagnostics = {}
    deadline = time.monotonic() + 5.0
    while not soak.diagnostics and time.monotonic() < deadline:
        soak.executor.spin_once(timeout_sec=0.05)  # the node's next periodic /diagnostics (every second)
    counts, diagnostics = soak.counts, soak.diagnostics
    results: dict[str, Any] = {
        "wall_seconds": relayed,
        "injected": soak.injected,
        "measured": counts,
        "command_rate_hz": counts.get("commands", 0) / relayed,
        "violations": len(soak.violations),
        "violation_examples": soak.violations[:10],
        "estop_latches": soak.reactivations,
        "diagnostics": diagnostics,
        "rss_kib": soak.rss_kib,
    }
    results |= rss_growth(soak.rss_kib, min(60.0, 0.2 * seconds))
    finish(results, soak.processes, ["policy_node", "sim_bridge"])


if __name__ == "__main__":
    main()
