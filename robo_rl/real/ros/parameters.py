"""A node's ROS parameters as one frozen dataclass: declared from its fields' defaults, read back typed in one place,
checked by the dataclass itself (its `__post_init__` names the parameter in its messages)."""

from __future__ import annotations

import dataclasses
import typing
from collections.abc import Mapping
from typing import Any, TypeVar

T = TypeVar("T")


def declare(node: Any, cls: type, defaults: Mapping[str, object] | None = None) -> None:
    """Declare one ROS parameter per field of `cls`, with the field's default (or `defaults[name]`); a tuple default
    is declared as a list, as ROS types arrays."""
    for field in dataclasses.fields(cls):
        value = (defaults or {}).get(field.name, field.default)
        node.declare_parameter(field.name, list(value) if isinstance(value, tuple) else value)


def read(node: Any, cls: type[T]) -> T:
    """The node's current values of `cls`'s parameters, converted to the fields' types; the dataclass checks them."""
    hints = typing.get_type_hints(cls)
    # `cls` is a dataclass by contract; mypy cannot bound a TypeVar to one.
    names = [field.name for field in dataclasses.fields(cls)]  # type: ignore[arg-type]
    return cls(**{name: _typed(hints[name], node.get_parameter(name).value) for name in names})


def _typed(hint: Any, value: Any) -> Any:
    if hint is bool:
        return bool(value)
    if hint is int:
        return int(value)
    if hint is float:
        return float(value)
    if hint is str:
        return str(value)
    if typing.get_origin(hint) is tuple:
        item = typing.get_args(hint)[0]
        return tuple(_typed(item, v) for v in value)
    raise TypeError(f"parameters: no ROS conversion for {hint!r}")
