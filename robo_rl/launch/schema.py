"""Parse a ROS 2 YAML launch file (root `launch:`) into frozen action dataclasses.

The file is composed into YAML nodes (not plain dicts) so every error can name its file and line. Unknown
actions, unknown keys and malformed substitutions are LaunchErrors, as in ROS.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import yaml

from robo_rl.launch.errors import LaunchError, Location
from robo_rl.launch.substitution import Text, parse_text

MAX_NESTING = 64
ParamScalar = str | bool | int | float


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
    """`arg`: declares a launch argument; without `default` it is required."""

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
    """`node`: a ROS node `exec` of package `pkg`."""

    pkg: Text
    executable: Text
    name: Text | None
    namespace: Text | None
    params: tuple[Param | ParamFile, ...]
    remaps: tuple[tuple[Text, Text], ...]
    args: Text | None
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


def _check_keys(attrs: dict[str, yaml.Node], kind: str, allowed: set[str], required: set[str], where: Location) -> None:
    allowed_all = allowed | required | CONDITION_KEYS
    for key in attrs:
        if key not in allowed_all:
            raise LaunchError(f"{kind}: unknown key '{key}' (allowed: {', '.join(sorted(allowed_all))})", where)
    missing = sorted(required - attrs.keys())
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
    _check_keys(attrs, "arg", {"default", "description", "choices"}, {"name"}, where)
    choices = None
    if "choices" in attrs:
        choices = tuple(_string(item, "arg.choices", file) for item in _list(attrs, "choices", "arg", file))
    description = _string(attrs["description"], "arg.description", file) if "description" in attrs else ""
    default = _optional_text(attrs, "default", "arg", file)
    return Arg(
        _string(attrs["name"], "arg.name", file), default, description, choices, _condition(attrs, "arg", file), where
    )


def _parse_let(attrs: dict[str, yaml.Node], file: str, where: Location, depth: int) -> Let:
    _check_keys(attrs, "let", set(), {"name", "value"}, where)
    value = _text_of(attrs["value"], "let.value", file)
    return Let(_string(attrs["name"], "let.name", file), value, _condition(attrs, "let", file), where)


def _parse_include(attrs: dict[str, yaml.Node], file: str, where: Location, depth: int) -> Include:
    _check_keys(attrs, "include", {"arg"}, {"file"}, where)
    args = []
    for item in _list(attrs, "arg", "include", file):
        entry = _attributes(item, "include.arg", file)
        _check_keys(entry, "include.arg", set(), {"name", "value"}, _where(item, file))
        if CONDITION_KEYS & entry.keys():
            raise LaunchError("include.arg: takes no if/unless", _where(item, file))
        args.append((_string(entry["name"], "include.arg.name", file), _text_of(entry["value"], "include.arg", file)))
    file_text = _text_of(attrs["file"], "include.file", file)
    return Include(file_text, tuple(args), _condition(attrs, "include", file), where)


def _parse_push_namespace(attrs: dict[str, yaml.Node], file: str, where: Location, depth: int) -> PushNamespace:
    _check_keys(attrs, "push-ros-namespace", set(), {"namespace"}, where)
    namespace = _text_of(attrs["namespace"], "push-ros-namespace.namespace", file)
    return PushNamespace(namespace, _condition(attrs, "push-ros-namespace", file), where)


def _parse_group(attrs: dict[str, yaml.Node], file: str, where: Location, depth: int) -> Group:
    _check_keys(attrs, "group", {"scoped"}, {"children"}, where)
    scoped = _boolean(attrs["scoped"], "group.scoped", file) if "scoped" in attrs else True
    children = _actions(attrs["children"], file, depth + 1)
    return Group(children, scoped, _condition(attrs, "group", file), where)


NODE_KEYS = {"name", "namespace", "param", "remap", "args", "output"}


def _parse_node(attrs: dict[str, yaml.Node], file: str, where: Location, depth: int) -> Node:
    _check_keys(attrs, "node", NODE_KEYS, {"pkg", "exec"}, where)
    params = tuple(_param(item, file) for item in _list(attrs, "param", "node", file))
    remaps = tuple(_remap(item, file) for item in _list(attrs, "remap", "node", file))
    return Node(
        pkg=_text_of(attrs["pkg"], "node.pkg", file),
        executable=_text_of(attrs["exec"], "node.exec", file),
        name=_optional_text(attrs, "name", "node", file),
        namespace=_optional_text(attrs, "namespace", "node", file),
        params=params,
        remaps=remaps,
        args=_optional_text(attrs, "args", "node", file),
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
    if "from" in entry:
        _check_keys(entry, "node.param", set(), {"from"}, where)
        return ParamFile(_text_of(entry["from"], "node.param.from", file), where)
    _check_keys(entry, "node.param", set(), {"name", "value"}, where)
    if CONDITION_KEYS & entry.keys():
        raise LaunchError("node.param: takes no if/unless", where)
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
    _check_keys(entry, "node.remap", set(), {"from", "to"}, _where(node, file))
    if CONDITION_KEYS & entry.keys():
        raise LaunchError("node.remap: takes no if/unless", _where(node, file))
    return _text_of(entry["from"], "node.remap.from", file), _text_of(entry["to"], "node.remap.to", file)


def _parse_executable(attrs: dict[str, yaml.Node], file: str, where: Location, depth: int) -> Executable:
    _check_keys(attrs, "executable", {"name", "output"}, {"cmd"}, where)
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
