"""The soak with faults: policy_node flying sim_bridge's quadrotor through a relay that injects faults, in stepped
simulated time (faster than real time), with every command checked as it arrives (soak_model.Referee).

argv: LOG_DIR POLICY SIM_SECONDS SEED EVERY_STEPS. Processes: sim_bridge (quadrotor/hover, lockstep, use_sim_time) on
/cf1/sim/odom and /cf1/sim/cmd_motors; policy_node (the bundled quadrotor_crazyflie profile, autostart,
use_sim_time) on /cf1/odom and /cf1/cmd_motors. This script is the clock (/clock), the relay between the two and
the referee. Each step of 10 ms: /clock advances; sim_bridge steps with the last command and publishes its
odometry; the relay hands it to policy_node (or, at a fault, drops, holds, copies, reorders, restamps or poisons it);
the script waits for the node's answers to what it had to answer, and the node's latest command goes to
sim_bridge. /clock and the relayed odometry go out from this one participant, in that order, so the node reads each
message with its clock at that message's step (a best-effort /clock lost on loopback would put it one step behind).

The faults (soak_model.FAULT_KINDS), one every EVERY_STEPS steps, and where /diagnostics names each:
- drop: 1 to 8 messages in a row never reach the node: `stamp_gaps` (and `faults.stale observation` from 6 on);
- delay: 3 messages held, then handed over with the 4th, in order: `missed_deadlines` (30 and 20 ms late);
- duplicate: a message handed over twice: `duplicate_messages`;
- reorder: a message handed over after its successor: `reordered_messages`;
- future_stamp / past_stamp: a message stamped 1 s or 1 h ahead / ago: `future_stamps` / `old_stamps`;
- publisher_restart: the relay's publisher destroyed, 3 steps without it, a new one: the node cannot tell a new
  writer from an old one; it names the 3 messages that went missing, `stamp_gaps`;
- non_finite: NaN, inf or -inf in one odometry field: `faults.non-finite` (the safe command answers it);
- sigstop: policy_node stopped (SIGSTOP) for 300 ms of wall time while 30 steps (300 ms) of simulated time pass
  with the clock only (no odometry reaches it: a backlog read before the clock catches up would look fresh to a node
  on simulated time, which no node on the wall clock sees; bench/soak.py --real-time stops it with its backlog):
  `faults.stale observation`;
- clock_jump: /clock jumps 0.1, 0.5 or 2 s ahead: `faults.stale observation`.
The referee's own counts of what the node must report (skips by reason, gaps, missed deadlines) are compared with
the node's /diagnostics at the end. policy_node's RSS (/proc) is sampled every simulated second.
"""

from __future__ import annotations

import math
import os
import random
import signal
import sys
import time
from pathlib import Path
from typing import Any

import rclpy
from diagnostic_msgs.msg import DiagnosticArray
from harness import Processes, finish, ros_args
from nav_msgs.msg import Odometry
from rclpy.qos import QoSProfile, ReliabilityPolicy, qos_profile_sensor_data
from rosgraph_msgs.msg import Clock
from soak_model import ODOM_FIELDS, Odom, Policy, Referee, answers, fault_schedule
from std_msgs.msg import Float32MultiArray

from robo_rl.real.profile import load_profile
from robo_rl.real.ros.executor import make_executor

NS = 1_000_000_000
DT_NS = 10_000_000
START_NS = 10_000 * NS
"""Simulated time of the first step: far enough from 0 that a stamp 1 h in the past is still a valid time."""
NODE = "/cf1/policy_node"
ANSWER_WAIT_S = 5.0
"""Wall seconds to wait for a pending answer before the message is sent again (it may have been lost on the way:
best effort); a copy the node did get is then a duplicate it skips."""
RESENDS = 10
SIM_WAIT_S = 2.0
"""Wall seconds to wait for sim_bridge's odometry of a step before counting a stall and moving on: a lockstep tick
that read the clock before the last command (not always delivered in the order sent) waits for the next one. The
node and the referee then both see a gap in the stamps."""
STOP_STEPS = 30
STOP_WALL_S = 0.3
DELAY_STEPS = 3
RESTART_STEPS = 3
START_S = 300.0
"""Wall seconds for both nodes to come up and answer (a loaded machine imports torch slowly)."""
WARMUP_S = 60.0
"""Simulated seconds before the RSS baseline (imports, allocator pools and DDS history fill up first)."""


class Soak:
    """The clock, the relay and the referee (module docstring)."""

    def __init__(self, log_dir: Path, policy: str, seed: int) -> None:
        self.processes = Processes(log_dir)
        profile = load_profile("quadrotor_crazyflie")
        common = {"profile": "quadrotor_crazyflie", "use_sim_time": True}
        bridge = {**common, "task": "quadrotor/hover", "lockstep": True, "seed": seed}
        remap = ["-r", "odom:=sim/odom", "-r", "cmd_motors:=sim/cmd_motors"]
        self.processes.start("sim_bridge", "sim_bridge", *ros_args("sim_bridge", "/cf1", **bridge), *remap)
        node_params = {**common, "policy": policy, "autostart": True}
        self.node_process = self.processes.start(
            "policy_node", "policy_node", *ros_args("policy_node", "/cf1", **node_params)
        )
        rclpy.init()
        self.probe = rclpy.create_node("soak")
        self.executor = make_executor()
        self.executor.add_node(self.probe)
        rate_limit = profile.actions[0].rate_limit
        self.referee = Referee(Policy(policy), round(profile.staleness_timeout * NS), DT_NS, float(rate_limit))
        self.rng = random.Random(seed + 1)
        self.now = START_NS
        self.sim_odom: dict[int, Odometry] = {}
        self.last_command: list[float] | None = None
        self.refereeing = False
        self.startup: dict[str, bool] = {}
        """What start() saw last (for a start that timed out)."""
        self.commands_seen = 0
        self.diagnostics: dict[str, str] = {}
        self.rss_kib: list[tuple[float, int]] = []
        self.injected: dict[str, int] = {}
        self.held: list[Odom] = []
        self.release_at = -1
        self.resends = self.stalls = self.unanswered = 0
        self.resent: list[dict[str, Any]] = []
        """Where answers were waited for in vain: the step, the last fault and its step."""
        self.step, self.fault = 0, ("", 0)
        self._entities()

    def _entities(self) -> None:
        probe = self.probe
        reliable = QoSProfile(depth=1000, reliability=ReliabilityPolicy.RELIABLE)
        self.clock_pub = probe.create_publisher(Clock, "/clock", 10)
        self.relay_pub = self._relay_publisher()
        self.sim_cmd_pub = probe.create_publisher(Float32MultiArray, "/cf1/sim/cmd_motors", 10)
        probe.create_subscription(Odometry, "/cf1/sim/odom", self._on_sim_odom, qos_profile_sensor_data)
        probe.create_subscription(Float32MultiArray, "/cf1/cmd_motors", self._on_command, reliable)
        probe.create_subscription(DiagnosticArray, "/diagnostics", self._on_diagnostics, reliable)

    def _relay_publisher(self) -> Any:
        return self.probe.create_publisher(Odometry, "/cf1/odom", qos_profile_sensor_data)

    # ------------------------------------------------------------------------------------------------ callbacks

    def _on_sim_odom(self, message: Odometry) -> None:
        stamp = message.header.stamp.sec * NS + message.header.stamp.nanosec
        self.sim_odom[stamp] = message

    def _on_command(self, message: Float32MultiArray) -> None:
        self.last_command = list(message.data)
        self.commands_seen += 1
        if self.refereeing:
            self.referee.command(self.last_command)

    def _on_diagnostics(self, message: DiagnosticArray) -> None:
        for status in message.status:
            if status.name == NODE:
                self.diagnostics = {kv.key: kv.value for kv in status.values} | {"message": status.message}

    def spin_until(self, condition: Any, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while not condition():
            if time.monotonic() > deadline:
                return False
            self.executor.spin_once(timeout_sec=0.005)
        return True

    # ----------------------------------------------------------------------------------------------------- steps

    def start(self) -> bool:
        """Until both nodes are up: the clock at the first step, the node subscribed, sim_bridge publishing."""
        deadline = time.monotonic() + START_S
        while time.monotonic() < deadline:
            self._publish_clock()
            self.startup = {
                "node_subscribed": self.relay_pub.get_subscription_count() > 0,
                "node_publishes": self.probe.count_publishers("/cf1/cmd_motors") > 0,
                "sim_publishes": bool(self.sim_odom),
            }
            if all(self.startup.values()):
                return self._handshake(deadline)
            self.spin_until(lambda: False, 0.1)
        return False

    def _handshake(self, deadline: float) -> bool:
        """Steps with odometry, unrefereed, until one is answered (the command topic's match may come later than
        the node's subscription to the odometry); the referee then starts from the last message sent."""
        while time.monotonic() < deadline:
            odom = self.advance()
            if odom is None:
                continue
            self.relay_pub.publish(odometry_message(odom))
            answer = self.referee.answer(odom)
            if self.spin_until(lambda a=answer: self.last_command is not None and answers(self.last_command, a), 1.0):
                self.referee.last_stamp, self.refereeing = odom.stamp, True  # earlier answers came before this one
                self.actuate()
                return True
        self.startup["answered"] = False
        return False

    def _publish_clock(self) -> None:
        message = Clock()
        message.clock.sec, message.clock.nanosec = divmod(self.now, NS)
        self.clock_pub.publish(message)

    def advance(self, jump_ns: int = 0) -> Odom | None:
        """One step: the clock moves dt (and `jump_ns`), sim_bridge's odometry of it (None: a stall)."""
        self.now += DT_NS + jump_ns
        self._publish_clock()
        if not self.spin_until(lambda: self.now in self.sim_odom, SIM_WAIT_S):
            self.stalls += 1
            return None
        message = self.sim_odom.pop(self.now)
        self.sim_odom = {k: v for k, v in self.sim_odom.items() if k > self.now}
        return Odom(self.now, odom_values(message))

    def deliver(self, odoms: list[Odom]) -> None:
        """Hand messages to the node, then wait for the answers it owes (sent again when lost on the way)."""
        for odom in odoms:
            self.referee.deliver(odom, self.now)
            self.relay_pub.publish(odometry_message(odom))
        for _ in range(RESENDS):
            if self.spin_until(lambda: not self.referee.pending, ANSWER_WAIT_S):
                break
            self.resends += 1
            self.resent.append({"step": self.step, "fault": self.fault, "sim_s": (self.now - START_NS) / NS})
            self._publish_clock()
            stamps = {p.stamp for p in self.referee.pending}
            for odom in odoms:
                if odom.stamp in stamps:
                    self.relay_pub.publish(odometry_message(odom))
        else:
            self.unanswered += len(self.referee.pending)
            self.referee.pending.clear()

    def actuate(self) -> None:
        """The node's latest command to the simulated motors (what a motor driver keeps applying)."""
        if self.last_command is not None:
            self.sim_cmd_pub.publish(Float32MultiArray(data=self.last_command))

    def run(self, steps: int, every: int) -> None:
        schedule = fault_schedule(self.rng.randrange(1 << 30), steps, every, start=every)
        step = next_sample = 0
        while step < steps:
            kind = schedule.get(step, "")
            if kind:
                self.injected[kind] = self.injected.get(kind, 0) + 1
                self.fault = (kind, step)
            self.step = step
            step += self.fault_step(kind) if kind in MULTI_STEP else self.one_step(step, kind)
            if step >= next_sample:  # every simulated second
                self.rss_kib.append((step * DT_NS / NS, rss_kib(self.node_process.pid)))
                next_sample += 100

    def one_step(self, step: int, kind: str) -> int:
        """A step with at most a one-message fault; returns 1."""
        jump = round(self.rng.choice((0.1, 0.5, 2.0)) * NS) if kind == "clock_jump" else 0
        odom = self.advance(jump)
        if odom is None:
            self.actuate()
            return 1
        if kind == "delay":
            self.release_at = step + DELAY_STEPS
        if step < self.release_at:
            self.held.append(odom)
            self.actuate()
            return 1
        out, self.held = [*self.held, odom], []
        if kind == "duplicate":
            out.append(odom)
        elif kind in ("future_stamp", "past_stamp"):
            shift = round(self.rng.choice((1.0, 3600.0)) * NS)
            out[-1] = Odom(odom.stamp + (shift if kind == "future_stamp" else -shift), odom.values)
        elif kind == "non_finite":
            values = list(odom.values)
            values[self.rng.randrange(len(values))] = self.rng.choice((math.nan, math.inf, -math.inf))
            out[-1] = Odom(odom.stamp, tuple(values))
        self.deliver(out)
        self.actuate()
        return 1

    def fault_step(self, kind: str) -> int:
        """A fault over several steps (drop, reorder, publisher_restart, sigstop); returns the steps taken."""
        if kind == "reorder":
            first = self.advance()
            self.actuate()
            second = self.advance()
            self.deliver([o for o in (second, first) if o is not None])
            self.actuate()
            return 2
        if kind == "sigstop":
            return self._stopped()
        count = self.rng.randint(1, 8) if kind == "drop" else RESTART_STEPS
        if kind == "publisher_restart":
            self.probe.destroy_publisher(self.relay_pub)
        for _ in range(count):
            self.advance()
            self.actuate()
        if kind == "publisher_restart":
            self.relay_pub = self._relay_publisher()
            self.spin_until(lambda: self.relay_pub.get_subscription_count() > 0, 30.0)
        return count

    def _stopped(self) -> int:
        started = time.monotonic()
        os.kill(self.node_process.pid, signal.SIGSTOP)
        try:
            for _ in range(STOP_STEPS):
                self.advance()
                self.actuate()
            time.sleep(max(0.0, STOP_WALL_S - (time.monotonic() - started)))
        finally:
            os.kill(self.node_process.pid, signal.SIGCONT)
        self._caught_up()
        return STOP_STEPS

    def _caught_up(self) -> None:
        """After SIGCONT: the clock again until the node's watchdog answers it (the input is stale by then). The
        first odometry read straight after the stop was sometimes judged on a clock from within the stop (2 of 18
        stops: skipped as stamped ahead), whatever the order the samples were sent in."""
        seen, deadline = self.commands_seen, time.monotonic() + 30.0
        while time.monotonic() < deadline:
            self._publish_clock()
            if self.spin_until(lambda: self.commands_seen > seen, 0.2):
                return

    def final_diagnostics(self) -> dict[str, str]:
        """The node's /diagnostics after 2 simulated s without odometry (stale: a status change publishes them)."""
        self.diagnostics = {}
        for _ in range(200):
            self.advance()
            self.actuate()
        self.spin_until(lambda: "stale" in self.diagnostics.get("message", ""), 30.0)
        return self.diagnostics


MULTI_STEP = ("drop", "reorder", "publisher_restart", "sigstop")


def odom_values(message: Odometry) -> tuple[float, ...]:
    """An Odometry's values in `soak_model.ODOM_FIELDS` order."""
    pose, twist = message.pose.pose, message.twist.twist
    p, q, v, w = pose.position, pose.orientation, twist.linear, twist.angular
    return (p.x, p.y, p.z, q.w, q.x, q.y, q.z, v.x, v.y, v.z, w.x, w.y, w.z)


def odometry_message(odom: Odom) -> Odometry:
    """The Odometry the relay sends for `odom` (frame "world")."""
    message = Odometry()
    message.header.stamp.sec, message.header.stamp.nanosec = divmod(odom.stamp, NS)
    message.header.frame_id = "world"
    pose, twist = message.pose.pose, message.twist.twist
    values = dict(zip(ODOM_FIELDS, odom.values, strict=True))
    pose.position.x, pose.position.y, pose.position.z = values["px"], values["py"], values["pz"]
    o = pose.orientation
    o.w, o.x, o.y, o.z = values["qw"], values["qx"], values["qy"], values["qz"]
    twist.linear.x, twist.linear.y, twist.linear.z = values["vx"], values["vy"], values["vz"]
    twist.angular.x, twist.angular.y, twist.angular.z = values["wx"], values["wy"], values["wz"]
    return message


def rss_kib(pid: int) -> int:
    """A process's resident set size (KiB, /proc/PID/status)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def rss_growth(samples: list[tuple[float, int]], warmup_s: float) -> dict[str, float | None]:
    """RSS after warm-up: the mean of the first and of the last tenth of the samples, and the growth between."""
    kept = [kib for t, kib in samples if t >= warmup_s]
    if len(kept) < 10:
        return {"rss_first_kib": None, "rss_last_kib": None, "rss_growth_percent": None}
    tenth = len(kept) // 10
    first, last = sum(kept[:tenth]) / tenth, sum(kept[-tenth:]) / tenth
    return {"rss_first_kib": first, "rss_last_kib": last, "rss_growth_percent": 100.0 * (last - first) / first}


def main() -> None:
    log_dir, policy = Path(sys.argv[1]), sys.argv[2]
    sim_seconds, seed, every = float(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
    soak = Soak(log_dir, policy, seed)
    results: dict[str, Any] = {"started": soak.start()}
    results["startup"] = soak.startup
    wall = time.monotonic()
    if results["started"]:
        soak.run(round(sim_seconds * NS / DT_NS), every)
        results["wall_seconds"] = time.monotonic() - wall
        results["diagnostics"] = soak.final_diagnostics()
    referee = soak.referee
    results |= {
        "sim_seconds": (soak.now - START_NS) / NS,
        "injected": soak.injected,
        "expected": referee.counts,
        "violations": len(referee.violations),
        "violation_examples": referee.violations[:10],
        "unanswered": soak.unanswered,
        "resends": soak.resends,
        "resent": soak.resent[:20],
        "sim_stalls": soak.stalls,
        "rss_kib": soak.rss_kib,
    }
    results |= rss_growth(soak.rss_kib, min(WARMUP_S, 0.2 * sim_seconds))
    finish(results, soak.processes, ["policy_node", "sim_bridge"])


if __name__ == "__main__":
    main()
