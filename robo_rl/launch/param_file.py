"""ROS parameter files (`NODE: ros__parameters: {...}`) and parameter value typing.

A section applies to a node when its key is `/**` (every node), the node's fully qualified name
(`/ns/name`), that name without the leading slash, or the bare node name; sections apply in file order.
Nested mappings flatten to dotted names (`a: {b: 1}` -> `a.b`), as in ROS.
"""

from __future__ import annotations

from pathlib import Path

import yaml

from robo_rl.launch.errors import LaunchError, Location
from robo_rl.launch.schema import compose_yaml

ParamValue = str | bool | int | float | tuple[str | bool | int | float, ...]
SECTION_KEY = "ros__parameters"


def infer_type(text: str) -> str | bool | int | float:
    """A substituted string parameter typed as ROS does: YAML scalars become bool/int/float, else stay str."""
    try:
        value = yaml.safe_load(text)
    except yaml.YAMLError:
        return text
    return value if isinstance(value, bool | int | float) else text


def load_param_file(path: Path) -> tuple[tuple[str, dict[str, ParamValue]], ...]:
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
    return tuple(_section(path, key, body) for key, body in data.items())


def _section(path: Path, key: object, body: object) -> tuple[str, dict[str, ParamValue]]:
    where = Location(str(path))
    if not isinstance(key, str) or not isinstance(body, dict) or set(body) != {SECTION_KEY}:
        raise LaunchError(f"section '{key}': expected exactly the key '{SECTION_KEY}'", where)
    params = body[SECTION_KEY]
    if not isinstance(params, dict):
        raise LaunchError(f"section '{key}': {SECTION_KEY} must be a mapping", where)
    return key, _flatten(params, "", where)


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


def section_applies(key: str, name: str | None, namespace: str) -> bool:
    """Whether a parameter file section `key` applies to node `name` in `namespace` (e.g. '/cf1')."""
    if key in ("/**", "**"):
        return True
    if name is None:
        return False
    # As rcl: a key without a leading slash is absolute (`policy_node` is /policy_node, not /cf1/policy_node).
    qualified = f"{namespace.rstrip('/')}/{name}"
    return key in (qualified, qualified.lstrip("/"), f"/**/{name}")
