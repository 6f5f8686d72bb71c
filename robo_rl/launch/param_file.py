"""ROS parameter files (`NODE: ros__parameters: {...}`), how rcl combines them, and parameter value typing.

A section key is a node-name pattern: `/**` (every node), `/cf1/policy_node`, `/**/policy_node` (any namespace),
`/*/policy_node` (one namespace level); a key without a leading slash is absolute (`policy_node` is
`/policy_node`); nested keys join (`cf1: {policy_node: {ros__parameters: ...}}` is `cf1/policy_node`). Nested
parameter mappings flatten to dotted names (`a: {b: 1}` -> `a.b`).

How rcl (10.1, with rclpy 9.1, ROS 2 Kilted) combines the `--params-file FILE` and `-p NAME:=VALUE` arguments of a
node, which `merge_sections` and `node_parameters` reproduce (tests/real/ros/test_launch_params.py checks them
against rclpy): every argument, in command-line order, writes its sections into one list; `-p` writes into
section `/**`. A key seen before keeps its place in the list and its values are updated; a new key goes to the
end. The node then applies every section whose key matches its name, in list order, later ones winning. So
order, not specificity, decides: a `/**` section that first appears after `/**/policy_node` beats it.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import yaml

from robo_rl.launch.errors import LaunchError, Location
from robo_rl.launch.schema import compose_yaml

ParamValue = str | bool | int | float | tuple[str | bool | int | float, ...]
Section = tuple[str, dict[str, ParamValue]]
"""A parameter-file section: (node-name pattern, flat parameters)."""
SECTION_KEY = "ros__parameters"
WILDCARD_KEY = "/**"


def infer_type(text: str) -> str | bool | int | float:
    """A substituted string parameter typed as ROS does: YAML scalars become bool/int/float, else stay str."""
    try:
        value = yaml.safe_load(text)
    except yaml.YAMLError:
        return text
    return value if isinstance(value, bool | int | float) else text


def load_param_file(path: Path) -> tuple[Section, ...]:
    """The (section key, flat parameters) pairs of the parameter file `path`, in file order."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, ValueError) as err:  # ValueError: undecodable bytes or a NUL in the path
        reason = getattr(err, "strerror", None) or str(err).splitlines()[0]
        raise LaunchError(f"cannot read parameter file: {reason}", Location(str(path))) from None
    root = compose_yaml(text, str(path))
    try:
        data = yaml.SafeLoader("").construct_document(root) if root is not None else None
    except (yaml.YAMLError, TypeError, RecursionError) as err:
        raise LaunchError(f"invalid parameter file: {str(err).splitlines()[0]}", Location(str(path))) from None
    if not isinstance(data, dict) or not data:
        raise LaunchError("a parameter file maps node names to {ros__parameters: ...}", Location(str(path)))
    return tuple(section for key, body in data.items() for section in _sections(path, key, body))


def _sections(path: Path, key: object, body: object) -> list[Section]:
    """`key: {ros__parameters: {...}}`, or `key: {child: ...}` (the child's key is `key/child`)."""
    where = Location(str(path))
    if not isinstance(key, str) or not isinstance(body, dict) or not body:
        raise LaunchError(f"section '{key}': expected exactly the key '{SECTION_KEY}'", where)
    if SECTION_KEY not in body:
        return [section for child, inner in body.items() for section in _sections(path, f"{key}/{child}", inner)]
    if set(body) != {SECTION_KEY}:
        raise LaunchError(f"section '{key}': expected exactly the key '{SECTION_KEY}'", where)
    params = body[SECTION_KEY]
    if not isinstance(params, dict):
        raise LaunchError(f"section '{key}': {SECTION_KEY} must be a mapping", where)
    return [(key, _flatten(params, "", where))]


def _flatten(params: dict, prefix: str, where: Location) -> dict[str, ParamValue]:
    flat: dict[str, ParamValue] = {}
    for name, value in params.items():
        full = f"{prefix}{name}"
        if isinstance(value, dict):
            flat.update(_flatten(value, f"{full}.", where))
        else:
            flat[full] = _file_value(full, value, where)
    return flat


def _file_value(name: str, value: object, where: Location) -> ParamValue:
    if isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, list) and all(isinstance(item, bool | int | float | str) for item in value):
        return tuple(value)
    raise LaunchError(f"parameter '{name}': expected a string, number, boolean or a list of them", where)


def merge_sections(sections: Iterable[Section]) -> tuple[Section, ...]:
    """rcl's one list of sections: a key keeps the place where it first appeared, later values update it."""
    merged: dict[str, dict[str, ParamValue]] = {}
    for key, params in sections:
        merged.setdefault(key, {}).update(params)
    return tuple(merged.items())


def node_parameters(sections: Iterable[Section], name: str | None, namespace: str) -> dict[str, ParamValue]:
    """The parameters node `name` in `namespace` gets from `sections` (in command-line order), as rclpy applies
    them: the merged sections whose key matches the node, in order, later ones winning."""
    params: dict[str, ParamValue] = {}
    for key, section in merge_sections(sections):
        if section_applies(key, name, namespace):
            params.update(section)
    return params


def section_applies(key: str, name: str | None, namespace: str) -> bool:
    """Whether the section `key` applies to node `name` in `namespace` (e.g. '/cf1'); `*` matches one name token,
    `**` any number. Without a name (the executable's own default, unknown here) only a wildcard name matches."""
    pattern = [token for token in key.split("/") if token]
    tokens = [token for token in namespace.split("/") if token] + [name if name is not None else "\0"]
    return _glob(pattern, tokens)


def _glob(pattern: list[str], tokens: list[str]) -> bool:
    if not pattern:
        return not tokens
    head, rest = pattern[0], pattern[1:]
    if head == "**":
        return any(_glob(rest, tokens[skip:]) for skip in range(len(tokens) + 1))
    if not tokens or (head != "*" and head != tokens[0]) or (head == "*" and tokens[0] == "\0" and rest):
        return False
    return _glob(rest, tokens[1:])
