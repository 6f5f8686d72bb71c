"""ROS messages ↔ flat field dicts, by the dotted paths robot profiles use (`twist.twist.linear.x`, `data[3]`).

Works on the Python classes rosidl generates (through `get_fields_and_field_types`), without rosidl_runtime_py.
Paths are parsed once; reading and writing a message then walks only the fields a profile names.
"""

from __future__ import annotations

import array
import importlib
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

_SEGMENT = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)(?:\[([0-9]+)\])?$")
_INTEGER_TYPES = {"int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64", "byte", "octet", "char"}
Step = tuple[str, int | None]
# array.array type codes of rosidl's `sequence<...>` fields of numbers.
_ARRAY_CODES = {"float": "f", "double": "d", "int8": "b", "uint8": "B", "int16": "h", "uint16": "H", "int32": "i"}
_ARRAY_CODES |= {"uint32": "I", "int64": "q", "uint64": "Q"}


class MessageTypeError(ValueError):
    """A message type cannot be imported, or a path names no field of it."""


def message_class(type_name: str) -> Any:
    """The Python class of `pkg/msg/Name` (a generated rosidl class: Any to the type checker); MessageTypeError
    says which package to install when it is absent."""
    package, kind, name = [*type_name.split("/"), "", ""][:3]
    if kind != "msg" or not package or not name:
        raise MessageTypeError(f"{type_name!r}: expected pkg/msg/Name")
    try:
        module = importlib.import_module(f"{package}.msg")
    except ModuleNotFoundError:
        wheel = "ros-" + package.replace("_", "-")
        raise MessageTypeError(f"{type_name}: message package {package!r} is not installed (pip: {wheel})") from None
    if not hasattr(module, name):
        raise MessageTypeError(f"{type_name}: {package}.msg has no message {name!r}")
    return getattr(module, name)


def parse_path(path: str) -> tuple[Step, ...]:
    """`a.b[2].c` → (("a", None), ("b", 2), ("c", None))."""
    steps = []
    for segment in path.split("."):
        match = _SEGMENT.match(segment)
        if not match:
            raise MessageTypeError(f"bad field path {path!r}")
        steps.append((match.group(1), None if match.group(2) is None else int(match.group(2))))
    return tuple(steps)


def field_type(message: Any, name: str) -> str:
    """The rosidl type string of a field (`double`, `sequence<float>`, `geometry_msgs/Vector3`, ...)."""
    types = message.get_fields_and_field_types()
    if name not in types:
        raise MessageTypeError(f"{type(message).__name__} has no field {name!r} (fields: {', '.join(types)})")
    return types[name]


def _base_type(type_string: str) -> str:
    base = type_string.removeprefix("sequence<").split(">")[0].split("[")[0]
    return base.split(",")[0]


def _element_class(message: Any, name: str) -> type:
    base = _base_type(field_type(message, name))
    if "/" not in base:
        raise MessageTypeError(f"{type(message).__name__}.{name} is not a sequence of messages")
    package, class_name = base.split("/")
    return message_class(f"{package}/msg/{class_name}")


def _cast_to(base: str) -> Callable[[float], Any]:
    if base in _INTEGER_TYPES:
        return round
    if base == "boolean":
        return bool
    return float


def _cast(base: str, value: float) -> Any:
    return _cast_to(base)(value)


class FieldReader:
    """Reads the given paths of one message: `reader(msg)` → `{prefix.path: value}` (absent indices left out)."""

    def __init__(self, prefix: str, paths: Iterable[str]) -> None:
        self.paths = {f"{prefix}.{path}": parse_path(path) for path in paths}

    def __call__(self, message: Any) -> dict[str, float]:
        values = {}
        for key, steps in self.paths.items():
            value = _read(message, steps)
            if value is not None:
                values[key] = float(value)
        return values


def _read(message: Any, steps: tuple[Step, ...]) -> Any:
    value = message
    for name, index in steps:
        value = getattr(value, name)
        if index is not None:
            if index >= len(value):
                return None
            value = value[index]
    return value


def check_paths(message_type: type, paths: Iterable[str]) -> None:
    """Raise MessageTypeError naming the first path that is not a numeric field of `message_type`."""
    for path in paths:
        message: Any = message_type()
        for position, (name, index) in enumerate(parse_path(path)):
            kind = field_type(message, name)
            last = position == len(parse_path(path)) - 1
            if last:
                if "/" in _base_type(kind) or "string" in kind:
                    raise MessageTypeError(f"{message_type.__name__}: {path!r} is not a number")
                break
            message = _element_class(message, name)() if index is not None else getattr(message, name)


def set_fields(message: Any, values: Mapping[str, float]) -> Any:
    """Write `path → value` into `message` (sequences grow as needed, numbers cast to the field's type).

    The plan for a message type and set of paths is made once and cached: paths parsed, casts chosen, and the
    elements of one sequence (`data[0]`, `data[1]`, ...) gathered into a single assignment.
    """
    key = (type(message), tuple(values))
    plan = _PLANS.get(key)
    if plan is None:
        plan = _PLANS[key] = _WritePlan(key[0], key[1])
    plan.write(message, values)
    return message


@dataclass(frozen=True)
class _SequenceWrite:
    """Elements of one sequence field of plain (unindexed) sub-messages: `prefix.name[index]` for each slot."""

    prefix: tuple[str, ...]
    name: str
    cast: Callable[[float], Any]
    container: Callable[[list], Any]
    """list → what the field stores: an array.array of its type code for a `sequence<number>` (which rosidl takes
    as is, instead of checking every element), else the list."""
    size: int
    slots: tuple[tuple[str, int], ...]
    """(path, index) of each element written."""


class _WritePlan:
    """How `set_fields` writes one set of paths into messages of one type."""

    def __init__(self, message_type: type, paths: Sequence[str]) -> None:
        self.scalars: list[tuple[tuple[str, ...], str, Callable[[float], Any], str]] = []
        self.nested: list[tuple[str, tuple[Step, ...]]] = []
        groups: dict[tuple[tuple[str, ...], str], list[tuple[str, int]]] = {}
        for path in paths:
            steps = parse_path(path)
            *head, (name, index) = steps
            if any(i is not None for _, i in head):  # inside a sequence of messages: written step by step
                self.nested.append((path, steps))
            elif index is None:
                prefix = tuple(n for n, _ in head)
                self.scalars.append((prefix, name, _caster(message_type, prefix, name), path))
            else:
                groups.setdefault((tuple(n for n, _ in head), name), []).append((path, index))
        self.sequences = [
            _sequence_write(message_type, prefix, name, slots) for (prefix, name), slots in groups.items()
        ]

    def write(self, message: Any, values: Mapping[str, float]) -> None:
        for prefix, name, cast, path in self.scalars:
            setattr(_resolve(message, prefix), name, cast(values[path]))
        for sequence in self.sequences:
            target = _resolve(message, sequence.prefix)
            items = list(getattr(target, sequence.name))
            if len(items) < sequence.size:
                items += [sequence.cast(0.0)] * (sequence.size - len(items))
            for path, index in sequence.slots:
                items[index] = sequence.cast(values[path])
            setattr(target, sequence.name, sequence.container(items))
        for path, steps in self.nested:
            _write(message, steps, values[path])


_PLANS: dict[tuple[type, tuple[str, ...]], _WritePlan] = {}


def _resolve(message: Any, prefix: tuple[str, ...]) -> Any:
    for name in prefix:
        message = getattr(message, name)
    return message


def _caster(message_type: type, prefix: tuple[str, ...], name: str) -> Callable[[float], Any]:
    return _cast_to(_base_type(field_type(_resolve(message_type(), prefix), name)))


def _sequence_write(
    message_type: type, prefix: tuple[str, ...], name: str, slots: list[tuple[str, int]]
) -> _SequenceWrite:
    kind = field_type(_resolve(message_type(), prefix), name)
    code = _ARRAY_CODES.get(_base_type(kind)) if kind.startswith("sequence<") else None
    container = partial(array.array, code) if code else list
    size = 1 + max(index for _, index in slots)
    return _SequenceWrite(prefix, name, _cast_to(_base_type(kind)), container, size, tuple(slots))


def _write(message: Any, steps: tuple[Step, ...], value: float) -> None:
    name, index = steps[0]
    kind = field_type(message, name)
    if len(steps) == 1:
        base = _base_type(kind)
        if index is None:
            setattr(message, name, _cast(base, value))
            return
        items = list(getattr(message, name))
        if index >= len(items):
            items += [_cast(base, 0.0)] * (index + 1 - len(items))
        items[index] = _cast(base, value)
        setattr(message, name, items)
        return
    if index is None:
        _write(getattr(message, name), steps[1:], value)
        return
    items = list(getattr(message, name))
    while len(items) <= index:
        items.append(_element_class(message, name)())
    setattr(message, name, items)
    _write(getattr(message, name)[index], steps[1:], value)
