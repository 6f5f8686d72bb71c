"""Robot recordings back as demonstrations: a rosbag2 bag (MCAP or sqlite3, e.g. from the recorder node) of a robot's
topics → the transitions `RobotEnv` stored or would have stored, as a demo file (robo_rl.hil.demos).

When the bag holds the trainer's `transitions` topic (RosLink publishes every step RobotEnv takes, see
`robo_rl.robot.link.TRANSITION_FIELDS`), those are the transitions, exactly. Otherwise (e.g. a session driven with
policy_node or teleop_node alone) they are rebuilt from the robot's topics, which is approximate: a recorder
receives the topics of several publishers in an order of its own, so a command may be paired with an observation one
period off. The rebuilding: the robot's command topic sets the steps: at each command, the observation is assembled
from the latest fields of the profile's inputs received before it (with the command history, as `RobotEnv` assembles
it), and the action is the command read back into policy units (`command_actions`). A transition joins two
consecutive commands: reward from the profile kind's function on the later fields, terminated when those leave the
profile's workspace or the operator pressed success/failure in between, truncated at a reset press, an e-stop or a
gap in the commands (more than `GAP_PERIODS` periods). A step whose inputs were stale or incomplete is not a
transition; an episode with a discard press is dropped whole; steps outside the workspace (recoveries) are not
stored.

Cameras (`CameraTopic`, the CLI's --camera NAME=TOPIC): each command's observation also takes each camera's newest
frame stamped before it, within the camera's max age (`robo_rl.robot.bag_images`); a command without one is a step
without a valid observation, as with a stale state input. The transitions then carry the frames of their
observation and next observation (`BagTransitions.obs_frames`, `next_frames`: camera name → `(T, H, W, C)` uint8),
which the demo file stores beside the vectors (`robo_rl.hil.demos`). Only a rebuild restores frames: the trainer's
transitions topic has none.

By default only the steps the operator drove are kept (an intervention message within the staleness timeout before
the command, which the command carries: within the action box and one rate-limited step of it): a demonstration.
`operator_only=False` keeps the policy's steps too (offline data). Needs rosbags (.venv-ros).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import numpy as np

from robo_rl.image_spec import ImageSpec
from robo_rl.real.assembler import MissingFieldError, ObservationAssembler
from robo_rl.real.command import command_actions
from robo_rl.real.profile import CommandSpec, RobotProfile
from robo_rl.real.ros.inputs import derived_fields, input_decoder
from robo_rl.real.safety_box import SafetyBox
from robo_rl.robot.bag_images import CameraTopic, StampedFrames, decode_frame, header_seconds
from robo_rl.robot.env import ProfileSpecs
from robo_rl.robot.link import EPISODE_EVENTS, TRANSITION_TOPIC
from robo_rl.robot.rewards import reward_for
from robo_rl.storage.rosbag_file import read_bag

GAP_PERIODS = 3.0
"""Commands further apart than this many control periods end the episode (the recording paused or was cut)."""


@dataclass
class Step:
    time: float
    obs: np.ndarray | None
    """None when an input was stale or a field missing."""
    action: np.ndarray
    fields: dict[str, float]
    intervened: bool
    events: list[str]
    estop: bool
    frames: dict[str, np.ndarray] | None = field(default_factory=dict)
    """Each camera's frame at this command (empty without cameras); None when one had no fresh frame (obs is then
    None too)."""


@dataclass(frozen=True)
class BagTransitions:
    obs: np.ndarray
    actions: np.ndarray
    """Normalized to [-1, 1] by the profile's action bounds."""
    rewards: np.ndarray
    next_obs: np.ndarray
    terminated: np.ndarray
    truncated: np.ndarray
    intervened: np.ndarray
    episodes: int
    """Episodes with at least one kept transition."""
    commands: int
    """Commands in the bag (steps)."""
    obs_frames: dict[str, np.ndarray] = field(default_factory=dict)
    """Camera name → `(T, H, W, C)` uint8: each transition's frames (empty without cameras)."""
    next_frames: dict[str, np.ndarray] = field(default_factory=dict)
    """Camera name → `(T, H, W, C)` uint8: the next observation's frames."""

    def __len__(self) -> int:
        return len(self.rewards)


def _topic(namespace: str, name: str) -> str:
    return name if name.startswith("/") else f"{namespace.rstrip('/')}/{name}"


def _command_spec(profile: RobotProfile, namespace: str, topics: set[str]) -> CommandSpec:
    for spec in profile.commands:
        if _topic(namespace, spec.topic) in topics:
            return spec
    wanted = ", ".join(_topic(namespace, s.topic) for s in profile.commands)
    raise ValueError(f"the bag has none of profile {profile.name}'s command topics ({wanted}); it has {sorted(topics)}")


def read_transitions(bag: Path, profile: RobotProfile, namespace: str = "/") -> np.ndarray | None:
    """The trainer's own transition messages (`TRANSITION_TOPIC`, one row each, `TRANSITION_FIELDS` layout) when
    the bag has them, else None."""
    topic = _topic(namespace, TRANSITION_TOPIC)
    width = 2 * len(profile.observations) + len(profile.actions) + 5
    with read_bag(bag) as reader:
        wanted = [c for c in reader.connections if c.topic == topic]
        if not wanted:
            return None
        rows = [getattr(reader.deserialize(raw, c.msgtype), "data") for c, _, raw in reader.messages(wanted)]  # noqa: B009
    bad = [len(row) for row in rows if len(row) != width]
    if bad:
        raise ValueError(f"{topic}: messages of {bad[0]} values, profile {profile.name} needs {width}")
    return np.asarray(rows, dtype=np.float64).reshape(-1, width)


def recorded_transitions(rows: np.ndarray, profile: RobotProfile, operator_only: bool = True) -> BagTransitions:
    """`read_transitions`' rows as transitions: the valid ones (and, `operator_only`, those the operator drove)."""
    n, a = len(profile.observations), len(profile.actions)
    low = np.asarray([x.low for x in profile.actions])
    high = np.asarray([x.high for x in profile.actions])
    terminated, truncated, intervened, valid = (rows[:, 2 * n + a + 1 + k] > 0.5 for k in range(4))
    keep = valid & (intervened if operator_only else True)
    ends = np.flatnonzero((terminated | truncated) & keep)
    episodes = len(ends) + int(bool(keep.any()) and (not ends.size or ends[-1] < np.flatnonzero(keep)[-1]))
    return BagTransitions(
        obs=rows[keep, :n].astype(np.float32),
        actions=(2.0 * (rows[keep, n : n + a] - low) / (high - low) - 1.0).astype(np.float32),
        rewards=rows[keep, n + a].astype(np.float32),
        next_obs=rows[keep, n + a + 1 : 2 * n + a + 1].astype(np.float32),
        terminated=terminated[keep],
        truncated=truncated[keep],
        intervened=intervened[keep],
        episodes=episodes,
        commands=len(rows),
    )


def read_steps(
    bag: Path, profile: RobotProfile, namespace: str = "/", cameras: tuple[CameraTopic, ...] = ()
) -> list[Step]:
    """The bag's commands as steps, with the frames of `cameras` (see the module docstring)."""
    with read_bag(bag) as reader:
        topics = {c.topic for c in reader.connections}
        spec = _command_spec(profile, namespace, topics)
        frames = {camera.name: read_frames(reader, _topic(namespace, camera.topic)) for camera in cameras}
        decoders = {
            _topic(namespace, s.topic_name): (s.name, input_decoder(profile, s)) for s in profile.inputs if not s.derive
        }
        missing = sorted(set(decoders) - topics)
        if missing:
            raise ValueError(f"the bag lacks profile {profile.name}'s input topic(s) {missing}")
        control = {_topic(namespace, n): n for n in ("intervention", "estop", "episode_event")}
        wanted = [c for c in reader.connections if c.topic in {*decoders, *control, _topic(namespace, spec.topic)}]
        messages = ((c.topic, t * 1e-9, reader.deserialize(raw, c.msgtype)) for c, t, raw in reader.messages(wanted))
        steps = _steps(profile, spec, decoders, control, _topic(namespace, spec.topic), messages)
        return [_with_frames(step, cameras, frames) for step in steps]


def read_frames(reader: Any, topic: str) -> StampedFrames:
    """Every frame on `topic` (Image or CompressedImage) of an open bag, by header stamp; ValueError when the bag
    lacks the topic, it is not an image type, or its frames cannot be decoded or differ in size."""
    connections = [c for c in reader.connections if c.topic == topic]
    if not connections:
        raise ValueError(f"the bag has no camera topic {topic}; it has {sorted({c.topic for c in reader.connections})}")
    stamped = []
    for connection, _, raw in reader.messages(connections):
        message = reader.deserialize(raw, connection.msgtype)
        try:
            stamped.append((header_seconds(message), decode_frame(message, connection.msgtype)))
        except ValueError as err:
            raise ValueError(f"{topic}: {err}") from None
    return StampedFrames.collect(topic, stamped)


def _with_frames(step: Step, cameras: tuple[CameraTopic, ...], frames: dict[str, StampedFrames]) -> Step:
    """`step` with each camera's frame at its time; without a fresh one for every camera, no valid observation."""
    found = {camera.name: frames[camera.name].at(step.time, camera.max_age) for camera in cameras}
    if any(frame is None for frame in found.values()):
        step.obs, step.frames = None, None
    else:
        step.frames = {name: frame for name, frame in found.items() if frame is not None}
    return step


def camera_specs(found: BagTransitions) -> tuple[ImageSpec, ...]:
    """The cameras of `found`'s frames, in their order (sizes from the frames; intrinsics unknown)."""
    return tuple(
        ImageSpec(name, int(frames.shape[1]), int(frames.shape[2]), int(frames.shape[3]))
        for name, frames in found.obs_frames.items()
    )


def _steps(
    profile: RobotProfile,
    spec: CommandSpec,
    decoders: dict[str, Any],
    control: dict[str, str],
    command_topic: str,
    messages: Iterator[tuple[str, float, Any]],
) -> Iterator[Step]:
    fields: dict[str, float] = {}
    received: dict[str, float] = {}
    assembler = ObservationAssembler(profile.observations, profile.action_names, profile.safe_action)
    safe = np.asarray(profile.safe_action, dtype=np.float64)
    index = {name: i for i, name in enumerate(profile.action_names)}
    intervened_at, estop, events = -np.inf, False, []
    takeover = safe.copy()
    low = np.asarray([a.low for a in profile.actions])
    high = np.asarray([a.high for a in profile.actions])
    box = SafetyBox.from_profile(profile)
    step_limit = np.asarray([a.rate_limit * profile.dt if a.rate_limit else np.inf for a in profile.actions]) + 1e-4
    for topic, now, message in messages:
        if topic in decoders:
            name, decode = decoders[topic]
            fields.update(decode(message))
            fields.update(derived_fields(profile, fields, (0.0, 0.0, 0.0)))
            received[name] = now
        elif control.get(topic) == "intervention":
            if len(message.data) == len(safe):
                intervened_at, takeover = now, np.asarray(message.data, dtype=np.float64)
        elif control.get(topic) == "estop":
            estop = bool(message.data)
        elif control.get(topic) == "episode_event":
            events += [str(message.data)] if str(message.data) in EPISODE_EVENTS else []
        elif topic == command_topic:
            fresh = len(received) == len(decoders) and all(
                now - t <= profile.staleness_timeout for t in received.values()
            )
            obs = None
            if fresh:
                try:
                    obs = assembler(fields).astype(np.float32)
                except MissingFieldError:
                    obs = None
            action = safe.copy()
            for name, value in command_actions(spec, _command_values(message, spec), fields).items():
                action[index[name]] = value
            assembler.record_action(action)
            # the operator's step: a fresh takeover that the command carries (within the box and one rate-limited
            # step of it), not one the robot ignored (e.g. while it waited for a reset)
            target = np.clip(box.clip_action(takeover)[0], low, high)
            carried = bool(np.all(np.abs(action - target) <= step_limit))
            intervened = now - intervened_at <= profile.staleness_timeout and carried
            yield Step(now, obs, action, dict(fields), intervened, events, estop)
            events = []


def _command_values(message: Any, spec: CommandSpec) -> dict[str, float]:
    from robo_rl.real.ros.messages import FieldReader

    reader = FieldReader("cmd", [f.field for f in spec.fields])
    return {key.removeprefix("cmd."): value for key, value in reader(message).items()}


def transitions(steps: list[Step], profile: RobotProfile, operator_only: bool = True) -> BagTransitions:
    """The transitions of `steps` (see the module docstring)."""
    reward = reward_for(profile)
    box = SafetyBox.from_profile(profile)
    low = np.asarray([a.low for a in profile.actions])
    high = np.asarray([a.high for a in profile.actions])
    rows: list[tuple[Any, ...]] = []
    episode: list[tuple[Any, ...]] = []
    episodes = 0

    def close(discarded: bool) -> None:
        nonlocal episode, episodes
        if episode and not discarded:
            rows.extend(episode)
            episodes += 1
        episode = []

    discarded = False
    for before, after in itertools.pairwise(steps):
        gap = after.time - before.time > GAP_PERIODS * profile.dt
        discarded |= "discard" in after.events
        if gap or before.estop or before.obs is None or after.obs is None or box.violations(before.fields):
            if gap or before.estop:
                close(discarded)
                discarded = False
            continue
        violated = bool(box.violations(after.fields))
        terminated = violated or bool({"success", "failure"} & set(after.events))
        truncated = not terminated and (after.estop or "reset" in after.events or "discard" in after.events)
        if before.intervened or not operator_only:
            action = 2.0 * (before.action - low) / (high - low) - 1.0
            r = reward(after.fields, profile.dt)
            row = (before.obs, action, r, after.obs, terminated, truncated, before.intervened)
            episode.append((*row, before.frames, after.frames))
        if terminated or truncated:
            close(discarded)
            discarded = False
    close(discarded)
    return _stack(rows, len(profile.observations), len(profile.actions), episodes, len(steps))


def _stack(rows: list[tuple[Any, ...]], obs_dim: int, action_dim: int, episodes: int, commands: int) -> BagTransitions:
    if not rows:
        empty = np.zeros((0,), dtype=np.float32)
        return BagTransitions(
            np.zeros((0, obs_dim), np.float32),
            np.zeros((0, action_dim), np.float32),
            empty,
            np.zeros((0, obs_dim), np.float32),
            empty.astype(bool),
            empty.astype(bool),
            empty.astype(bool),
            0,
            commands,
        )
    columns = list(zip(*rows, strict=True))
    cameras = list(columns[7][0])
    return BagTransitions(
        obs=np.stack(columns[0]).astype(np.float32),
        actions=np.stack(columns[1]).astype(np.float32),
        rewards=np.asarray(columns[2], dtype=np.float32),
        next_obs=np.stack(columns[3]).astype(np.float32),
        terminated=np.asarray(columns[4], dtype=bool),
        truncated=np.asarray(columns[5], dtype=bool),
        intervened=np.asarray(columns[6], dtype=bool),
        episodes=episodes,
        commands=commands,
        obs_frames={name: np.stack([frames[name] for frames in columns[7]]) for name in cameras},
        next_frames={name: np.stack([frames[name] for frames in columns[8]]) for name in cameras},
    )


def save_bag_demos(path: Path, found: BagTransitions, profile: RobotProfile, source: str) -> None:
    """Write `found` as a demo file (robo_rl.hil.demos) for `profile`'s task; ValueError when it is empty."""
    import torch

    from robo_rl.hil.demos import save_demos
    from robo_rl.storage.replay import ReplayBuffer, Transitions

    if len(found) == 0:
        raise ValueError(f"{source}: no transition to keep ({found.commands} commands in the bag)")
    obs_dim, action_dim = found.obs.shape[1], found.actions.shape[1]
    buffer = ReplayBuffer(len(found), obs_dim, obs_dim, action_dim, "cpu")
    as_flag = lambda a: torch.as_tensor(a, dtype=torch.bool)  # noqa: E731
    buffer.add(
        Transitions(
            obs=torch.as_tensor(found.obs),
            critic_obs=torch.as_tensor(found.obs),
            actions=torch.as_tensor(found.actions),
            rewards=torch.as_tensor(found.rewards),
            costs=torch.zeros(len(found.rewards)),
            next_obs=torch.as_tensor(found.next_obs),
            next_critic_obs=torch.as_tensor(found.next_obs),
            terminated=as_flag(found.terminated),
            truncated=as_flag(found.truncated),
            intervened=as_flag(found.intervened),
            is_demo=torch.ones(len(found), dtype=torch.bool),
        )
    )
    frames = {name: (found.obs_frames[name], found.next_frames[name]) for name in found.obs_frames}
    specs = camera_specs(found)
    specs_of = cast(Any, ProfileSpecs.of(profile))
    save_demos(path, buffer, profile.task, specs_of, found.episodes, source, frames=frames, image_specs=specs)
