"""Episodes of learning on a robot, without ROS: when one ends, how the robot gets back to a start state, and the
operator's buttons.

`EpisodeManager` is a state machine over three phases, driven once per control period by the env:

- `ready` → `begin()` → `running`;
- `running`: after each policy step, `after_step(terminated, truncated, violations, estopped)`; it ends the
  episode (returning its `EpisodeOutcome`) on termination, truncation (also `max_steps`), a workspace violation,
  an e-stop, or a `success`, `failure`, `reset` or `discard` button pressed since the last step, and goes to
  `resetting` (or straight to `ready` when a recovery reset finds nothing to recover from);
- `resetting`: each period, send `reset_action(safe_action)`, then report what came back with
  `after_reset_step(fields, violations, estopped)`; the phase turns `ready` when the reset is done.

Resets (`EpisodeSettings.reset`):

- scripted: `reset_actions` are sent, each for its steps, until `reset_done` holds (or, without `reset_done`, to
  the script's end); a script that ends before `reset_done` holds hands the reset to the operator;
- human: the safe command is sent until the operator presses `reset`; `prompt` says what to do;
- recovery: after a termination, a failure or a workspace violation, `recovery_actions` are sent, then the
  workspace (and `reset_done`) is checked: held, the robot is ready; broken, the recovery is run again, at most
  `max_recoveries` times in a row, then the operator is asked. After a truncation or a button the robot is ready
  at once when the workspace holds.

An e-stop, while running or during a scripted or recovery reset, always hands the reset to the operator (the env
clears its `SafetyFilter` latch when it begins the next episode). The manager starts `resetting`: a scripted
reset, or the operator's reset in the other modes.

Buttons pressed while running apply to that episode; pressed while resetting or ready, `success`, `failure` and
`discard` apply to the episode that ended last, and `reset` ends a reset that waits for the operator.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from robo_rl.real.profile import EpisodeSettings, ResetMove, RobotProfile
from robo_rl.real.safety_box import limits_hold

PHASES = ("ready", "running", "resetting")
BUTTONS = ("success", "failure", "reset", "discard")
END_REASONS = ("estop", "workspace", "discard", "failure", "success", "reset", "terminated", "truncated", "max_steps")
"""Why an episode ends, the first that applies at its last step."""
_RECOVER_AFTER = ("workspace", "failure", "terminated")
"""End reasons after which a recovery reset runs its script even when the workspace holds."""


@dataclass(frozen=True)
class EpisodeOutcome:
    """One episode on the robot, as far as it got."""

    index: int
    """Episode number, from 0."""
    started_at: float
    """Clock time of `begin()`."""
    steps: int = 0
    """Policy steps taken."""
    reason: str = ""
    """Why it ended (one of `END_REASONS`); "" while running."""
    terminated: bool = False
    """It ended in a terminal state: the env's termination, a workspace violation, or a success or failure button."""
    truncated: bool = False
    """It ended otherwise (time limit, e-stop, reset or discard button)."""
    success: bool | None = None
    """The operator's verdict (success or failure button), else the env's last one (`after_step(success=...)`);
    None: no verdict."""
    discarded: bool = False
    """The operator discarded it: not to be learned from."""
    violations: tuple[str, ...] = ()
    """The workspace violations at its last step."""
    ended_at: float = math.nan
    """Clock time of its last step; nan while running."""

    @property
    def ended(self) -> bool:
        return bool(self.reason)


@dataclass(frozen=True)
class ButtonEvent:
    """An operator button press."""

    at: float
    """Clock time."""
    name: str
    """One of `BUTTONS`."""
    phase: str
    """The phase it was pressed in."""
    episode: int | None
    """The episode it applies to (the running or the last one); None before the first."""


class EpisodeManager:
    """Episode phases, resets and operator buttons for one robot (see the module docstring for the protocol).

    `settings` are the profile's `episode` section, `action_names` its actions in order (for the scripted moves),
    `clock` gives seconds (only for the records). Counters: `episodes`, `discarded`, `successes` (ended
    episodes), `recoveries` (recovery scripts started), `human_resets` (resets ended by the operator) and
    `fallbacks` (scripted or recovery resets handed to the operator)."""

    def __init__(self, settings: EpisodeSettings, action_names: Sequence[str], clock: Callable[[], float]) -> None:
        self.settings = settings
        self.action_names = tuple(action_names)
        self.clock = clock
        self.events: list[ButtonEvent] = []
        self.recoveries = 0
        self.human_resets = 0
        self.fallbacks = 0
        self.reset_seconds = 0.0
        """Clock seconds spent resetting, over finished resets."""
        self._history: list[EpisodeOutcome] = []
        self._phase = "resetting"
        self._pending: set[str] = set()
        self._verdict: bool | None = None
        self._script: tuple[ResetMove, ...] = ()
        self._sent = 0
        self._attempts = 0
        self._cause = ""
        self._reset_since = clock()
        self._start_reset("start", ())

    @classmethod
    def from_profile(cls, profile: RobotProfile, clock: Callable[[], float]) -> EpisodeManager:
        """The manager of `profile`'s `episode` section (without one: human resets, no step limit)."""
        return cls(profile.episode or EpisodeSettings(), profile.action_names, clock)

    # ------------------------------------------------------------------------------------------------ state

    @property
    def phase(self) -> str:
        """One of `PHASES`."""
        return self._phase

    @property
    def prompt(self) -> str:
        """What the operator must do now, with why; "" unless a reset waits for the reset button."""
        return f"{self._cause}: {self.settings.prompt}" if self.waiting_for_operator else ""

    @property
    def waiting_for_operator(self) -> bool:
        return self._phase == "resetting" and not self._script

    @property
    def history(self) -> tuple[EpisodeOutcome, ...]:
        """Every episode begun, oldest first, with the buttons pressed after its end applied."""
        return tuple(self._history)

    @property
    def episodes(self) -> int:
        """Episodes ended."""
        return sum(outcome.ended for outcome in self._history)

    @property
    def discarded(self) -> int:
        """Ended episodes the operator discarded."""
        return sum(outcome.ended and outcome.discarded for outcome in self._history)

    @property
    def successes(self) -> int:
        """Ended episodes with success True."""
        return sum(outcome.ended and outcome.success is True for outcome in self._history)

    def outcome(self) -> EpisodeOutcome | None:
        """The running episode, else the last one; None before the first `begin()`."""
        return self._history[-1] if self._history else None

    def reset_done(self) -> bool:
        """The reset has finished: the next episode may begin."""
        return self._phase == "ready"

    # ------------------------------------------------------------------------------------------------ running

    def begin(self) -> EpisodeOutcome:
        """Start an episode (phase `ready` → `running`)."""
        self._expect("ready")
        self._phase = "running"
        self._pending.clear()
        self._verdict = None
        self._history.append(EpisodeOutcome(index=len(self._history), started_at=self.clock()))
        return self._history[-1]

    def after_step(
        self,
        terminated: bool,
        truncated: bool,
        violations: Sequence[str] = (),
        estopped: bool = False,
        success: bool | None = None,
    ) -> EpisodeOutcome | None:
        """Count a policy step; its end when the episode ends here, else None.

        `terminated`, `truncated`: the env's; `violations`: the workspace's (`SafetyBox.violations`); `estopped`:
        the e-stop is latched; `success`: the env's verdict (reward or classifier), kept unless a button gave one.
        """
        self._expect("running")
        current = self._history[-1]
        verdict = self._verdict if self._verdict is not None else success
        self._update(steps=current.steps + 1, success=verdict if verdict is not None else current.success)
        causes = {"estop": estopped, "workspace": bool(violations), "terminated": terminated, "truncated": truncated}
        causes["max_steps"] = 0 < self.settings.max_steps <= current.steps + 1
        causes |= {name: True for name in self._pending}
        reason = next((name for name in END_REASONS if causes.get(name)), "")
        if not reason:
            return None
        ended_terminal = terminated or bool(violations) or bool(self._pending & {"success", "failure"})
        self._update(
            reason=reason,
            terminated=ended_terminal,
            truncated=not ended_terminal,
            violations=tuple(violations),
            ended_at=self.clock(),
        )
        self._reset_since = self.clock()
        self._start_reset(reason, violations)
        return self._history[-1]

    def button(self, name: str) -> None:
        """The operator pressed `name` (one of `BUTTONS`); recorded in `events` and applied (module docstring)."""
        if name not in BUTTONS:
            raise ValueError(f"unknown button {name!r} (buttons: {', '.join(BUTTONS)})")
        episode = self._history[-1].index if self._history else None
        self.events.append(ButtonEvent(self.clock(), name, self._phase, episode))
        if self._phase == "running":
            self._pending.add(name)
            self._verdict = {"success": True, "failure": False}.get(name, self._verdict)
        if name == "reset" and self.waiting_for_operator:
            self.human_resets += 1
            self._ready()
        if name != "reset" and self._history:
            self._apply_verdict(name)

    def _apply_verdict(self, name: str) -> None:
        if name == "discard":
            self._update(discarded=True)
        else:
            self._update(success=name == "success")

    # ------------------------------------------------------------------------------------------------ resetting

    def reset_action(self, safe_action: Sequence[float] | np.ndarray) -> np.ndarray:
        """The command `(action_dim,)` in policy units to send this period while resetting: the script's, actions
        it does not name at `safe_action`, or `safe_action` while the operator resets."""
        self._expect("resetting")
        action = np.array(safe_action, dtype=np.float64)
        if action.shape != (len(self.action_names),):
            raise ValueError(f"safe action shape {action.shape}, expected ({len(self.action_names)},)")
        move = self._current_move()
        if move is None:
            return action
        for name, value in move.action:
            action[self.action_names.index(name)] = value
        self._sent += 1
        return action

    def after_reset_step(
        self, fields: Mapping[str, float], violations: Sequence[str] = (), estopped: bool = False
    ) -> None:
        """Report the fields and workspace violations read after a reset command; may end the reset."""
        self._expect("resetting")
        if self.waiting_for_operator:
            return
        if estopped:
            self._fall_back("e-stop during the reset")
        elif self.settings.reset == "recovery":
            self._after_recovery_step(fields, violations)
        else:
            self._after_scripted_step(fields)

    def _after_scripted_step(self, fields: Mapping[str, float]) -> None:
        done_when = self.settings.reset_done
        if done_when and limits_hold(done_when, fields):
            self._ready()
        elif self._script_over():
            if done_when:
                self._fall_back("the scripted reset ended before reset_done held")
            else:
                self._ready()

    def _after_recovery_step(self, fields: Mapping[str, float], violations: Sequence[str]) -> None:
        if not self._script_over():
            return
        if not violations and limits_hold(self.settings.reset_done, fields):
            self._ready()
        elif self._attempts < self.settings.max_recoveries:
            self._recover()
        else:
            problem = violations[0] if violations else "reset_done does not hold"
            self._fall_back(f"{self._attempts} recoveries failed ({problem})")

    def _start_reset(self, reason: str, violations: Sequence[str]) -> None:
        self._phase = "resetting"
        self._attempts = 0
        mode = self.settings.reset
        if reason == "estop":
            self._ask_operator("e-stop")
        elif mode == "scripted":
            self._run(self.settings.reset_actions)
        elif mode == "recovery" and reason == "start":
            self._ask_operator("start")
        elif mode == "recovery" and (violations or reason in _RECOVER_AFTER):
            self._recover()
        elif mode == "recovery":
            self._ready()
        else:
            self._ask_operator("start" if reason == "start" else f"episode ended ({reason})")

    def _recover(self) -> None:
        self._attempts += 1
        self.recoveries += 1
        self._run(self.settings.recovery_actions)

    def _run(self, script: tuple[ResetMove, ...]) -> None:
        self._script, self._sent, self._cause = script, 0, ""

    def _ask_operator(self, cause: str) -> None:
        self._script, self._sent, self._cause = (), 0, cause

    def _fall_back(self, cause: str) -> None:
        self.fallbacks += 1
        self._ask_operator(cause)

    def _ready(self) -> None:
        self._phase = "ready"
        self._script, self._sent, self._cause = (), 0, ""
        self.reset_seconds += self.clock() - self._reset_since

    def _current_move(self) -> ResetMove | None:
        """The move of the next command sent; the last one once the script is over; None without a script."""
        elapsed = self._sent
        for move in self._script:
            if elapsed < move.steps:
                return move
            elapsed -= move.steps
        return self._script[-1] if self._script else None

    def _script_over(self) -> bool:
        return self._sent >= sum(move.steps for move in self._script)

    # ------------------------------------------------------------------------------------------------ helpers

    def _expect(self, phase: str) -> None:
        if self._phase != phase:
            raise RuntimeError(f"episode phase is {self._phase!r}, expected {phase!r}")

    def _update(self, **changes: Any) -> None:
        self._history[-1] = dataclasses.replace(self._history[-1], **changes)
