"""`RobotEnv`: a robot as one more `BatchedEnv` (num_envs 1), built from its profile, on a fixed real-time grid.

Its observation and action specs are the profile's, so a policy trained in simulation fine-tunes here and a policy
trained here deploys with policy_node unchanged. Each `step(action)`:
1. the operator's action replaces the policy's while teleop_node sends one (flagged `intervened`, stored as the
   executed action); the action goes through the profile's `SafetyFilter` (clip, rate limit, non-finite → safe),
   as in policy_node;
2. the command is sent, and the env waits for the next tick of its `dt` grid while messages arrive;
3. the observation is assembled from the latest fields. A step whose inputs are stale or missing, or whose command
   was the safe one, is not a valid transition: `info["valid"]` is False, it is counted (`invalid_steps`), and the
   runners do not store it;
4. reward from the profile kind's function (`robo_rl.robot.rewards`); the episode (`robo_rl.real.episode`, the
   profile's `episode` section) ends on the e-stop, on a violation of the profile's workspace
   (`robo_rl.real.safety_box`, which also narrows the actions to its `action_box`), after `max_steps`, or on the
   operator's success/failure/reset/discard buttons (a discarded episode's last step is not stored).
Between episodes `reset` runs the profile's reset: a scripted motion, a FastRLAP-style recovery (e.g. reverse and
retry), or the operator (the safe command until the reset button, with a prompt on stderr; the e-stop always hands
the reset to the operator), then holds the safe command until every input is fresh. ROS stays behind the
`RobotLink` (`robo_rl.robot.link.RosLink`).

With cameras (`cameras`, the specs of the profile task's cameras, each fed by one of the profile's image inputs as
policy_node feeds an exported camera policy) the env is a `robo_rl.envs.CameraEnv`: `reset`, `step` and
`info["final_obs"]` return `{"state": (1, obs_dim), camera: (1, H, W, C) uint8}`, each camera's newest frame from the
link (`CameraLink.frames`, decoded, cropped and resized to its spec on arrival). As in policy_node a frame counts
from its header stamp: its image input goes stale when the newest frame is older than the staleness timeout, and a
step with a stale or missing frame is invalid like one with a stale state. `obs` stays the state vector: the safety
filter, a success classifier and the teleop devices read that.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
import torch

from robo_rl.actuator import DriveActuator
from robo_rl.cost_spec import CostSpec
from robo_rl.envs import INFO_COST, INFO_FINAL_OBS, INFO_SUCCESS, INFO_VALID
from robo_rl.hil.device import TeleopDevice
from robo_rl.hil.intervention import INFO_EXECUTED_ACTION, INFO_INTERVENED
from robo_rl.image_spec import STATE_KEY, ImageSpec
from robo_rl.real.assembler import MissingFieldError, ObservationAssembler
from robo_rl.real.command import command_fields, measured_actions, relative_actions, trajectory_timing
from robo_rl.real.episode import EpisodeManager
from robo_rl.real.fault import Fault, FaultKind
from robo_rl.real.policy_fit import camera_mismatches, profile_drive
from robo_rl.real.profile import HOLD_MEASURED, JOINT_TRAJECTORY, RobotProfile, held_joint_sources
from robo_rl.real.safety import SafetyFilter, SafetyResult
from robo_rl.real.safety_box import SafetyBox
from robo_rl.robot.costs import Cost
from robo_rl.robot.link import Frames, RobotLink
from robo_rl.spaces import SpaceSpec

CPU = torch.device("cpu")
INPUT_WINDOW = 0.5
"""Share of a period before and after a tick in which `trigger: input` takes a state message as that tick's: half,
so one message per period (the profile's contract: its first input comes at the control rate, as policy_node's
input trigger needs) is found whatever its phase, and the steps lock onto it from the first one."""
DEFAULT_MAX_STEPS = 1500
"""Steps per episode without a limit in the config or the profile."""
Reward = Callable[[Mapping[str, float], float], float]
"""(observation fields after the step, dt) → reward."""
Observation = torch.Tensor | dict[str, torch.Tensor]
"""What `reset` and `step` return: the `(1, obs_dim)` state, or with cameras the dict of it and the frames."""


@dataclass(frozen=True)
class RobotEnvConfig:
    max_steps: int | None = None
    """Steps per episode before truncation; None: the profile's `episode.max_steps`, else 1500."""
    ready_timeout: float = 30.0
    """Seconds `reset` waits for every input to be fresh before it gives up (RuntimeError naming the silent ones)."""
    operator_wait: float = 0.3
    """During a takeover, the longest a step waits for the operator's answer to the observation it acts on, as a
    share of dt (the command then goes out that much later in the period). Through topics the operator's message
    for an observation comes after the trainer has it: taking the latest at once executes the operator's
    previous step, one period late, and a step-by-step operator then fails (bench/peg_ros_gap.py: the peg
    expert inserts 18 of 20 holes on time, 5 of 20 one period late). 0: the latest at once."""
    trigger: Literal["input", "timer"] = "input"
    """When a step reads its observation, on a link that reports its state messages' arrival (RosLink): `input`,
    as policy_node's default, at the arrival of the profile's first input (the robot's state) within half a period
    of the next tick (`INPUT_WINDOW`; none there: at the tick), so that the command answers the newest state at
    once and reaches the robot before its next step (for a robot whose state comes once per period); `timer`, on
    the env's own dt grid, whose phase against the robot's is arbitrary: where the robot steps just after the
    tick, every command waits almost a period and the robot executes each answer one step late. A simulated link
    (SimLink) steps on the grid either way (its `next_input` is the tick)."""

    def __post_init__(self) -> None:
        if (self.max_steps is not None and self.max_steps < 1) or not self.ready_timeout > 0:
            raise ValueError("max_steps must be at least 1 and ready_timeout positive")
        if self.trigger not in ("input", "timer"):
            raise ValueError(f"trigger must be input or timer, got {self.trigger!r}")
        if not 0.0 <= self.operator_wait < 1.0:
            raise ValueError(f"operator_wait is a share of the period in [0, 1), got {self.operator_wait}")


class RobotEnv:
    """See the module docstring. `clock` is monotonic seconds; the link's `wait_until` advances through it."""

    resumable = False
    """No `state_dict`: a robot cannot be rewound: a resumed run starts a new episode."""

    num_envs = 1

    def __init__(
        self,
        profile: RobotProfile,
        link: RobotLink,
        reward: Reward,
        cfg: RobotEnvConfig = RobotEnvConfig(),
        clock: Callable[[], float] = time.monotonic,
        say: Callable[[str], None] | None = None,
        success: Callable[[np.ndarray], bool] | None = None,
        teleop: TeleopDevice | None = None,
        success_reward: bool = False,
        cameras: Sequence[ImageSpec] = (),
        cost: tuple[CostSpec, Cost] | None = None,
    ) -> None:
        self.profile, self.link, self.reward_fn, self.cfg = profile, link, reward, cfg
        self.cost_spec: CostSpec | None = None if cost is None else cost[0]
        self.cost_fn: Cost | None = None if cost is None else cost[1]
        """The task's constraint (`robo_rl.robot.costs`): `info["cost"]` every step from the link's fields, 0 on an
        invalid step (as its reward); None: the task declares none."""
        self.clock = clock
        self.say = say or _to_stderr
        """Where the operator's prompts go (stderr by default)."""
        self.teleop = teleop
        """A teleoperation device at the trainer's own computer (`--teleop keyboard` or `gamepad`) besides
        teleop_node's topics: its takeover drives when teleop_node's does not; `estop` latches the e-stop until its
        `reset`; `success`/`reset` are the episode buttons."""
        self._key_estop = False
        self._device_action: np.ndarray | None = None
        self.success_fn = success
        """Success detector on the observation (e.g. a learned classifier's `success`): True ends the episode as a
        success (terminal), as the operator's success button does."""
        self.success_reward = success_reward and success is not None
        """The reward is the success detector's (1 at the step it fires, else 0), not the profile's reward
        function: HIL-SERL's learned reward, for a task whose reward is its success (the peg). Otherwise a detector
        that fires a few frames before the reward function would end episodes with reward 0 at the goal."""
        self.box = SafetyBox.from_profile(profile)
        self.episode = EpisodeManager.from_profile(profile, clock)
        profile_steps = profile.episode.max_steps if profile.episode else 0
        self.max_steps = cfg.max_steps or profile_steps or DEFAULT_MAX_STEPS
        self.max_episode_steps = self.max_steps  # the env contract's name for it
        self.device = torch.device("cpu")
        self.dt = profile.dt
        self.obs_spec, self.action_spec = profile_specs(profile)
        self.privileged_obs_spec: SpaceSpec | None = None
        self.actuator = profile_drive(profile)
        """What the drive action is to the car's ESC (the profile's `esc` field), recorded with the policy."""
        self.spec = link.spec
        self.assembler = ObservationAssembler(profile.observations, profile.action_names, profile.safe_action)
        hold = profile.safe_command == HOLD_MEASURED
        relative = relative_actions(self.spec, profile.action_names)
        self.safety = SafetyFilter(profile.actions, profile.dt, hold_measured=hold, relative=relative)
        self.held = held_joint_sources(profile, self.spec) if hold else ()
        self.measured_fields: dict[str, float] = {}
        """The fields of the last complete measured pose: the values relative command fields step from."""
        """An arm's measured joint fields with the command fields they feed: its safe command holds that pose."""
        self.safe = np.asarray(profile.safe_action, dtype=np.float64)
        self.tick = 0.0
        self.steps = 0
        self.obs = np.zeros(len(profile.observations), dtype=np.float32)
        self.image_specs, self._frame_source = self._cameras(cameras)
        """The cameras (module docstring), () without."""
        self.frames: Frames = {}
        """Each camera's frame of the last observation (`(H, W, C)` uint8), beside the state `obs`."""
        self.invalid_steps = self.missed_ticks = self.episodes = self.interventions = self.total_steps = 0
        self.estop_presses = 0
        """E-stop presses seen (running or resetting). (No `estop` attribute: on a robot the e-stop pauses and ends
        the episode, it does not end training.)"""
        self._estopped = False
        self.started = clock()
        safe_command = getattr(link, "safe_command", None)
        if safe_command is not None and not hold:  # what the link's stall watchdog sends (RosLink); an arm's: _measure
            safe_command(command_fields(self.spec, profile.action_names, self.safe))

    # ------------------------------------------------------------------------------------------------ episodes

    def reset(self, seed: int | None = None) -> Observation:
        """The reset phase of the profile's episode settings (scripted motion, the operator, or a recovery), then
        the safe command until every input is fresh and the observation complete: the first observation."""
        del seed  # the world decides
        self.tick = self.clock()
        if self.episode.phase == "running":  # a reset asked for mid-episode ends it, as the reset button would
            self.episode.button("reset")
            self.episode.after_step(False, True)
        self._reset_phase()
        self.safety.reset()
        self._measure()
        self.assembler = ObservationAssembler(self.profile.observations, self.profile.action_names, self.safe.tolist())
        obs, frames = self._ready_observation()
        self.episode.begin()
        self.steps = 0
        self.obs, self.frames = obs, frames
        return self._batch(obs, frames)

    def _reset_phase(self) -> None:
        """Send the reset commands (through the safety filter) until the episode manager is ready; buttons apply."""
        prompted = ""
        while self.episode.phase == "resetting":
            for event in self._events():
                if event == "reset" and self._estop_now():  # never start an episode under the e-stop
                    self.say(f"robot {self.profile.name}: the e-stop is still held; release it before the reset")
                    continue
                self.episode.button(event)
            if self.episode.phase != "resetting":
                break
            if self.episode.waiting_for_operator and self.episode.prompt != prompted:
                prompted = self.episode.prompt
                self.say(f"robot {self.profile.name}: {prompted}")
            if self._estop_now() or self.episode.waiting_for_operator:
                # the safe command (an arm: its measured pose, held)
                self._send(self.safety.safe_command(Fault(FaultKind.STOPPED, message="reset")))
            else:
                self._send(self.safety(self.episode.reset_action(self.safe)))  # a scripted move, filtered
            self._wait()
            fields = self.link.fields()
            self.episode.after_reset_step(fields, self.box.violations(fields), self._estop_now())
        if prompted:
            self.say(f"robot {self.profile.name}: reset by the operator, the next episode starts")

    def _ready_observation(self) -> tuple[np.ndarray, Frames]:
        deadline = self.clock() + self.cfg.ready_timeout
        while (obs := self._observation()) is None:
            if self.clock() > deadline:
                silent = self.link.stale_inputs() or ["(fields missing)"]
                raise RuntimeError(f"robot not ready after {self.cfg.ready_timeout} s: no {', '.join(silent)}")
            self._send(self.safety.safe_command(Fault(FaultKind.STOPPED, message="waiting for the robot")))
            self._wait()
        return obs

    # --------------------------------------------------------------------------------------------------- steps

    def step(
        self, action: torch.Tensor
    ) -> tuple[Observation, torch.Tensor, torch.Tensor, torch.Tensor, dict[str, Observation]]:
        for event in self._events():  # buttons pressed during the last period end the episode at this step
            self.episode.button(event)
        proposed = action.detach().cpu().numpy().reshape(-1).astype(np.float64)
        operator = self.link.answer(self.tick + self.cfg.operator_wait * self.dt)
        if operator is None:
            operator = self._device_action
        executed, _ = self.box.clip_action(proposed if operator is None else operator)
        result = self.safety(executed, self.obs)
        if self._estop_now():  # pressed during the last period: this step ends the episode, with the robot held
            result = self.safety.safe_command(Fault(FaultKind.ESTOP, message="estop"))
        self._send(result)
        self.assembler.record_action(result.command)
        self._wait()
        observed = self._observation()
        valid = observed is not None and not result.fault
        # nothing new: repeat the last observation (its frames too), never stored (invalid)
        obs, frames = (self.obs, self.frames) if observed is None else observed
        fields = self.link.fields()
        self.steps += 1
        self.total_steps += 1
        estop = self._estop_now()
        violations = self.box.violations(fields) if valid else []
        truncated_here = self.steps >= self.max_steps
        detected = valid and self.success_fn is not None and self.success_fn(obs)
        ended = self.episode.after_step(detected, truncated_here, violations, estop, success=True if detected else None)
        terminated = ended is not None and ended.terminated
        truncated = ended is not None and ended.truncated
        discarded = ended is not None and ended.discarded
        reward = (float(detected) if self.success_reward else self.reward_fn(fields, self.dt)) if valid else 0.0
        self.invalid_steps += int(not valid)
        self.interventions += int(operator is not None)
        info = {
            INFO_FINAL_OBS: self._batch(obs, frames),
            INFO_VALID: torch.tensor([valid and not discarded]),
            INFO_INTERVENED: torch.tensor([operator is not None and not result.fault]),
            INFO_EXECUTED_ACTION: torch.as_tensor(result.command, dtype=torch.float32).unsqueeze(0),
            INFO_SUCCESS: torch.tensor([bool(ended is not None and ended.success)]),
        }
        if self.cost_fn is not None:
            info[INFO_COST] = torch.tensor([self.cost_fn(fields, self.dt) if valid else 0.0], dtype=torch.float32)
        publish = getattr(self.link, "publish_transition", None)
        if publish is not None:
            flags = (terminated, truncated, operator is not None and not result.fault, valid and not discarded)
            publish(np.concatenate([self.obs, result.command, [reward], obs, np.asarray(flags, dtype=np.float64)]))
        self.obs, self.frames = obs, frames
        next_obs = self._batch(obs, frames)
        if ended is not None:
            self.episodes += 1
            next_obs = self.reset()
        as_bool = lambda flag: torch.tensor([flag])  # noqa: E731
        return next_obs, torch.tensor([reward], dtype=torch.float32), as_bool(terminated), as_bool(truncated), info

    def attach_teleop(self, teleop: TeleopDevice) -> None:
        """`--teleop keyboard|gamepad` on a robot: the device joins teleop_node's topics (see `teleop`)."""
        self.teleop = teleop

    def topic_actor(self, algorithm: object) -> object:
        """The runner's remote learner when the learner runs elsewhere on the ROS graph
        (`off_policy.learner_transport=ros`, robo_rl.robot.topic_learner): weights arrive on the link's node."""
        node = getattr(self.link, "node", None)
        if node is None:
            raise ValueError("off_policy.learner_transport=ros needs the robot through ROS (--robot-link ros)")
        from robo_rl.robot.topic_learner import TopicActor

        return TopicActor(algorithm, node, self.clock)

    def close(self) -> None:
        """End of training: the link sends the safe command and leaves (RosLink)."""
        self.link.close()

    def intervention_stats(self) -> dict[str, float]:
        """For the runner's metrics rows: the operator's share of the steps, episodes, invalid steps, missed ticks,
        the robot's time (s since the env was built, on its clock), and the link's own `stats()` if it has them."""
        steps = max(self.total_steps, 1)
        return {
            "interventions": float(self.interventions),
            "intervention_share": self.interventions / steps,
            "robot_episodes": float(self.episodes),
            "estops": float(self.estop_presses),
            "discarded_episodes": float(self.episode.discarded),
            "recoveries": float(self.episode.recoveries),
            "human_resets": float(self.episode.human_resets),
            "missed_ticks": float(self.missed_ticks),
            "robot_time": self.clock() - self.started,
        } | {key: float(value) for key, value in getattr(self.link, "stats", dict)().items()}

    # ---------------------------------------------------------------------------------------------- plumbing

    def _cameras(self, cameras: Sequence[ImageSpec]) -> tuple[tuple[ImageSpec, ...], Callable[[], Frames] | None]:
        """The env's cameras, checked: each fed by exactly one image input of the profile and every image input
        feeding one (`robo_rl.real.policy_fit.camera_mismatches`: a camera profile without cameras here would train a
        state-only policy on a robot whose frames are dropped), from a link that delivers frames (`frames()`); with
        the link's `frames`. ValueError naming every mismatch."""
        specs = tuple(cameras)
        problems = camera_mismatches(specs, self.profile)
        if problems:
            raise ValueError(
                f"robot {self.profile.name}: the env's cameras do not fit the profile: {'; '.join(problems)}"
            )
        frames = getattr(self.link, "frames", None)
        if specs and not callable(frames):
            raise ValueError(f"robot {self.profile.name}: cameras need a link that delivers frames (frames())")
        return specs, frames if specs else None

    def _observation(self) -> tuple[np.ndarray, Frames] | None:
        """The state vector and each camera's newest frame, or None while an input (a camera's too) is stale or a
        field or a frame is missing."""
        if self.link.stale_inputs():
            return None
        frames = self._camera_frames()
        if frames is None:
            return None
        try:
            return self.assembler(self.link.fields()).astype(np.float32), frames
        except MissingFieldError:
            return None

    def _camera_frames(self) -> Frames | None:
        """Copies of each camera's newest frame from the link ({} without cameras), None while one has none; a
        frame of another shape or dtype than its spec's is a link's bug: ValueError."""
        if self._frame_source is None:
            return {}
        received = self._frame_source()
        frames = {}
        for spec in self.image_specs:
            frame = received.get(spec.name)
            if frame is None:
                return None
            if frame.shape != spec.shape or frame.dtype != np.uint8:
                raise ValueError(
                    f"camera {spec.name}: a {frame.dtype} frame {frame.shape}, expected uint8 {spec.shape}"
                )
            frames[spec.name] = np.array(frame)
        return frames

    def _batch(self, obs: np.ndarray, frames: Frames) -> Observation:
        """One observation as the env returns it: `(1, obs_dim)`, or with cameras the dict of it and `(1, H, W, C)`
        frames."""
        state = torch.as_tensor(obs).unsqueeze(0)
        if not self.image_specs:
            return state
        return {STATE_KEY: state} | {name: torch.from_numpy(frame).unsqueeze(0) for name, frame in frames.items()}

    def _events(self) -> list[str]:
        """Episode buttons since the last call: teleop_node's, then the local device's (which also carries its
        takeover action and e-stop)."""
        events = self.link.events()
        if self.teleop is None:
            return events
        command = self.teleop.poll(torch.as_tensor(self.obs).unsqueeze(0))
        active = bool(command.active[0])
        self._device_action = command.action[0].detach().cpu().numpy().astype(np.float64) if active else None
        pressed = {name for name, on in command.buttons.items() if on}
        if "estop" in pressed:
            self._key_estop = True
        if "reset" in pressed:
            self._key_estop = False
        return events + [name for name in ("success", "failure", "reset", "discard") if name in pressed]

    def _estop_now(self) -> bool:
        return self.link.estopped() or self._key_estop

    def _send(self, result: SafetyResult) -> None:
        """The command's fields to the link; nothing for an arm's hold before its first measured pose."""
        if not result.withheld:
            self.link.send(self._fields(result.command, result.duration))

    def _fields(self, command: np.ndarray, duration: float) -> dict[str, float]:
        fields = command_fields(self.spec, self.profile.action_names, command, self.measured_fields)
        if self.spec.type == JOINT_TRAJECTORY:
            fields |= trajectory_timing(duration or self.dt)
        return fields

    def _measure(self) -> None:
        """An arm's measured pose, for its safe command, its rate limits and the link's stall watchdog (the pose
        it holds when this loop stops sending)."""
        fields = self.link.fields()
        pose = measured_actions(self.spec, self.profile.action_names, self.held, fields)
        if pose is None:
            return
        self.safety.measure(pose)
        measured = self.safety.measured
        if measured is not None:
            self.measured_fields = dict(fields)
        safe_command = getattr(self.link, "safe_command", None)
        if safe_command is not None and measured is not None:
            hold = self.safety.step_of(measured)
            safe_command(self._fields(hold, self.safety.travel_time(self.safety.sent, measured)))

    def _wait(self) -> None:
        """Until the next tick of the dt grid; a tick already past is counted as missed and the grid moves on."""
        self.tick += self.dt
        now = self.clock()
        if now > self.tick + self.dt:
            self.missed_ticks += int((now - self.tick) / self.dt)
            self.tick = now
        if self.cfg.trigger == "input":
            window = INPUT_WINDOW * self.dt
            arrived = self.link.next_input(self.tick - window, self.tick + window)
            self.tick = self.tick if arrived is None else arrived  # locked to the robot's state messages
        else:
            self.link.wait_until(self.tick)
        self._measure()
        estopped = self._estop_now()
        self.estop_presses += int(estopped and not self._estopped)
        self._estopped = estopped


def profile_specs(profile: RobotProfile) -> tuple[SpaceSpec, SpaceSpec]:
    """The observation spec (unbounded) and the action spec (the profile's bounds) of a robot profile."""
    obs = SpaceSpec(
        profile.obs_names,
        (-np.inf,) * len(profile.observations),
        (np.inf,) * len(profile.observations),
        tuple(o.unit for o in profile.observations),
    )
    actions = profile.actions
    action = SpaceSpec(
        profile.action_names,
        tuple(a.low for a in actions),
        tuple(a.high for a in actions),
        tuple(a.unit for a in actions),
    )
    return obs, action


@dataclass(frozen=True)
class ProfileSpecs:
    """What demo files and the algorithm builders read of an env, for a profile without an env."""

    obs_spec: SpaceSpec
    action_spec: SpaceSpec
    dt: float
    privileged_obs_spec: None = None
    device: torch.device = CPU
    actuator: DriveActuator | None = None
    """What the drive action is to the car's ESC (`robo_rl.real.policy_fit.profile_drive`); None: not a car."""
    num_envs: int = 1
    """One robot."""

    @classmethod
    def of(cls, profile: RobotProfile) -> ProfileSpecs:
        obs, action = profile_specs(profile)
        return cls(obs, action, profile.dt, actuator=profile_drive(profile))


def _to_stderr(text: str) -> None:
    print(text, file=sys.stderr, flush=True)
