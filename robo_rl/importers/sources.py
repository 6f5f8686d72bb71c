"""What an Isaac-Lab-style run says about its policy, read from the two places it is written down:
- mjlab's ONNX metadata (`joint_names`, `default_joint_pos`, `action_scale`, `observation_names`, comma-separated:
  mjlab's `rl/exporter_utils.py`), which lacks the control period and the meaning of the observation terms;
- Isaac Lab's dumped run config (`logs/rsl_rl/EXPERIMENT/RUN/params/env.yaml`): control period
  (`sim.dt × decimation`), the policy's observation terms (function, scale), the joint-position action term
  (joints by regex, scale, offset, clip) and the default pose (`scene.robot.init_state.joint_pos`, by regex).
  It names joints by regular expression only, so the robot's joint order must be supplied (`--joint-names`).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from robo_rl.importers.supplied import MissingInfoError, Supplied, one_line
from robo_rl.importers.terms import FUNCTION_KINDS, MJLAB_TERM_KINDS, JointAction

_GROUP_KEYS = {"concatenate_terms", "enable_corruption", "history_length", "flatten_history_dim", "concatenate_dim"}


@dataclass(frozen=True)
class Description:
    """A foreign policy's meaning: its observation terms `(name, kind, scale)` in order (None: not known), the
    robot's joints, the joint action, the control period, and the assumptions made reading it."""

    source: str
    terms: tuple[tuple[str, str, float], ...] | None
    joints: tuple[str, ...] = ()
    action: JointAction | None = None
    dt: float | None = None
    assumptions: tuple[str, ...] = field(default_factory=tuple)
    bounds: tuple[tuple[float, ...], tuple[float, ...]] | None = None
    """Action bounds the source gives (Isaac Lab's action clip; ±inf for joints it does not clip), else None."""
    clip_actions: float | None = None
    """The rsl_rl runner's `clip_actions`: the raw output is clipped to ±this before the action term (None: not)."""

    @property
    def label(self) -> str:
        """The source as people name it."""
        return {"mjlab": "mjlab", "isaaclab": "Isaac Lab", "onnx": "plain ONNX"}.get(self.source, self.source)


def clip_actions_assumption(value: float | None, where: str) -> str:
    """What the import assumed of the runner's `clip_actions`, and where it was read."""
    return (
        f"clip_actions {value}: {where}; rsl_rl's runner clips the policy's raw output to ±clip_actions before "
        "the action term (None: not clipped)"
    )


LAST_ACTION = (
    "last_action is rebuilt from the joint target sent, (target − offset) / scale, after the clip to the action "
    "bounds; Isaac Lab and mjlab observe the policy's raw output (after clip_actions): the two differ while the "
    "bounds clip the target"
)
"""The assumption behind the `last_action` fold (`robo_rl.importers.terms`)."""


def is_mjlab(props: Mapping[str, str]) -> bool:
    return {"joint_names", "default_joint_pos", "observation_names"} <= set(props)


def from_mjlab(props: Mapping[str, str], action_size: int) -> Description:
    """mjlab's ONNX metadata → Description (dt stays unknown: mjlab does not write it)."""
    joints = tuple(_csv(props["joint_names"]))
    defaults = [float(v) for v in _csv(props["default_joint_pos"])]
    if len(defaults) != len(joints):
        raise MissingInfoError(f"mjlab metadata: {len(joints)} joint_names but {len(defaults)} default_joint_pos")
    if action_size != len(joints):
        raise MissingInfoError(
            f"the policy outputs {action_size} actions but mjlab's metadata names {len(joints)} "
            "joints: only policies that command every joint can be imported from mjlab metadata"
        )
    scale = _per_joint([float(v) for v in _csv(props.get("action_scale", "1"))], len(joints), "action_scale")
    pose = dict(zip(joints, defaults, strict=True))
    action = JointAction(joints, scale, np.asarray(defaults), pose)
    names = _csv(props["observation_names"])
    scales = _term_values(props, "observation_terms_scale", len(names), 1.0)
    if any(_term_values(props, "observation_terms_history_length", len(names), 0.0)):
        raise MissingInfoError(
            "mjlab metadata: an observation term keeps a history; stacked histories cannot be imported"
        )
    clipped = [c for c in _csv(props.get("observation_terms_clip", "")) if c.replace(" ", "") != "-inf;inf"]
    if clipped:
        raise MissingInfoError(f"mjlab metadata: clipped observation terms ({clipped[:3]}) cannot be folded")
    terms = tuple((n, MJLAB_TERM_KINDS.get(n, "unknown"), scale) for n, scale in zip(names, scales, strict=True))
    assumptions = (
        "mjlab: the action is a joint-position target around the default pose (use_default_offset), as in mjlab's "
        "velocity and tracking tasks",
        "mjlab: observation terms by name: joint_pos = joint_pos_rel, joint_vel = joint_vel_rel, actions = "
        "last_action, command = a 3-entry velocity command (mjlab's own tasks)",
        "mjlab writes default_joint_pos with 3 decimals; those are the offsets folded in",
        clip_actions_assumption(None, "mjlab's ONNX metadata does not record it"),
    )
    return Description("mjlab", terms, joints, action, None, assumptions)


def _term_values(props: Mapping[str, str], key: str, count: int, default: float) -> list[float]:
    """A per-term number list of mjlab's metadata (`observation_terms_scale`, ...); absent: `default` for all."""
    if key not in props:
        return [default] * count
    try:
        values = [float(v) for v in _csv(props[key])]
    except ValueError:
        raise MissingInfoError(f"mjlab metadata {key!r}: not a list of numbers ({props[key][:60]})") from None
    if len(values) != count:
        raise MissingInfoError(f"mjlab metadata {key!r}: {len(values)} values for {count} observation terms")
    return values


def _csv(text: str) -> list[str]:
    return [part.strip() for part in text.split(",") if part.strip()]


def _per_joint(values: Sequence[float], size: int, what: str) -> np.ndarray:
    if len(values) == 1:
        return np.full(size, values[0], dtype=np.float64)
    if len(values) != size:
        raise MissingInfoError(f"{what}: {len(values)} values for {size} joints")
    return np.asarray(values, dtype=np.float64)


class _TolerantLoader(yaml.SafeLoader):
    """Isaac Lab's env.yaml holds `!!python/tuple` and other Python tags: read sequences as lists, anything else
    by its plain value."""


def _construct_any(loader: yaml.SafeLoader, suffix: str, node: yaml.Node) -> Any:
    if isinstance(node, yaml.SequenceNode):
        return loader.construct_sequence(node, deep=True)
    if isinstance(node, yaml.MappingNode):
        return loader.construct_mapping(node, deep=True)
    return loader.construct_scalar(node)  # type: ignore[arg-type]


_TolerantLoader.add_multi_constructor("tag:yaml.org,2002:python/", _construct_any)
_TolerantLoader.add_multi_constructor("!", _construct_any)


def read_env_config(path: Path, flag: str = "--env-config") -> dict[str, Any]:
    """An Isaac Lab run config (params/env.yaml or agent.yaml) as a mapping; MissingInfoError naming the file."""
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as err:
        raise MissingInfoError(f"{flag} {path}: not a UTF-8 text file ({err.reason} at byte {err.start})") from None
    except OSError as err:
        raise MissingInfoError(f"{flag} {path}: cannot read it ({err.strerror or err})") from None
    try:
        data = yaml.load(text, Loader=_TolerantLoader)  # a SafeLoader subclass
    except (yaml.YAMLError, ValueError, RecursionError) as err:  # a constructor's ValueError: a bad date, ...
        raise MissingInfoError(f"{flag} {path}: not YAML ({one_line(err)})") from None
    if not isinstance(data, dict):
        raise MissingInfoError(f"{flag} {path}: not an Isaac Lab run config (a mapping)")
    return data


def read_clip_actions(env_config: Path) -> tuple[float | None, str]:
    """The runner's `clip_actions` from the agent.yaml Isaac Lab dumps beside env.yaml (params/), and where it was
    read; None when there is no agent.yaml or it says null."""
    agent = env_config.with_name("agent.yaml")
    if not agent.is_file():
        return None, f"no {agent.name} beside {env_config.name} says it"
    value = read_env_config(agent, "agent config").get("clip_actions")
    if value is None:
        return None, f"read from {agent}"
    try:
        clip = float(value)
    except (TypeError, ValueError):
        raise MissingInfoError(f"{agent}: clip_actions {value!r} is not a number") from None
    if not (math.isfinite(clip) and clip > 0):
        raise MissingInfoError(f"{agent}: clip_actions {value!r} is not a positive number")
    return clip, f"read from {agent}"


def from_isaaclab(
    config: Mapping[str, Any],
    supplied: Supplied,
    where: str = "env.yaml",
    clip_actions: tuple[float | None, str] = (None, "not read"),
) -> Description:
    """Isaac Lab's dumped env config → Description; needs the robot's joint order (`supplied.joint_names`).
    `clip_actions`: the runner's setting and where it was read (`read_clip_actions`)."""
    joints = supplied.joint_names
    if not joints:
        raise MissingInfoError(
            f"{where} names joints by regular expression only: supply --joint-names with the "
            "robot's joints in the simulator's order (the articulation's joint_names)"
        )
    dt = _control_period(config, where)
    pose = _default_pose(config, joints, where)
    action, bounds = _joint_action(config, joints, pose, where)
    terms = _policy_terms(config, joints, where)
    assumptions = (
        "Isaac Lab: joint_vel_rel assumes a zero default joint velocity",
        clip_actions_assumption(*clip_actions),
    )
    return Description("isaaclab", terms, tuple(joints), action, dt, assumptions, bounds, clip_actions[0])


def _get(config: Mapping[str, Any], dotted: str, where: str) -> Any:
    node: Any = config
    for key in dotted.split("."):
        if not isinstance(node, Mapping) or key not in node:
            raise MissingInfoError(f"{where}: no {dotted!r} in it (is it the run's params/env.yaml?)")
        node = node[key]
    return node


def _control_period(config: Mapping[str, Any], where: str) -> float:
    dt, decimation = _get(config, "sim.dt", where), _get(config, "decimation", where)
    try:
        return float(dt) * int(decimation)
    except (TypeError, ValueError):
        raise MissingInfoError(f"{where}: sim.dt {dt!r} and decimation {decimation!r} are not numbers") from None


def _matches(pattern: Any, name: str, where: str) -> bool:
    try:
        return re.fullmatch(str(pattern), name) is not None
    except re.error as err:
        raise MissingInfoError(f"{where}: {pattern!r} is not a regular expression ({err})") from None


def _number(value: Any, where: str) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        raise MissingInfoError(f"{where}: {value!r} is not a number") from None


def _by_regex(patterns: Any, joints: Sequence[str], where: str, default: float) -> dict[str, float]:
    """Isaac Lab's `float | {regex: float}` resolved for each joint; a joint matching no pattern gets `default`
    (Isaac Lab's JointAction: a scale dict starts at ones, an offset dict at zeros)."""
    if isinstance(patterns, (int, float)) and not isinstance(patterns, bool):
        return dict.fromkeys(joints, float(patterns))
    if not isinstance(patterns, Mapping):
        raise MissingInfoError(f"{where}: expected a number or a mapping of joint regexes, got {patterns!r}")
    out: dict[str, float] = {}
    for joint in joints:
        found = [v for p, v in patterns.items() if _matches(p, joint, where)]
        out[joint] = _number(found[0], f"{where}.{joint}") if found else default
    return out


def _default_pose(config: Mapping[str, Any], joints: Sequence[str], where: str) -> dict[str, float]:
    patterns = _get(config, "scene.robot.init_state.joint_pos", where)
    pose = _by_regex(patterns, joints, f"{where} scene.robot.init_state.joint_pos", default=0.0)
    return pose


def _joint_action(
    config: Mapping[str, Any], joints: Sequence[str], pose: Mapping[str, float], where: str
) -> tuple[JointAction, tuple[tuple[float, ...], tuple[float, ...]] | None]:
    actions = _get(config, "actions", where)
    terms = {name: t for name, t in actions.items() if isinstance(t, Mapping)} if isinstance(actions, Mapping) else {}
    if len(terms) != 1:
        raise MissingInfoError(
            f"{where}: {len(terms)} action terms ({', '.join(terms)}); one joint-position term can be imported"
        )
    name, term = next(iter(terms.items()))
    kind = str(term.get("class_type", "")).rsplit(":", 1)[-1]
    if kind != "JointPositionAction":
        raise MissingInfoError(
            f"{where}: action term {name!r} is a {kind or 'term without class_type'}; only "
            "JointPositionAction (absolute joint targets) can be imported"
        )
    chosen = _select(term.get("joint_names", [".*"]), joints, bool(term.get("preserve_order", False)), where)
    scale = _by_regex(term.get("scale", 1.0), chosen, f"{where} actions.{name}.scale", default=1.0)
    if term.get("use_default_offset", True):
        offset = {j: pose[j] for j in chosen}
    else:
        offset = _by_regex(term.get("offset", 0.0), chosen, f"{where} actions.{name}.offset", default=0.0)
    action = JointAction(
        tuple(chosen), np.array([scale[j] for j in chosen]), np.array([offset[j] for j in chosen]), dict(pose)
    )
    return action, _clip_bounds(term.get("clip"), chosen, f"{where} actions.{name}.clip")


def _select(patterns: Any, joints: Sequence[str], preserve_order: bool, where: str) -> list[str]:
    patterns = [patterns] if isinstance(patterns, str) else list(patterns)
    if preserve_order:
        chosen = [j for p in patterns for j in joints if _matches(p, j, where)]
    else:
        chosen = [j for j in joints if any(_matches(p, j, where) for p in patterns)]
    if not chosen:
        raise MissingInfoError(f"{where}: the action's joint_names {patterns} match none of --joint-names")
    return chosen


def _clip_bounds(clip: Any, joints: Sequence[str], where: str) -> tuple[tuple[float, ...], tuple[float, ...]] | None:
    """Isaac Lab's action clip `{regex: (low, high)}` per joint: ±inf for a joint no pattern matches (Isaac Lab
    starts its clip tensor at ±inf and writes the matches into it)."""
    if not clip:
        return None
    if not isinstance(clip, Mapping):
        raise MissingInfoError(f"{where}: expected a mapping of joint regexes to [low, high], got {clip!r}")
    low, high = [], []
    for joint in joints:
        found = [v for p, v in clip.items() if _matches(p, joint, where)]
        pair = _pair(found[0], f"{where}.{joint}") if found else (-math.inf, math.inf)
        low.append(pair[0])
        high.append(pair[1])
    return tuple(low), tuple(high)


def _pair(value: Any, where: str) -> tuple[float, float]:
    if not isinstance(value, Sequence) or isinstance(value, str) or len(value) != 2:
        raise MissingInfoError(f"{where}: expected [low, high], got {value!r}")
    low, high = _number(value[0], where), _number(value[1], where)
    if not low <= high:
        raise MissingInfoError(f"{where}: low {low} is above high {high}")
    return low, high


def _policy_terms(config: Mapping[str, Any], joints: Sequence[str], where: str) -> tuple[tuple[str, str, float], ...]:
    group = _get(config, "observations.policy", where)
    if not isinstance(group, Mapping):
        raise MissingInfoError(f"{where}: observations.policy is not a mapping of terms")
    if group.get("history_length"):
        raise MissingInfoError(f"{where}: observations.policy keeps a history; stacked histories cannot be imported")
    out = []
    for name, term in group.items():
        if name in _GROUP_KEYS or not isinstance(term, Mapping) or "func" not in term:
            continue
        out.append((name, *_term_kind_scale(name, term, joints, f"{where} observations.policy.{name}")))
    if not out:
        raise MissingInfoError(f"{where}: observations.policy has no terms")
    return tuple(out)


def _term_kind_scale(name: str, term: Mapping[str, Any], joints: Sequence[str], where: str) -> tuple[str, float]:
    if term.get("clip") is not None:
        raise MissingInfoError(
            f"{where}: a clipped observation term cannot be folded into the import (clip {term['clip']})"
        )
    if term.get("history_length"):
        raise MissingInfoError(f"{where}: a term with a history cannot be imported")
    scale = term.get("scale")
    if scale is not None and not isinstance(scale, (int, float)):
        raise MissingInfoError(f"{where}: a per-entry scale cannot be folded yet (scale {scale})")
    kind = FUNCTION_KINDS.get(str(term["func"]).rsplit(":", 1)[-1], "unknown")
    asset = term.get("params", {}).get("asset_cfg", {}) if isinstance(term.get("params"), Mapping) else {}
    chosen = asset.get("joint_names") if isinstance(asset, Mapping) else None
    if kind.startswith("joint") and chosen not in (None, [".*"], ".*", list(joints)):
        raise MissingInfoError(
            f"{where}: observes a subset of the joints ({chosen}); only all joints, in "
            "--joint-names order, can be imported"
        )
    value = 1.0 if scale is None else float(scale)
    if not math.isfinite(value):
        raise MissingInfoError(f"{where}: scale {scale} is not finite")
    return kind, value
