"""Strict mapping of YAML files, plain dicts and CLI overrides onto nested frozen dataclass configs.

Field types come from the dataclass annotations (`typing.get_type_hints`, so `from __future__ import
annotations` works). Supported: `bool`, `int`, `float`, `str`, `Literal[...]`, `X | None`, `tuple[X, ...]`,
fixed tuples `tuple[X, Y]`, named values `tuple[tuple[str, X], ...]` (given and written as a mapping name → X) and
nested dataclasses (given as mappings; missing keys keep their defaults). A field
annotated `Any` holds a config whose class is decided elsewhere (a task's own config, by the task's name): a
dataclass instance, or as read from a file a mapping of changes, or None; whoever knows the class validates it.
A dataclass may define `__config_dict__()` to choose its plain form (`to_dict` calls it).
Unknown keys, wrong types and nulls for non-optional fields raise `ConfigError`, whose message is one line
naming the dotted key path, e.g. `ppo.learning_rate: expected float, got str 'fast'`. A dataclass's own check
(`__post_init__`) may raise a ValueError, reported as `SECTION: message`, or a ConfigError whose message starts with
the failing key relative to the dataclass, reported at that key's dotted path (`actions[0].rate_limit: ...`).
A nested section's missing
keys take the field's default (its `default_factory`'s values, which may differ from the nested class's own
defaults).

Only the standard library and PyYAML are used, so `robo_rl.real` (no torch) can load configs too.
"""

from __future__ import annotations

import dataclasses
import difflib
import hashlib
import json
import os
import re
import types
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar, Literal, Protocol, TypeVar, Union, get_args, get_origin, get_type_hints

import yaml

T = TypeVar("T")

_TOP_LEVEL = "(top level)"

# PyYAML implements YAML 1.1, whose floats need a dot and a signed exponent: `1e-3`, `3e4` and `1.0e5` load
# as *strings*, while YAML 1.2 (and every reader) sees numbers. Numeric fields accept exactly that shape;
# any other string ('fast', or a deliberately quoted '0.5') is still an error.
_YAML11_UNPARSED_FLOAT = re.compile(r"[-+]?(\d+\.?\d*|\.\d+)[eE][-+]?\d+")


class ConfigInstance(Protocol):
    """An instance of a config dataclass, of a class this module does not know."""

    __dataclass_fields__: ClassVar[dict[str, dataclasses.Field[Any]]]


OpenConfig = ConfigInstance | Mapping[str, Any] | None
"""A config whose class is decided elsewhere: an instance of it, a mapping of the changes to its defaults (as read
from a file), or None (its defaults)."""


class ConfigError(ValueError):
    """A config key or value is wrong. The message is one line that starts with the dotted key path."""


def from_dict(cls: type[T], data: Mapping[str, Any], path: str = "") -> T:
    """Build the dataclass `cls` from `data`, recursing into nested dataclass fields.

    `path` is the dotted key path of `data` inside a larger config, used in error messages.
    """
    if not (dataclasses.is_dataclass(cls) and isinstance(cls, type)):
        raise TypeError(f"from_dict needs a dataclass type, got {cls!r}")
    if not isinstance(data, Mapping):
        raise _mismatch("a mapping", data, path or _TOP_LEVEL)
    hints = get_type_hints(cls)
    fields = {f.name: f for f in dataclasses.fields(cls) if f.init}
    kwargs = {}
    for key, value in data.items():
        if key not in fields:
            raise ConfigError(_unknown_key_message(_join(path, _key_text(key)), str(key), sorted(fields)))
        kwargs[key] = _convert(hints[key], _over_default(fields[key], value), _join(path, key))
    for name, f in fields.items():
        if name not in kwargs and f.default is f.default_factory is dataclasses.MISSING:
            raise ConfigError(f"{_join(path, name)}: missing required key")
    try:
        return cls(**kwargs)
    except ConfigError as err:  # a __post_init__ check naming its key: put the section's path in front
        raise ConfigError(_join(path, _one_line(str(err)))) from err
    except ValueError as err:  # a __post_init__ check; name where it failed
        raise ConfigError(f"{path or _TOP_LEVEL}: {_one_line(str(err))}") from err


def _over_default(f: dataclasses.Field[Any], value: Any) -> Any:
    """A partial mapping for a nested-dataclass field laid over the field's default (one level: the nested
    `from_dict` does the same for its own fields), so that `off_policy: {loop: {max_iterations: 5}}` keeps the
    off-policy runner's other loop defaults rather than `LoopConfig`'s. Anything else comes back as it is."""
    if not isinstance(value, Mapping):
        return value
    if f.default_factory is not dataclasses.MISSING:
        default = f.default_factory()
    else:
        default = f.default
    if not (dataclasses.is_dataclass(default) and not isinstance(default, type)):
        return value
    return {**to_dict(default), **value}


def to_dict(cfg: Any) -> dict[str, Any]:
    """The config as plain dicts, lists and scalars, ready for `yaml.safe_dump` or `json.dumps`."""
    if not (dataclasses.is_dataclass(cfg) and not isinstance(cfg, type)):
        raise TypeError(f"to_dict needs a dataclass instance, got {cfg!r}")
    custom = getattr(cfg, "__config_dict__", None)
    if custom is not None:
        return dict(custom())
    return plain_fields(cfg)


def plain_fields(cfg: Any) -> dict[str, Any]:
    """The dataclass instance `cfg`'s init fields as plain data (what `to_dict` gives without a `__config_dict__`)."""
    out = {}
    for f in dataclasses.fields(cfg):
        if f.init:
            value = getattr(cfg, f.name)
            named = _pairs(value) and _named_values(get_type_hints(type(cfg))[f.name])
            out[f.name] = {name: _plain(item) for name, item in value} if named else _plain(value)
    return out


def _pairs(value: Any) -> bool:
    """Whether `value` is a non-empty tuple of (str, value) pairs: what a named-values field holds."""
    return (
        isinstance(value, tuple)
        and len(value) > 0
        and all(isinstance(item, tuple) and len(item) == 2 and isinstance(item[0], str) for item in value)
    )


def differences(values: Mapping[str, Any], defaults: Mapping[str, Any]) -> dict[str, Any]:
    """The keys of plain config data `values` whose values differ from `defaults`, nested mappings only where
    something in them differs: what a file needs to say to turn `defaults` into `values` (with `merge`)."""
    out: dict[str, Any] = {}
    for key, value in values.items():
        default = defaults.get(key)
        if isinstance(value, Mapping) and isinstance(default, Mapping):
            nested = differences(value, default)
            if nested:
                out[key] = nested
        elif value != default:
            out[key] = value
    return out


def deep_update(base: Mapping[str, Any], update: Mapping[str, Any]) -> dict[str, Any]:
    """`base` with the (nested) mapping `update` laid over it: a nested mapping updates only the keys it names."""
    out = dict(base)
    for key, value in update.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), Mapping):
            out[key] = deep_update(out[key], value)
        else:
            out[key] = value
    return out


def read_yaml(path: str | os.PathLike[str]) -> Any:
    """Parse a YAML file; a missing, unreadable or binary file or a syntax error is a one-line ConfigError naming
    the file."""
    try:
        return yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    except OSError as err:
        raise ConfigError(f"{path}: cannot read ({err.strerror})") from err
    except UnicodeDecodeError as err:
        raise ConfigError(f"{path}: not a YAML file (not UTF-8 text: byte {err.start})") from err
    except yaml.YAMLError as err:
        raise ConfigError(f"{path}: {_yaml_problem(err)}") from err
    except RecursionError as err:
        raise ConfigError(f"{path}: not a YAML config (nested too deeply)") from err


def load_yaml(cls: type[T], path: str | os.PathLike[str], allow_empty: bool = True) -> T:
    """Read a YAML file into `cls`. An empty file gives the defaults (with `allow_empty`, else it is a
    ConfigError); errors are prefixed with the file."""
    data = read_yaml(path)
    if data is None and not allow_empty:
        raise ConfigError(f"{path}: empty config file (no keys)")
    try:
        return from_dict(cls, {} if data is None else data)
    except ConfigError as err:
        raise ConfigError(f"{path}: {err}") from None


def dump_yaml(cfg: Any, path: str | os.PathLike[str]) -> None:
    """Write the config as YAML, fields in declaration order; `load_yaml` reads it back equal."""
    Path(path).write_text(yaml.safe_dump(to_dict(cfg), sort_keys=False))


def apply_overrides(cfg: T, overrides: Sequence[str]) -> T:
    """A copy of `cfg` with CLI overrides such as `"ppo.learning_rate=3e-4"` applied.

    Values are parsed as YAML and validated exactly like file input. A mapping value replaces the whole
    section, so its unlisted keys return to their defaults.
    """
    data = to_dict(cfg)
    for override in overrides:
        key, value = _parse_override(override)
        _set_dotted(data, key, value)
    return from_dict(type(cfg), data)


def set_values(cfg: T, values: Mapping[str, Any]) -> T:
    """A copy of `cfg` with typed values set by dotted key, e.g. `{"task.num_envs": 64}` from a CLI option or a
    ROS parameter: no text in between, validated like file input (ConfigError naming the key)."""
    data = to_dict(cfg)
    for key, value in values.items():
        _set_dotted(data, key, value)
    return from_dict(type(cfg), data)


def merge(cfg: T, data: Mapping[str, Any], source: str = "") -> T:
    """A copy of `cfg` with the (possibly partial, nested) mapping `data` laid over it, validated.

    Unlike `apply_overrides`, a nested mapping updates only the keys it names. `source` (a file name)
    prefixes error messages.
    """
    if not isinstance(data, Mapping):
        error = _mismatch("a mapping", data, _TOP_LEVEL)
        raise ConfigError(f"{source}: {error}" if source else str(error))
    merged = deep_update(to_dict(cfg), data)
    try:
        return from_dict(type(cfg), merged)
    except ConfigError as err:
        raise ConfigError(f"{source}: {err}" if source else str(err)) from None


def config_hash(cfg: Any, task_config: Mapping[str, Any] | None = None) -> str:
    """12 hex chars of the sha256 of the config's canonical JSON (sorted keys): a short, stable run id.

    `task_config`: the task's resolved config as plain data (`robo_rl.task_record.TaskRecord.config`), hashed with
    it, so that a changed task default changes the hash of what a run trained on."""
    # Round-trip first so that equal configs hash equal: `lr=1` typed in code and `lr=1.0` from YAML.
    canonical: Any = to_dict(from_dict(type(cfg), to_dict(cfg)))
    if task_config is not None:
        canonical = {"experiment": canonical, "task": task_config}
    text = json.dumps(canonical, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def _convert(tp: Any, value: Any, path: str) -> Any:
    """`value` checked (and converted, e.g. list to tuple) against the annotation `tp`."""
    origin = get_origin(tp)
    if tp is Any or tp == OpenConfig:
        return _open_config(value, path)
    if dataclasses.is_dataclass(tp) and isinstance(tp, type):
        return from_dict(tp, value, path)
    if origin in (Union, types.UnionType):
        return _convert_union(tp, value, path)
    if value is None:
        raise _mismatch(_type_name(tp), value, path)
    if origin is Literal:
        return _convert_literal(tp, value, path)
    if _named_values(tp):
        return _convert_named_values(tp, value, path)
    if origin is tuple:
        return _convert_tuple(tp, value, path)
    if tp in _SCALARS:
        return _SCALARS[tp](value, path)
    raise TypeError(f"{path}: unsupported config field type {tp!r}")


def _open_config(value: Any, path: str) -> Any:
    """A field whose config class is decided elsewhere: an instance as given, a mapping copied, or None."""
    if value is None or (dataclasses.is_dataclass(value) and not isinstance(value, type)):
        return value
    if isinstance(value, Mapping):
        return {str(key): item for key, item in value.items()}
    raise _mismatch("a mapping of config keys", value, path)


def _convert_union(tp: Any, value: Any, path: str) -> Any:
    members = [arg for arg in get_args(tp) if arg is not type(None)]
    if value is None and len(members) < len(get_args(tp)):
        return None
    if len(members) == 1:  # Optional: keep the member's more precise message
        return _convert(members[0], value, path)
    for member in members:
        try:
            return _convert(member, value, path)
        except ConfigError:
            continue
    raise _mismatch(_type_name(tp), value, path)


def _convert_literal(tp: Any, value: Any, path: str) -> Any:
    # Compare types too, so that True does not pass for Literal[1].
    if any(value == allowed and type(value) is type(allowed) for allowed in get_args(tp)):
        return value
    raise _mismatch("one of " + ", ".join(repr(a) for a in get_args(tp)), value, path)


def _convert_tuple(tp: Any, value: Any, path: str) -> tuple[Any, ...]:
    if not isinstance(value, (list, tuple)):
        raise _mismatch("a list", value, path)
    args = get_args(tp)
    if len(args) == 2 and args[1] is Ellipsis:
        args = (args[0],) * len(value)
    elif len(args) != len(value):
        raise ConfigError(f"{path}: expected {len(args)} items, got {len(value)}")
    return tuple(_convert(arg, item, f"{path}[{i}]") for i, (arg, item) in enumerate(zip(args, value, strict=False)))


def _named_values(tp: Any) -> bool:
    """Whether the annotation `tp` is `tuple[tuple[str, X], ...]`: named values, a mapping in files."""
    args = get_args(tp)
    if get_origin(tp) is not tuple or len(args) != 2 or args[1] is not Ellipsis:
        return False
    item = get_args(args[0])
    return get_origin(args[0]) is tuple and len(item) == 2 and item[0] is str


def _convert_named_values(tp: Any, value: Any, path: str) -> tuple[tuple[str, Any], ...]:
    """A mapping name → value as `((name, value), ...)` in the mapping's order, each value checked at `path.name`."""
    if not isinstance(value, Mapping):
        raise _mismatch("a mapping of names to values", value, path)
    element = get_args(get_args(tp)[0])[1]
    items = []
    for name, item in value.items():
        if not isinstance(name, str):
            raise _mismatch("names as keys", name, path)
        items.append((name, _convert(element, item, _join(path, _key_text(name)))))
    return tuple(items)


def _as_number(value: Any) -> int | float | None:
    """The number `value` stands for, or None (bools are not numbers here)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return value
    if isinstance(value, str) and _YAML11_UNPARSED_FLOAT.fullmatch(value.strip()):
        return float(value)
    return None


def _to_float(value: Any, path: str) -> float:
    number = _as_number(value)
    if number is None:
        raise _mismatch("float", value, path)
    return float(number)


def _to_int(value: Any, path: str) -> int:
    number = _as_number(value)
    if isinstance(number, float) and number.is_integer():  # 3.0, 1.0e+6
        number = int(number)
    if not isinstance(number, int):
        raise _mismatch("int", value, path)
    return number


def _exact(tp: type) -> Callable[[Any, str], Any]:
    def check(value: Any, path: str) -> Any:
        if not isinstance(value, tp):
            raise _mismatch(tp.__name__, value, path)
        return value

    return check


_SCALARS: dict[type, Callable[[Any, str], Any]] = {
    bool: _exact(bool),
    int: _to_int,
    float: _to_float,
    str: _exact(str),
}


def _plain(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return to_dict(value)
    if isinstance(value, (tuple, list)):
        return [_plain(item) for item in value]
    if isinstance(value, Mapping):
        return {key: _plain(item) for key, item in value.items()}
    return value


def _parse_override(override: str) -> tuple[str, Any]:
    key, sep, raw = override.partition("=")
    key = key.strip()
    if not sep or not key:
        raise ConfigError(f"{override!r}: malformed override, expected 'dotted.key=value'")
    try:
        return key, yaml.safe_load(raw)
    except yaml.YAMLError as err:
        raise ConfigError(f"{key}: cannot parse override value {raw!r}: {_yaml_problem(err)}") from err


def _set_dotted(data: dict[str, Any], dotted: str, value: Any) -> None:
    *parents, leaf = dotted.split(".")
    node = data
    for depth, key in enumerate(parents):
        child = node.get(key)
        if child is None:  # an unset Optional section, or an unknown key that from_dict will report
            child = node[key] = {}
        elif not isinstance(child, dict):
            prefix = ".".join(parents[: depth + 1])
            raise ConfigError(f"{prefix}: is a {type(child).__name__}, not a section; cannot set {dotted}")
        node = child
    node[leaf] = value


def _unknown_key_message(path: str, key: str, valid: list[str]) -> str:
    close = difflib.get_close_matches(key, valid, n=1)
    hint = f"did you mean {close[0]!r}? " if close else ""
    return f"{path}: unknown key ({hint}valid: {', '.join(valid)})"


def _yaml_problem(err: yaml.YAMLError) -> str:
    mark = getattr(err, "problem_mark", None)
    if mark is None:
        return _one_line(str(err))
    problem = getattr(err, "problem", None) or "invalid YAML"
    return f"line {mark.line + 1}, column {mark.column + 1}: {_one_line(problem)}"


def _mismatch(expected: str, value: Any, path: str) -> ConfigError:
    return ConfigError(f"{path}: expected {expected}, got {_describe(value)}")


def _describe(value: Any) -> str:
    if value is None:
        return "null"
    text = repr(value)  # repr escapes newlines, keeping the message on one line
    return f"{type(value).__name__} {text if len(text) <= 60 else text[:57] + '...'}"


def _type_name(tp: Any) -> str:
    if isinstance(tp, type) and get_origin(tp) is None:
        return tp.__name__
    return str(tp).replace("typing.", "").replace("NoneType", "None")


def _key_text(key: Any) -> str:
    """A key as messages show it: as written when it is a plain name, else quoted (so the message stays one line)."""
    text = str(key)
    return text if re.fullmatch(r"[\w.\[\]-]+", text) else repr(text)


def _join(path: str, key: Any) -> str:
    return f"{path}.{key}" if path else str(key)


def _one_line(text: str) -> str:
    return " ".join(text.split())
