"""Parse a ROS 2 YAML launch file (root `launch:`) into frozen action dataclasses.

The file is composed into YAML nodes (not plain dicts) so every error can name its file and line. The schema is
ROS 2's launch_yaml at ros2/launch 3.7.1 and ros2/launch_ros 0.28.0 (`ROS_KEYS`, read from each action's `parse`
classmethod): a key ROS refuses is refused here as "unknown"; a key ROS accepts that this interpreter does not
implement (respawn, env, nested parameters, ...) is refused as "not supported by robo-rl launch", so a file either
means the same under both or stops here.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import yaml

from robo_rl.launch.errors import LaunchError, Location
from robo_rl.launch.substitution import Text, parse_text

MAX_NESTING = 64


@dataclass(frozen=True)
class ParamList:
    """A list-valued `param` value; its items are strings (with substitutions), numbers or booleans."""

    items: tuple[Text | bool | int | float, ...]


ParamLiteral = Text | bool | int | float | ParamList


@dataclass(frozen=True)
class Condition:
    """`if:` (negate False) or `unless:` (negate True); the expression must evaluate to true/false/1/0."""

    expression: Text
    negate: bool


@dataclass(frozen=True)
class Arg:
    """`arg`: declares a launch argument; without `default` it is required; `choice: [{value: a}, ...]` limits it."""

    name: str
    default: Text | None
    description: str
    choices: tuple[str, ...] | None
    condition: Condition | None
    where: Location


@dataclass(frozen=True)
class Let:
    """`let`: sets a launch configuration."""

    name: str
    value: Text
    condition: Condition | None
    where: Location


@dataclass(frozen=True)
class Include:
    """`include`: resolves another YAML launch file with `args` (name, value) in a scope of its own."""

    file: Text
    args: tuple[tuple[str, Text], ...]
    condition: Condition | None
    where: Location


@dataclass(frozen=True)
class PushNamespace:
    """`push-ros-namespace`: prefixes the namespace of the nodes that follow in the enclosing scope."""

    namespace: Text
    condition: Condition | None
    where: Location


@dataclass(frozen=True)
class Group:
    """`group`: children in a scope; `scoped: false` lets their configurations and namespace leak out."""

    children: tuple[Action, ...]
    scoped: bool
    condition: Condition | None
    where: Location


@dataclass(frozen=True)
class Param:
    """One `param` entry: `name` + `value`."""

    name: str
    value: ParamLiteral
    where: Location


@dataclass(frozen=True)
class ParamFile:
    """One `param` entry `from: FILE` (a ROS parameter file)."""

    path: Text
    where: Location


@dataclass(frozen=True)
class Node:
    """`node`: a ROS node `exec` of package `pkg` (without `pkg`: `exec` is a command found on PATH).

    `args` go before the ROS arguments; `ros_args` are ROS arguments of the user's (`--ros-args ROS_ARGS`).
    """

    pkg: Text | None
    executable: Text
    name: Text | None
    namespace: Text | None
    params: tuple[Param | ParamFile, ...]
    remaps: tuple[tuple[Text, Text], ...]
    args: Text | None
    ros_args: Text | None
    output: str
    condition: Condition | None
    where: Location


@dataclass(frozen=True)
class Executable:
    """`executable`: a plain command line `cmd`."""

    cmd: Text
    name: Text | None
    output: str
    condition: Condition | None
    where: Location


Action = Arg | Let | Include | PushNamespace | Group | Node | Executable
CONDITION_KEYS = frozenset({"if", "unless"})
_PROCESS_KEYS = frozenset(
    {"cwd", "name", "on_exit", "launch-prefix", "output", "respawn", "respawn_max_retries", "respawn_delay"}
    | {"sigkill_timeout", "sigterm_timeout", "shell", "emulate_tty", "env"}
)
ROS_KEYS: dict[str, frozenset[str]] = {
    # What launch_yaml reads of each entity (ros2/launch 3.7.1: launch/action.py and launch/actions/*.py `parse`;
    # ros2/launch_ros 0.28.0: launch_ros/actions/node.py and push_ros_namespace.py); any other key of an action
    # is an "Unexpected key(s)" ValueError there. Entries (`node.param`, `arg.choice`, ...) are sub-entities.
    "arg": CONDITION_KEYS | {"name", "default", "description", "choice"},
    "arg.choice": frozenset({"value"}),
    "let": CONDITION_KEYS | {"name", "value"},
    "include": CONDITION_KEYS | {"file", "arg"},
    "include.arg": frozenset({"name", "value"}),
    "group": CONDITION_KEYS | {"scoped", "forwarding", "keep", "children"},
    "push-ros-namespace": CONDITION_KEYS | {"namespace"},
    "node": CONDITION_KEYS
    | (_PROCESS_KEYS - {"name"})
    | {"name", "pkg", "exec", "exec_name", "node-name"}
    | {"namespace", "args", "ros_args", "remap", "param"},
    "node.param": frozenset({"name", "value", "type", "param", "from", "allow_substs"}),
    "node.remap": frozenset({"from", "to"}),
    "executable": CONDITION_KEYS | _PROCESS_KEYS | {"cmd"},
}
REQUIRED_KEYS: dict[str, frozenset[str]] = {
    "arg": frozenset({"name"}),
    "arg.choice": frozenset({"value"}),
    "let": frozenset({"name", "value"}),
    "include": frozenset({"file"}),
    "include.arg": frozenset({"name", "value"}),
    "group": frozenset({"children"}),
    "push-ros-namespace": frozenset({"namespace"}),
    "node": frozenset({"exec"}),
    "node.remap": frozenset({"from", "to"}),
    "executable": frozenset({"cmd"}),
}
SUPPORTED_KEYS: dict[str, frozenset[str]] = {
    "arg": ROS_KEYS["arg"],
    "arg.choice": ROS_KEYS["arg.choice"],
    "let": ROS_KEYS["let"],
    "include": ROS_KEYS["include"],
    "include.arg": ROS_KEYS["include.arg"],
    "group": CONDITION_KEYS | {"scoped", "children"},
    "push-ros-namespace": ROS_KEYS["push-ros-namespace"],
    "node": CONDITION_KEYS | {"pkg", "exec", "name", "namespace", "args", "ros_args", "param", "remap", "output"},
    "node.param": frozenset({"name", "value", "from"}),
    "node.remap": ROS_KEYS["node.remap"],
    "executable": CONDITION_KEYS | {"cmd", "name", "output"},
}
ROS_ACTIONS = frozenset(
    # Every action name launch_yaml knows at ros2/launch 3.7.1 + ros2/launch_ros 0.28.0 (`@expose_action`).
    {"append_env", "arg", "executable", "group", "include", "let", "log", "reset", "reset_env", "set_env"}
    | {"shutdown", "timer", "unset_env", "load_composable_node", "node", "node_container", "push-ros-namespace"}
    | {"push_ros_namespace", "ros_timer", "set_parameter", "set_parameters_from_file", "set_remap"}
    | {"set_ros_log_dir", "set_use_sim_time"}
)


def parse_launch_file(path: Path) -> tuple[Action, ...]:
    """Read and parse `path`; raises LaunchError if it is missing or malformed."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, ValueError) as err:  # ValueError: undecodable bytes or a NUL in the path
        raise LaunchError(f"cannot read launch file: {_reason(err)}", Location(str(path))) from None
    return parse_launch_text(text, str(path))


def parse_launch_text(text: str, file: str = "<string>") -> tuple[Action, ...]:
    """Parse the YAML launch description `text`; `file` names it in errors."""
    root = compose_yaml(text, file)
    if not isinstance(root, yaml.MappingNode) or len(root.value) != 1 or _key(root.value[0][0], file) != "launch":
        raise LaunchError("a launch file is a mapping with the single key 'launch'", _where(root, file))
    return _actions(root.value[0][1], file, depth=0)


def compose_yaml(text: str, file: str) -> yaml.Node | None:
    """YAML text -> node tree (with line marks); YAML syntax errors become LaunchErrors."""
    try:
        return yaml.compose(text, Loader=yaml.SafeLoader)
    except RecursionError:
        raise LaunchError("invalid YAML: nested too deeply", Location(file)) from None
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        line = mark.line + 1 if mark is not None else 0
        problem = getattr(err, "problem", None) or str(err).splitlines()[0]
        raise LaunchError(f"invalid YAML: {problem}", Location(file, line)) from None


def _reason(err: Exception) -> str:
    return getattr(err, "strerror", None) or str(err).splitlines()[0]


def _where(node: yaml.Node | None, file: str) -> Location:
    return Location(file, node.start_mark.line + 1 if node is not None else 0)


def _actions(node: yaml.Node, file: str, depth: int) -> tuple[Action, ...]:
    if depth > MAX_NESTING:
        raise LaunchError(f"groups nested deeper than {MAX_NESTING}", _where(node, file))
    if not isinstance(node, yaml.SequenceNode):
        raise LaunchError("expected a list of actions", _where(node, file))
    return tuple(_action(item, file, depth) for item in node.value)


def _action(node: yaml.Node, file: str, depth: int) -> Action:
    if not isinstance(node, yaml.MappingNode) or len(node.value) != 1:
        raise LaunchError("an action is a mapping with one key, e.g. '- node: {...}'", _where(node, file))
    key_node, body = node.value[0]
    kind = _key(key_node, file)
    if kind not in PARSERS:
        if kind in ROS_ACTIONS:
            raise LaunchError(
                f"action '{kind}' runs under ros2 launch but not in robo-rl launch", _where(key_node, file)
            )
        raise LaunchError(f"unknown action '{kind}' (known: {', '.join(sorted(PARSERS))})", _where(key_node, file))
    attrs = _attributes(body, kind, file)
    return PARSERS[kind](attrs, file, _where(key_node, file), depth)


def _key(node: yaml.Node, file: str) -> str:
    if not isinstance(node, yaml.ScalarNode) or node.tag != "tag:yaml.org,2002:str":
        raise LaunchError("keys must be plain strings", _where(node, file))
    return node.value


def _attributes(node: yaml.Node, kind: str, file: str) -> dict[str, yaml.Node]:
    if not isinstance(node, yaml.MappingNode):
        raise LaunchError(f"{kind}: expected a mapping of attributes", _where(node, file))
    attrs: dict[str, yaml.Node] = {}
    for key_node, value in node.value:
        key = _key(key_node, file)
        if key in attrs:
            raise LaunchError(f"{kind}: duplicate key '{key}'", _where(key_node, file))
        attrs[key] = value
    return attrs


def _check_keys(attrs: dict[str, yaml.Node], kind: str, where: Location) -> None:
    """Refuse what ROS refuses (an unknown key, both if and unless, a missing key) and what ROS accepts but this
    interpreter does not implement, each in its own words."""
    table = kind.replace("push_ros_namespace", "push-ros-namespace")
    for key in attrs:
        if key not in ROS_KEYS[table]:
            allowed = ", ".join(sorted(SUPPORTED_KEYS[table]))
            raise LaunchError(f"{kind}: unknown key '{key}' (allowed: {allowed})", where)
        if key not in SUPPORTED_KEYS[table]:
            raise LaunchError(f"{kind}: key '{key}' works under ros2 launch but not in robo-rl launch", where)
    missing = sorted(REQUIRED_KEYS.get(table, frozenset()) - attrs.keys())
    if missing:
        raise LaunchError(f"{kind}: missing required key '{missing[0]}'", where)
    if "if" in attrs and "unless" in attrs:
        raise LaunchError(f"{kind}: give 'if' or 'unless', not both", where)


def _string(node: yaml.Node, what: str, file: str) -> str:
    """A scalar's source text (so `true` stays 'true' and `1.0` stays '1.0'); null is an error."""
    if not isinstance(node, yaml.ScalarNode) or node.tag == "tag:yaml.org,2002:null":
        raise LaunchError(f"{what}: expected a string", _where(node, file))
    return node.value


def _text_of(node: yaml.Node, what: str, file: str) -> Text:
    try:
        return parse_text(_string(node, what, file))
    except LaunchError as err:
        if err.where is not None:
            raise
        raise LaunchError(f"{what}: {err}", _where(node, file)) from None


def _optional_text(attrs: dict[str, yaml.Node], key: str, kind: str, file: str) -> Text | None:
    return _text_of(attrs[key], f"{kind}.{key}", file) if key in attrs else None


def _condition(attrs: dict[str, yaml.Node], kind: str, file: str) -> Condition | None:
    for key, negate in (("if", False), ("unless", True)):
        if key in attrs:
            return Condition(_text_of(attrs[key], f"{kind}.{key}", file), negate)
    return None


def _boolean(node: yaml.Node, what: str, file: str) -> bool:
    value = _string(node, what, file).lower()
    if value not in ("true", "false", "1", "0"):
        raise LaunchError(f"{what}: expected true or false, got '{value}'", _where(node, file))
    return value in ("true", "1")


def _list(attrs: dict[str, yaml.Node], key: str, kind: str, file: str) -> list[yaml.Node]:
    if key not in attrs:
        return []
    node = attrs[key]
    if not isinstance(node, yaml.SequenceNode):
        raise LaunchError(f"{kind}.{key}: expected a list", _where(node, file))
    return list(node.value)


def _parse_arg(attrs: dict[str, yaml.Node], file: str, where: Location, depth: int) -> Arg:
    _check_keys(attrs, "arg", where)
    choices = None
    if "choice" in attrs:
        choices = tuple(_choice(item, file) for item in _list(attrs, "choice", "arg", file))
        if not choices:
            raise LaunchError("arg.choice: give at least one {value: ...}", _where(attrs["choice"], file))
    description = _string(attrs["description"], "arg.description", file) if "description" in attrs else ""
    default = _optional_text(attrs, "default", "arg", file)
    return Arg(
        _string(attrs["name"], "arg.name", file), default, description, choices, _condition(attrs, "arg", file), where
    )


def _choice(node: yaml.Node, file: str) -> str:
    """One `arg.choice` entry `{value: V}`; ROS compares the argument's string with V, unsubstituted."""
    entry = _attributes(node, "arg.choice", file)
    _check_keys(entry, "arg.choice", _where(node, file))
    return _string(entry["value"], "arg.choice.value", file)


def _parse_let(attrs: dict[str, yaml.Node], file: str, where: Location, depth: int) -> Let:
    _check_keys(attrs, "let", where)
    value = _text_of(attrs["value"], "let.value", file)
    return Let(_string(attrs["name"], "let.name", file), value, _condition(attrs, "let", file), where)


def _parse_include(attrs: dict[str, yaml.Node], file: str, where: Location, depth: int) -> Include:
    _check_keys(attrs, "include", where)
    args = []
    for item in _list(attrs, "arg", "include", file):
        entry = _attributes(item, "include.arg", file)
        _check_keys(entry, "include.arg", _where(item, file))
        args.append((_string(entry["name"], "include.arg.name", file), _text_of(entry["value"], "include.arg", file)))
    file_text = _text_of(attrs["file"], "include.file", file)
    return Include(file_text, tuple(args), _condition(attrs, "include", file), where)


def _parse_push_namespace(attrs: dict[str, yaml.Node], file: str, where: Location, depth: int) -> PushNamespace:
    _check_keys(attrs, "push-ros-namespace", where)
    namespace = _text_of(attrs["namespace"], "push-ros-namespace.namespace", file)
    return PushNamespace(namespace, _condition(attrs, "push-ros-namespace", file), where)


def _parse_group(attrs: dict[str, yaml.Node], file: str, where: Location, depth: int) -> Group:
    _check_keys(attrs, "group", where)
    scoped = _boolean(attrs["scoped"], "group.scoped", file) if "scoped" in attrs else True
    children = _actions(attrs["children"], file, depth + 1)
    return Group(children, scoped, _condition(attrs, "group", file), where)


def _parse_node(attrs: dict[str, yaml.Node], file: str, where: Location, depth: int) -> Node:
    _check_keys(attrs, "node", where)
    params = tuple(_param(item, file) for item in _list(attrs, "param", "node", file))
    remaps = tuple(_remap(item, file) for item in _list(attrs, "remap", "node", file))
    return Node(
        pkg=_optional_text(attrs, "pkg", "node", file),
        executable=_text_of(attrs["exec"], "node.exec", file),
        name=_optional_text(attrs, "name", "node", file),
        namespace=_optional_text(attrs, "namespace", "node", file),
        params=params,
        remaps=remaps,
        args=_optional_text(attrs, "args", "node", file),
        ros_args=_optional_text(attrs, "ros_args", "node", file),
        output=_output(attrs, "node", file),
        condition=_condition(attrs, "node", file),
        where=where,
    )


def _output(attrs: dict[str, yaml.Node], kind: str, file: str) -> str:
    output = _string(attrs["output"], f"{kind}.output", file) if "output" in attrs else "screen"
    if output not in ("screen", "log", "both"):
        raise LaunchError(f"{kind}.output: expected screen, log or both, got '{output}'", _where(attrs["output"], file))
    return output


def _param(node: yaml.Node, file: str) -> Param | ParamFile:
    entry = _attributes(node, "node.param", file)
    where = _where(node, file)
    _check_keys(entry, "node.param", where)
    if "from" in entry:
        if entry.keys() != {"from"}:
            raise LaunchError("node.param: 'from' takes no 'name' or 'value' (ROS refuses them together)", where)
        return ParamFile(_text_of(entry["from"], "node.param.from", file), where)
    for key in ("name", "value"):
        if key not in entry:
            raise LaunchError(f"node.param: missing required key '{key}' (or give 'from: FILE')", where)
    return Param(_string(entry["name"], "node.param.name", file), _param_literal(entry["value"], file), where)


SCALAR_TAGS = {"tag:yaml.org,2002:bool", "tag:yaml.org,2002:int", "tag:yaml.org,2002:float"}


def _param_literal(node: yaml.Node, file: str) -> ParamLiteral:
    if isinstance(node, yaml.SequenceNode):
        return ParamList(tuple(_param_scalar(item, file) for item in node.value))
    return _param_scalar(node, file)


def _param_scalar(node: yaml.Node, file: str) -> Text | bool | int | float:
    if isinstance(node, yaml.ScalarNode) and node.tag in SCALAR_TAGS:
        return yaml.SafeLoader("").construct_object(node)
    if isinstance(node, yaml.ScalarNode) and node.tag == "tag:yaml.org,2002:str":
        return _text_of(node, "node.param.value", file)
    raise LaunchError("node.param.value: expected a string, number, boolean or a list of them", _where(node, file))


def _remap(node: yaml.Node, file: str) -> tuple[Text, Text]:
    entry = _attributes(node, "node.remap", file)
    _check_keys(entry, "node.remap", _where(node, file))
    return _text_of(entry["from"], "node.remap.from", file), _text_of(entry["to"], "node.remap.to", file)


def _parse_executable(attrs: dict[str, yaml.Node], file: str, where: Location, depth: int) -> Executable:
    _check_keys(attrs, "executable", where)
    return Executable(
        cmd=_text_of(attrs["cmd"], "executable.cmd", file),
        name=_optional_text(attrs, "name", "executable", file),
        output=_output(attrs, "executable", file),
        condition=_condition(attrs, "executable", file),
        where=where,
    )


PARSERS: dict[str, Callable[[dict[str, yaml.Node], str, Location, int], Action]] = {
    "arg": _parse_arg,
    "let": _parse_let,
    "include": _parse_include,
    "push-ros-namespace": _parse_push_namespace,
    "push_ros_namespace": _parse_push_namespace,  # the spelling newer ROS 2 releases accept too
    "group": _parse_group,
    "node": _parse_node,
    "executable": _parse_executable,
}


def declared_arguments(actions: tuple[Action, ...]) -> dict[str, Arg]:
    """The `arg` declarations of a file by name, including those inside groups (not included files)."""
    found: dict[str, Arg] = {}
    for action in actions:
        if isinstance(action, Arg):
            found.setdefault(action.name, action)
        elif isinstance(action, Group):
            for name, arg in declared_arguments(action.children).items():
                found.setdefault(name, arg)
    return found
