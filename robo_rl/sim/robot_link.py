"""`SimLink`: a `RobotLink` (robo_rl.robot.link) on an in-process simulator of the profile's task, on a simulated
clock: sim_bridge without ROS and without waiting for the wall clock.

`RobotEnv(profile, link, reward, clock=link.clock)` then runs exactly as on the robot (safety filter, workspace,
resets, rewards, buttons), only as fast as the machine computes: for rehearsing a learning-on-the-robot setup, and
for measuring it in robot time (bench/robot_hil.py). As sim_bridge does, the simulator steps once per `dt` of
simulated time with the latest command (the inverse of the profile's command fields; a `relative_to` field, e.g.
a joint-angle step of mujoco/peg_insert, is read back against the fields measured at that step, so a command held
over several steps keeps its absolute target as the robot's servos do), and resets by itself when its
task ends an episode (e.g. a car off the track or stuck is put back). A step its task ends in success (e.g. the peg
inserted) reports the final observation for that period, as the robot's sensors would show it, before the restart.
The fields are the profile's observation sources, from the simulator's observation of the same name (divided by
its unit factor). A task with cameras (a `robo_rl.envs.CameraEnv`, e.g. mujoco/peg_insert_pixels) makes this a
`CameraLink`: `frames()` are the simulator's frames of the state the fields report (a success's final frames for
the period it ended in), fresh at every step as sim_bridge's are.

An `operator` (e.g. `robo_rl.robot.operator.SimulatedOperator`) plays the person at teleop_node: its takeover
action, e-stop and buttons; when the env prompts for a reset (`say`), the operator puts the robot back (the
simulator's own reset) and presses reset. An arm that holds its measured pose (`safe_command: hold_measured`) is
put back at the press instead: until then the env's safe command holds the pose where the episode ended, which
would pull a pose put back earlier straight back there.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

import numpy as np
import torch

from robo_rl.envs import INFO_FINAL_OBS, INFO_SUCCESS, ImageObs, image_specs_of, state_of
from robo_rl.image_spec import ImageSpec
from robo_rl.real.command import command_actions, select_command
from robo_rl.real.profile import HOLD_MEASURED, RobotProfile, history_source
from robo_rl.real.safety_box import SafetyBox

LONG_EPISODE = "episode_length=1e9"
"""The simulator never truncates by itself: the RobotEnv's episodes decide."""


class Operator(Protocol):
    def action(self, fields: Mapping[str, float], now: float) -> np.ndarray | None:
        """The takeover action (policy units) at `now`, or None while the policy drives."""
        ...

    def events(self, now: float) -> list[str]:
        """Episode buttons pressed since the last call."""
        ...

    def prompted(self, text: str, now: float) -> None:
        """The env asked the operator for something (a reset)."""
        ...

    def estopped(self, now: float) -> bool: ...


def observation_sources(profile: RobotProfile, obs_names: Sequence[str]) -> list[tuple[str, int, float]]:
    """(source, index in the simulator's observation, unit factor) of every profile observation a topic carries
    (not the command history, not derived fields): what sim_bridge publishes and SimLink reports."""
    derived = {spec.name for spec in profile.inputs if spec.derive}
    index = {name: i for i, name in enumerate(obs_names)}
    out = []
    for obs in profile.observations:
        if history_source(obs.source) is not None or obs.source.split(".")[0].split("[")[0] in derived:
            continue
        if obs.name not in index:
            raise ValueError(f"task observations lack the profile's {obs.name!r}")
        out.append((obs.source, index[obs.name], obs.factor))
    return out


class SimLink:
    """See the module docstring."""

    def __init__(
        self,
        profile: RobotProfile,
        params: Sequence[str] = (),
        seed: int = 0,
        operator: Operator | None = None,
        command_type: str = "auto",
        config: Any = None,
    ) -> None:
        from robo_rl.sim import make

        self.profile, self.operator = profile, operator
        self.env: Any = make(profile.task, num_envs=1, params=[*params, LONG_EPISODE], seed=seed, config=config)
        if abs(self.env.dt - profile.dt) > 1e-9:
            raise ValueError(f"{profile.task} steps {self.env.dt} s, profile {profile.name} {profile.dt} s")
        self.spec = select_command(profile, command_type=command_type)
        self._check_drive()
        self.sources = observation_sources(profile, self.env.obs_spec.names)
        self.action_index = {name: i for i, name in enumerate(profile.action_names)}
        self.action = np.asarray(profile.safe_action, dtype=np.float32)
        self.commanded: dict[str, float] = {}
        """The last command's message fields (read back into actions at each simulated step)."""
        self.cameras: tuple[ImageSpec, ...] = image_specs_of(self.env)
        """The task's cameras (() without)."""
        self._frames: dict[str, np.ndarray] = {}
        self.obs = self.state = self._observe(self.env.reset(seed))
        """The simulator's current state vector (`obs` is what the fields report: a success's final observation for
        the period it ended in; `frames()` show the same)."""
        self.now = 0.0
        self.next_tick = profile.dt
        self.steps = self.sim_resets = 0
        self.laps = 0
        """Laps the simulator counted (a lap: one track length of progress in one of its episodes)."""
        self.lap_times: list[float] = []
        self.lap_ends: list[float] = []
        """Simulated time at the end of each lap."""
        self.clean_laps: list[bool] = []
        """Per lap: driven without a takeover by the operator and without leaving the profile's workspace."""
        self.box = SafetyBox.from_profile(profile)
        self._dirty = False
        self._held = profile.safe_command == HOLD_MEASURED

    def _check_drive(self) -> None:
        """ValueError unless the simulated car takes what the profile's command sends its ESC (a speed setpoint of
        the same scale: `robo_rl.real.policy_fit.drive_mismatches`); the command goes in as the car would take it."""
        from robo_rl.actuator import DriveActuator
        from robo_rl.real.policy_fit import drive_mismatches

        actuator = getattr(self.env, "actuator", None)
        problems = drive_mismatches(actuator if isinstance(actuator, DriveActuator) else None, self.spec)
        if problems:
            raise ValueError(f"{self.profile.task} does not take profile {self.profile.name}'s command: {problems}")

    def clock(self) -> float:
        return self.now

    def fields(self) -> dict[str, float]:
        return {source: float(self.obs[index]) / factor for source, index, factor in self.sources}

    def frames(self) -> dict[str, np.ndarray]:
        """Each camera's frame `(H, W, C)` uint8 of the state `fields()` report ({} without cameras)."""
        return dict(self._frames)

    def _observe(self, obs: torch.Tensor | ImageObs) -> np.ndarray:
        """Keep the frames of an observation of the simulator (env 0, with cameras); its state vector."""
        if isinstance(obs, dict):
            self._frames = {spec.name: obs[spec.name][0].cpu().numpy() for spec in self.cameras}
        return state_of(obs)[0].numpy()

    def stale_inputs(self) -> list[str]:
        return []

    def send(self, fields: dict[str, float]) -> None:
        self.commanded = dict(fields)

    def estopped(self) -> bool:
        return self.operator is not None and self.operator.estopped(self.now)

    def intervention(self) -> np.ndarray | None:
        action = None if self.operator is None else self.operator.action(self.fields(), self.now)
        self._dirty |= action is not None
        return action

    def next_input(self, earliest: float, deadline: float) -> float | None:
        """The simulator steps on the env's grid: until the tick midway between `earliest` and `deadline`; None."""
        self.wait_until(0.5 * (earliest + deadline))
        return None

    def answer(self, deadline: float) -> np.ndarray | None:
        """The operator answers the observation at once here (its own `delay_steps` model a late one)."""
        del deadline
        return self.intervention()

    def events(self) -> list[str]:
        events = [] if self.operator is None else self.operator.events(self.now)
        if "reset" in events and self._held:
            self.put_back()
        return events

    def say(self, text: str) -> None:
        """The env's prompt: an operator answering a reset prompt puts the robot back first."""
        if self.operator is not None:
            if "press reset" in text and not self._held:
                self.put_back()
            self.operator.prompted(text, self.now)

    def put_back(self) -> None:
        """What the operator does before pressing reset: the simulator's own reset (a new start pose)."""
        self.obs = self.state = self._observe(self.env.reset())
        if self._held:  # the held pose is gone: the next command starts from the new one
            self.commanded = {}
            self.action = np.asarray(self.profile.safe_action, dtype=np.float32)
        self.sim_resets += 1
        self._dirty = False

    def wait_until(self, deadline: float) -> None:
        while self.next_tick <= deadline + 1e-12:
            self._step()
            self.next_tick += self.profile.dt
        self.now = max(self.now, deadline)

    def close(self) -> None:
        """Close the simulator where it holds something (a camera task's GL context); a second close is a no-op."""
        close = getattr(self.env, "close", None)
        if close is not None:
            close()

    def stats(self) -> dict[str, float]:
        """Laps and clean laps driven so far, the simulated time of the first clean lap's end (NaN before it), and
        the simulator's own resets."""
        first_clean = next((end for end, clean in zip(self.lap_ends, self.clean_laps, strict=True) if clean), math.nan)
        return {
            "laps": self.laps,
            "clean_laps": sum(self.clean_laps),
            "first_clean_lap_s": first_clean,
            "sim_resets": self.sim_resets,
        }

    def _step(self) -> None:
        measured = {source: float(self.state[index]) / factor for source, index, factor in self.sources}
        for name, value in command_actions(self.spec, self.commanded, measured).items():
            self.action[self.action_index[name]] = value
        result = self.env.step(torch.as_tensor(self.action, dtype=torch.float32).unsqueeze(0))
        self.obs = self.state = self._observe(result[0])
        success = result[4].get(INFO_SUCCESS)
        if success is not None and bool(success[0]) and bool(result[2][0]):
            self.obs = self._observe(result[4][INFO_FINAL_OBS])  # the sensors show the success for this period
        self.steps += 1
        info = result[4]
        self._dirty |= bool(self.box.violations(self.fields()))
        lap_time = info.get("lap_time")
        if lap_time is not None and bool(torch.isfinite(lap_time[0])):
            self.laps += 1
            self.lap_times.append(float(lap_time[0]))
            self.lap_ends.append(self.next_tick)
            self.clean_laps.append(not self._dirty)
            self._dirty = False
        if bool(result[2][0]) or bool(result[3][0]):
            self.sim_resets += 1
            self._dirty = False  # the simulator put the car back: its next lap starts there
