"""`$(...)` substitutions: parsed when a file is read, evaluated when it is resolved.

Supported: `$(var NAME)`, `$(env NAME [DEFAULT])`, `$(find-pkg-share PKG)`, `$(dirname)`; arguments may nest
(`$(var $(env WHICH))`) and may be single-quoted to hold spaces. `$(eval ...)` is refused: evaluating Python is
out of scope without ROS.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from robo_rl.launch.errors import LaunchError

# Substitution name -> (min args, max args).
ARITY: dict[str, tuple[int, int]] = {"var": (1, 1), "env": (1, 2), "find-pkg-share": (1, 1), "dirname": (0, 0)}


@dataclass(frozen=True)
class Substitution:
    """One `$(name args...)`; each argument is itself a `Text`."""

    name: str
    args: tuple[Text, ...]


Text = tuple["str | Substitution", ...]
"""A string with substitutions: literal pieces and `Substitution`s, concatenated when evaluated."""


@dataclass(frozen=True)
class SubstitutionContext:
    """What substitutions read.

    Attributes:
        configurations: launch configurations (`arg`/`let` values) by name, for `$(var)`.
        environ: environment variables, for `$(env)`; passed in because library code never reads os.environ.
        package_shares: package name -> share folder, for `$(find-pkg-share)`.
        current_dir: folder of the launch file being resolved, for `$(dirname)`.
    """

    configurations: Mapping[str, str]
    environ: Mapping[str, str]
    package_shares: Mapping[str, Path]
    current_dir: Path


class _Scanner:
    def __init__(self, source: str) -> None:
        self.source = source
        self.pos = 0

    def at_end(self) -> bool:
        return self.pos >= len(self.source)

    def peek(self) -> str:
        return self.source[self.pos]

    def opens_substitution(self) -> bool:
        return self.source.startswith("$(", self.pos)


def parse_text(source: str) -> Text:
    """Split `source` into literal pieces and substitutions; raises LaunchError on a malformed `$(...)`."""
    scanner = _Scanner(source)
    return _text(scanner, terminators="")


def _text(scanner: _Scanner, terminators: str) -> Text:
    parts: list[str | Substitution] = []
    literal: list[str] = []
    while not scanner.at_end():
        if scanner.opens_substitution():
            if literal:
                parts.append("".join(literal))
                literal = []
            scanner.pos += 2
            parts.append(_substitution(scanner))
        elif scanner.peek() in terminators:
            break
        else:
            literal.append(scanner.peek())
            scanner.pos += 1
    if literal:
        parts.append("".join(literal))
    return tuple(parts)


def _substitution(scanner: _Scanner) -> Substitution:
    name = _name(scanner)
    if name == "eval":
        raise LaunchError("$(eval ...) is not supported without ROS")
    if name not in ARITY:
        raise LaunchError(f"unknown substitution $({name}) (known: {', '.join(sorted(ARITY))})")
    args = _arguments(scanner, name)
    low, high = ARITY[name]
    if not low <= len(args) <= high:
        raise LaunchError(f"$({name}) takes {low}..{high} arguments, got {len(args)}")
    return Substitution(name, args)


def _name(scanner: _Scanner) -> str:
    start = scanner.pos
    while not scanner.at_end() and not scanner.peek().isspace() and scanner.peek() != ")":
        scanner.pos += 1
    return scanner.source[start : scanner.pos]


def _arguments(scanner: _Scanner, name: str) -> tuple[Text, ...]:
    args: list[Text] = []
    while True:
        while not scanner.at_end() and scanner.peek().isspace():
            scanner.pos += 1
        if scanner.at_end():
            raise LaunchError(f"unclosed $({name} ...: missing ')'")
        if scanner.peek() == ")":
            scanner.pos += 1
            return tuple(args)
        args.append(_argument(scanner, name))


def _argument(scanner: _Scanner, name: str) -> Text:
    if scanner.peek() != "'":
        return _text(scanner, terminators=" \t\r\n)")
    scanner.pos += 1
    quoted = _text(scanner, terminators="'")
    if scanner.at_end():
        raise LaunchError(f"unclosed quote in $({name} ...)")
    scanner.pos += 1
    return quoted


def evaluate(text: Text, context: SubstitutionContext) -> str:
    """The string `text` stands for in `context`; raises LaunchError for an undefined variable or package."""
    return "".join(part if isinstance(part, str) else _evaluate_one(part, context) for part in text)


def _evaluate_one(sub: Substitution, context: SubstitutionContext) -> str:
    args = [evaluate(arg, context) for arg in sub.args]
    if sub.name == "var":
        return _var(args[0], context)
    if sub.name == "env":
        return _env(args, context)
    if sub.name == "find-pkg-share":
        return _package_share(args[0], context)
    return str(context.current_dir)


def _var(name: str, context: SubstitutionContext) -> str:
    if name not in context.configurations:
        known = ", ".join(sorted(context.configurations)) or "none"
        raise LaunchError(f"$(var {name}): undefined launch configuration (defined: {known})")
    return context.configurations[name]


def _env(args: list[str], context: SubstitutionContext) -> str:
    if args[0] in context.environ:
        return context.environ[args[0]]
    if len(args) == 2:
        return args[1]
    raise LaunchError(f"$(env {args[0]}): environment variable is not set and no default is given")


def _package_share(package: str, context: SubstitutionContext) -> str:
    if package not in context.package_shares:
        known = ", ".join(sorted(context.package_shares)) or "none"
        raise LaunchError(f"$(find-pkg-share {package}): package not found without ROS (known: {known})")
    return str(context.package_shares[package])
