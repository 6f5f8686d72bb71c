"""The soak's faults and its independent account of what policy_node must answer (no ROS: numpy and onnxruntime).

`fault_schedule` says which fault starts at which step (seeded; the kinds in shuffled rounds, so every kind comes
equally often). `Referee` judges each odometry message the relay hands the node, by the node's documented rules
(docs/ROBOT.md, section 5: the stamp rule, NaN/inf, the staleness timeout) but computed here: the observation from
the odometry (position error, body-to-world rotation, world velocity, body rates), the policy from policy.onnx in
onnxruntime, the profile's bounds and safe command. Each command the node sends is then checked against what is
pending: the policy's answer to the next accepted message, or the safe command; a safe command may also come from
the node's watchdog at any time. Violations: a non-finite command, a jump between two commands beyond the profile's
rate limit, a command that is neither the safe one nor the policy's answer to a message the node had to answer
(an answer to a message it had to skip is one: a stale command).
"""

from __future__ import annotations

import math
import random
from collections import deque
from dataclasses import dataclass, field

import numpy as np

FAULT_KINDS = (
    "drop",
    "delay",
    "duplicate",
    "reorder",
    "future_stamp",
    "past_stamp",
    "publisher_restart",
    "non_finite",
    "sigstop",
    "clock_jump",
)
ODOM_FIELDS = ("px", "py", "pz", "qw", "qx", "qy", "qz", "vx", "vy", "vz", "wx", "wy", "wz")
"""An odometry message's values: position (m), orientation (w x y z), body linear velocity (m/s), body rates."""
PWM = 32767.5
"""The Crazyflie profile's command: PWM = PWM + PWM * action on data[0..3]."""
PWM_TOLERANCE = 0.5
"""Of 65535: the command travels as float32; the observation is computed here in float64 as the node does."""


def fault_schedule(seed: int, steps: int, every: int, start: int) -> dict[int, str]:
    """Step → the fault that starts there: one each `every` steps from `start`, kinds in shuffled rounds."""
    rng = random.Random(seed)
    kinds: list[str] = []
    schedule = {}
    for step in range(start, steps - every, every):
        if not kinds:
            kinds = list(FAULT_KINDS)
            rng.shuffle(kinds)
        schedule[step] = kinds.pop()
    return schedule


@dataclass
class Odom:
    """One odometry message as the relay sends it: its stamp (ns) and values (`ODOM_FIELDS`)."""

    stamp: int
    values: tuple[float, ...]


def observation(odom: Odom, obs_dim: int) -> np.ndarray:
    """The policy's observation `(obs_dim,)` of one odometry message, hover point at the origin: position error,
    body-to-world rotation (row-major), world velocity, body rates; the rest (integral, previous action) zero: the
    soak's policy gives them no weight."""
    px, py, pz, w, x, y, z, vx, vy, vz, wx, wy, wz = odom.values
    norm = math.sqrt(w * w + x * x + y * y + z * z)
    w, x, y, z = (w / norm, x / norm, y / norm, z / norm) if norm > 0 else (1.0, 0.0, 0.0, 0.0)
    rotation = np.array(
        [
            [1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
            [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
            [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)],
        ]
    )
    velocity = rotation @ np.array([vx, vy, vz])
    obs = np.zeros(obs_dim)
    obs[:18] = [px, py, pz, *rotation.reshape(-1), *velocity, wx, wy, wz]
    return obs


class Policy:
    """policy.onnx in onnxruntime: the action `(4,)` of an observation."""

    def __init__(self, path: str) -> None:
        import onnxruntime

        self.session = onnxruntime.InferenceSession(path, providers=["CPUExecutionProvider"])
        inputs = self.session.get_inputs()
        self.input = inputs[0].name
        self.obs_dim = int(inputs[0].shape[-1])

    def __call__(self, obs: np.ndarray) -> np.ndarray:
        batch = obs.astype(np.float32)[None]
        return np.asarray(self.session.run(None, {self.input: batch})[0][0], dtype=np.float64)


@dataclass
class Pending:
    """A message the node must answer: with the policy's `action`, or the safe command (None)."""

    stamp: int
    action: np.ndarray | None


@dataclass
class Referee:
    """The node's rules, applied independently; see the module docstring. Times in ns of the simulated clock."""

    policy: Policy
    staleness_ns: int
    dt_ns: int
    rate_limit: float
    """Largest action change per second (the profile's rate_limit; the same for every rotor)."""
    last_stamp: int | None = None
    pending: deque[Pending] = field(default_factory=deque)
    previous: np.ndarray | None = None
    counts: dict[str, int] = field(default_factory=dict)
    """What the node must have counted: skipped messages by reason, gaps, missed deadlines; and the commands."""
    violations: list[str] = field(default_factory=list)

    def deliver(self, odom: Odom, now: int) -> None:
        """A message handed to the node when its clock reads `now`: skipped (counted), or pending its answer."""
        why = self._skip_reason(odom.stamp, now)
        if why:
            self._count(why)
            return
        if self.last_stamp is not None and odom.stamp - self.last_stamp > 1.5 * self.dt_ns:
            self._count("stamp_gaps")
        self.last_stamp = odom.stamp
        if now - odom.stamp > self.dt_ns:
            self._count("missed_deadlines")
        finite = all(math.isfinite(v) for v in odom.values)
        action = self.answer(odom) if finite else None
        self.pending.append(Pending(odom.stamp, action))

    def _skip_reason(self, stamp: int, now: int) -> str:
        if stamp - now > self.staleness_ns:
            return "future_stamps"
        if now - stamp > self.staleness_ns:
            return "old_stamps"
        if self.last_stamp is not None and stamp <= self.last_stamp:
            return "duplicate_messages" if stamp == self.last_stamp else "reordered_messages"
        return ""

    def answer(self, odom: Odom) -> np.ndarray:
        """The policy's action `(4,)` for one odometry message, within the profile's bounds."""
        action = self.policy(observation(odom, self.policy.obs_dim))
        return np.clip(action, -1.0, 1.0)

    def command(self, data: list[float]) -> None:
        """A command the node sent (PWM `(4,)`): checked, and matched to what is pending."""
        self._count("commands")
        values = np.asarray(data, dtype=np.float64)
        if not np.all(np.isfinite(values)):
            self.violations.append(f"non-finite command {data}")
            return
        action = (values - PWM) / PWM
        safe = bool(np.all(values == 0.0))
        limit = self.rate_limit * self.dt_ns * 1e-9
        if not safe and self.previous is not None and np.abs(action - self.previous).max() > limit + 1e-6:
            self.violations.append(f"jump {self.previous.tolist()} -> {action.tolist()} beyond {limit}")
        self.previous = action
        head = self.pending[0] if self.pending else None
        if head is not None and head.action is None and safe:
            self.pending.popleft()
            self._count("safe_answers")
        elif head is not None and head.action is not None and answers(data, head.action):
            self.pending.popleft()
            self._count("policy_answers")
        elif safe:
            self._count("watchdog_safe")
        else:
            expected = None if head is None else head.action
            self.violations.append(f"command {data} answers nothing pending (next expected: {expected})")

    def _count(self, key: str) -> None:
        self.counts[key] = self.counts.get(key, 0) + 1


def answers(data: list[float], action: np.ndarray) -> bool:
    """Whether a command's PWM `data` is `action`'s."""
    return bool(np.abs(np.asarray(data) - (PWM + PWM * action)).max() <= PWM_TOLERANCE)


NAMED_BY = {
    "drop": "stamp_gaps",
    "delay": "missed_deadlines",
    "duplicate": "duplicate_messages",
    "reorder": "reordered_messages",
    "future_stamp": "future_stamps",
    "past_stamp": "old_stamps",
    "publisher_restart": "stamp_gaps",
    "non_finite": "faults.non-finite",
    "sigstop": "faults.stale observation",
    "clock_jump": "faults.stale observation",
}
"""The /diagnostics key of policy_node that names each fault kind (scenario_soak.py's docstring says why)."""


def naming(injected: dict[str, int], diagnostics: dict[str, str]) -> dict[str, dict[str, object]]:
    """Per /diagnostics key of `NAMED_BY`: the kinds it names, how many of them were injected, what the node
    reports, and whether that covers them (`named`: reported >= injected, each injected fault counted at least once)."""
    table = {}
    for key in dict.fromkeys(NAMED_BY.values()):
        kinds = [kind for kind, named_by in NAMED_BY.items() if named_by == key]
        count = sum(injected.get(kind, 0) for kind in kinds)
        reported = int(diagnostics.get(key, "0"))
        table[key] = {"kinds": kinds, "injected": count, "reported": reported, "named": reported >= count}
    return table
