"""Resolve parsed launch actions into a `Plan`: the processes to start, with every substitution evaluated.

Scoping follows ROS 2: a `group` (scoped by default) and an `include` see the configurations around them but
their `arg`/`let`/`push-ros-namespace` do not leak out. Relative include and parameter-file paths are relative
to the file that names them. Parameters follow launch_ros 0.28.0 (launch_ros/actions/node.py): each inline
`param` becomes a parameter-file section keyed by the node's full name (`/**` while its name or namespace is
unset), passed in declaration order among the `from:` files, and rcl combines them (`param_file.node_parameters`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from robo_rl.launch.errors import LaunchError, Location
from robo_rl.launch.param_file import (
    WILDCARD_KEY,
    ParamValue,
    Section,
    infer_type,
    load_param_file,
    node_parameters,
)
from robo_rl.launch.schema import (
    Action,
    Arg,
    Condition,
    Executable,
    Group,
    Include,
    Let,
    Node,
    Param,
    ParamFile,
    ParamList,
    ParamLiteral,
    PushNamespace,
    declared_arguments,
    parse_launch_file,
)
from robo_rl.launch.substitution import SubstitutionContext, Text, evaluate


@dataclass(frozen=True)
class ResolveSettings:
    """What resolution may read from outside the files.

    Attributes:
        environ: environment variables for `$(env)` (the CLI passes os.environ).
        package_shares: package name -> share folder for `$(find-pkg-share)`.
        max_include_depth: includes nested deeper than this are an error (catches include cycles).
    """

    environ: Mapping[str, str] = field(default_factory=dict)
    package_shares: Mapping[str, Path] = field(default_factory=dict)
    max_include_depth: int = 32

    def __post_init__(self) -> None:
        if self.max_include_depth < 1:
            raise ValueError(f"max_include_depth: must be ≥ 1, got {self.max_include_depth}")


@dataclass(frozen=True)
class Process:
    """One process of the plan.

    Attributes:
        kind: "node" (a ROS node) or "executable" (a plain command line).
        pkg: the node's package ("" for an executable).
        executable: the node's executable, or the command's program.
        name: the node name (None: the executable's own default).
        namespace: the absolute ROS namespace, "/" at the root.
        params: the parameters the node gets, as rcl combines `param_sources`.
        params_files: the `from:` parameter files in declaration order.
        param_sources: in declaration order, a `from:` file's path or a section of inline parameters (key, {name:
            value}; consecutive inline parameters share one): what launch_ros passes as --params-file.
        remaps: (from, to) topic remappings.
        args: extra command-line arguments (before the ROS arguments).
        ros_args: the node's own `ros_args` (passed as `--ros-args ROS_ARGS`).
        output: "screen", "log" or "both".
        where: the file and line of the action.
    """

    kind: str
    pkg: str
    executable: str
    name: str | None
    namespace: str
    params: dict[str, ParamValue]
    params_files: tuple[Path, ...]
    param_sources: tuple[Path | Section, ...]
    remaps: tuple[tuple[str, str], ...]
    args: tuple[str, ...]
    ros_args: tuple[str, ...]
    output: str
    where: Location


@dataclass(frozen=True)
class Plan:
    """A resolved launch: the processes in launch order and the final top-level configurations."""

    processes: tuple[Process, ...]
    configurations: dict[str, str]


@dataclass
class _Scope:
    configurations: dict[str, str]
    namespace: str
    file: Path
    depth: int
    pushed: bool = False  # a push-ros-namespace applies (launch_ros then knows the node's namespace)

    def child(self) -> _Scope:
        return _Scope(dict(self.configurations), self.namespace, self.file, self.depth, self.pushed)


def resolve_launch_file(path: Path, arguments: Mapping[str, str], settings: ResolveSettings) -> Plan:
    """Resolve the launch file `path` with command-line `arguments` (name -> value) into a Plan.

    Raises LaunchError for an argument the file does not declare, a missing required argument, or any
    malformed or unresolvable part of the file or its includes.
    """
    actions = parse_launch_file(path)
    declared = declared_arguments(actions)
    for name in arguments:
        if name not in declared:
            known = ", ".join(sorted(declared)) or "none"
            raise LaunchError(f"unknown launch argument '{name}' (declared: {known})", Location(str(path)))
    scope = _Scope(dict(arguments), "/", path, depth=0)
    processes: list[Process] = []
    _Resolver(settings, processes).run(actions, scope)
    return Plan(tuple(processes), scope.configurations)


class _Resolver:
    def __init__(self, settings: ResolveSettings, processes: list[Process]) -> None:
        self.settings = settings
        self.processes = processes

    def context(self, scope: _Scope) -> SubstitutionContext:
        return SubstitutionContext(
            scope.configurations, self.settings.environ, self.settings.package_shares, scope.file.absolute().parent
        )

    def text(self, text: Text, scope: _Scope, where: Location) -> str:
        try:
            return evaluate(text, self.context(scope))
        except LaunchError as err:
            raise LaunchError(str(err), where) from None

    def run(self, actions: tuple[Action, ...], scope: _Scope) -> None:
        for action in actions:
            if self.enabled(action.condition, scope, action.where):
                self.apply(action, scope)

    def enabled(self, condition: Condition | None, scope: _Scope, where: Location) -> bool:
        if condition is None:
            return True
        value = self.text(condition.expression, scope, where).strip().lower()
        if value not in ("true", "false", "1", "0"):
            key = "unless" if condition.negate else "if"
            raise LaunchError(f"{key}: expected true, false, 1 or 0, got '{value}'", where)
        return (value in ("true", "1")) != condition.negate

    def apply(self, action: Action, scope: _Scope) -> None:
        if isinstance(action, Arg):
            self.declare(action, scope)
        elif isinstance(action, Let):
            scope.configurations[action.name] = self.text(action.value, scope, action.where)
        elif isinstance(action, PushNamespace):
            scope.namespace = join_namespace(scope.namespace, self.text(action.namespace, scope, action.where))
            scope.pushed = True
        elif isinstance(action, Group):
            self.group(action, scope)
        elif isinstance(action, Include):
            self.include(action, scope)
        elif isinstance(action, Node):
            self.processes.append(self.node(action, scope))
        else:
            self.processes.append(self.executable(action, scope))

    def declare(self, arg: Arg, scope: _Scope) -> None:
        if arg.name not in scope.configurations:
            if arg.default is None:
                raise LaunchError(f"missing required argument '{arg.name}' (pass {arg.name}:=VALUE)", arg.where)
            scope.configurations[arg.name] = self.text(arg.default, scope, arg.where)
        value = scope.configurations[arg.name]
        if arg.choices is not None and value not in arg.choices:
            raise LaunchError(f"argument '{arg.name}': '{value}' is not one of {', '.join(arg.choices)}", arg.where)

    def group(self, group: Group, scope: _Scope) -> None:
        inner = scope.child() if group.scoped else scope
        self.run(group.children, inner)

    def include(self, include: Include, scope: _Scope) -> None:
        if scope.depth >= self.settings.max_include_depth:
            raise LaunchError(
                f"includes nested deeper than {self.settings.max_include_depth} (a cycle?)", include.where
            )
        path = self.path(include.file, scope, include.where)
        if not path.name.endswith((".launch.yaml", ".launch.yml")):
            raise LaunchError(f"include: only YAML launch files (*.launch.yaml) run without ROS: {path}", include.where)
        inner = scope.child()
        inner.file, inner.depth = path, scope.depth + 1
        for name, value in include.args:
            inner.configurations[name] = self.text(value, scope, include.where)
        self.run(parse_launch_file(path), inner)

    def path(self, text: Text, scope: _Scope, where: Location) -> Path:
        value = self.text(text, scope, where)
        if not value:
            raise LaunchError("empty file path", where)
        path = Path(value)
        return path if path.is_absolute() else scope.file.parent / path

    def node(self, node: Node, scope: _Scope) -> Process:
        name = self.text(node.name, scope, node.where) if node.name is not None else None
        own = self.text(node.namespace, scope, node.where) if node.namespace is not None else ""
        namespace = join_namespace(scope.namespace, own)
        # launch_ros keys inline parameters by the node's full name once it knows its name and namespace.
        known = name is not None and (node.namespace is not None or scope.pushed)
        inline_key = f"{namespace.rstrip('/')}/{name}" if known else WILDCARD_KEY
        params, files, sources = self.params(node.params, name, namespace, inline_key, scope)
        remaps = tuple(
            (self.text(src, scope, node.where), self.text(dst, scope, node.where)) for src, dst in node.remaps
        )
        args = tuple(self.text(node.args, scope, node.where).split()) if node.args is not None else ()
        ros_args = tuple(self.text(node.ros_args, scope, node.where).split()) if node.ros_args is not None else ()
        return Process(
            kind="node",
            pkg=self.text(node.pkg, scope, node.where) if node.pkg is not None else "",
            executable=self.text(node.executable, scope, node.where),
            name=name,
            namespace=namespace,
            params=params,
            params_files=files,
            param_sources=sources,
            remaps=remaps,
            args=args,
            ros_args=ros_args,
            output=node.output,
            where=node.where,
        )

    def params(
        self, entries: tuple[Param | ParamFile, ...], name: str | None, namespace: str, inline_key: str, scope: _Scope
    ) -> tuple[dict[str, ParamValue], tuple[Path, ...], tuple[Path | Section, ...]]:
        files: list[Path] = []
        sources: list[Path | Section] = []
        sections: list[Section] = []
        for entry in entries:
            if isinstance(entry, ParamFile):
                path = self.path(entry.path, scope, entry.where)
                files.append(path)
                sources.append(path)
                sections.extend(load_param_file(path))
                continue
            value = self.param_value(entry.value, scope, entry.where)
            if not sources or isinstance(sources[-1], Path):
                sources.append((inline_key, {}))
            inline = sources[-1]
            assert not isinstance(inline, Path)
            inline[1][entry.name] = value
            sections.append((inline_key, {entry.name: value}))
        return node_parameters(sections, name, namespace), tuple(files), tuple(sources)

    def param_value(self, value: ParamLiteral, scope: _Scope, where: Location) -> ParamValue:
        if isinstance(value, ParamList):
            return tuple(self.scalar_value(item, scope, where) for item in value.items)
        return self.scalar_value(value, scope, where)

    def scalar_value(self, value: Text | bool | float, scope: _Scope, where: Location) -> str | bool | int | float:
        return infer_type(self.text(value, scope, where)) if isinstance(value, tuple) else value

    def executable(self, action: Executable, scope: _Scope) -> Process:
        words = self.text(action.cmd, scope, action.where).split()
        if not words:
            raise LaunchError("executable.cmd: empty command", action.where)
        name = self.text(action.name, scope, action.where) if action.name is not None else None
        return Process(
            kind="executable",
            pkg="",
            executable=words[0],
            name=name,
            namespace=scope.namespace,
            params={},
            params_files=(),
            param_sources=(),
            remaps=(),
            args=tuple(words[1:]),
            ros_args=(),
            output=action.output,
            where=action.where,
        )


def join_namespace(outer: str, inner: str) -> str:
    """ROS namespace joining: an absolute `inner` replaces `outer`, a relative one is appended."""
    inner = inner.strip()
    if not inner:
        return outer
    if inner.startswith("/"):
        return "/" + inner.strip("/") if inner.strip("/") else "/"
    return f"{outer.rstrip('/')}/{inner.strip('/')}" if inner.strip("/") else outer
