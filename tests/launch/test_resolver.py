"""Resolution semantics on small files written per test: args, let, include, group scoping, conditions,
substitutions, parameter files and namespaces."""

from __future__ import annotations

from pathlib import Path

import pytest

from robo_rl.launch import LaunchError, Plan, ResolveSettings, resolve_launch_file
from robo_rl.launch.resolver import join_namespace


def write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def resolve(path: Path, environ: dict[str, str] | None = None, **arguments: str) -> Plan:
    settings = ResolveSettings(environ=environ or {}, package_shares={"robo_rl": path.parent})
    return resolve_launch_file(path, arguments, settings)


def names(plan: Plan) -> list[str | None]:
    return [process.name for process in plan.processes]


def test_args_defaults_overrides_and_let(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "a.launch.yaml",
        """
launch:
- arg: {name: robot, default: cf1}
- let: {name: node, value: "pilot_$(var robot)"}
- node: {pkg: robo_rl, exec: policy_node, name: $(var node)}
""",
    )
    assert names(resolve(path)) == ["pilot_cf1"]
    plan = resolve(path, robot="cf7")
    assert names(plan) == ["pilot_cf7"]
    assert plan.configurations == {"robot": "cf7", "node": "pilot_cf7"}


def test_missing_required_and_unknown_arguments_are_errors(tmp_path: Path) -> None:
    path = write(tmp_path, "a.launch.yaml", "launch:\n- arg: {name: policy}\n")
    with pytest.raises(LaunchError, match=r"a.launch.yaml:2: missing required argument 'policy'"):
        resolve(path)
    with pytest.raises(LaunchError, match=r"unknown launch argument 'polcy' \(declared: policy\)"):
        resolve(path, polcy="x")
    assert resolve(path, policy="p.onnx").configurations == {"policy": "p.onnx"}


def test_choices_are_enforced(tmp_path: Path) -> None:
    # ROS's spelling (ros2/launch 3.7.1, DeclareLaunchArgument.parse): `choice: [{value: a}, ...]`
    path = write(tmp_path, "a.launch.yaml", "launch:\n- arg: {name: p, default: a, choice: [{value: a}, {value: b}]}\n")
    assert resolve(path, p="b").configurations == {"p": "b"}
    with pytest.raises(LaunchError, match="'c' is not one of a, b"):
        resolve(path, p="c")


@pytest.mark.parametrize(
    ("value", "started"),
    [("true", ["on", "off_unless"]), ("True", ["on", "off_unless"]), ("1", ["on", "off_unless"]), ("0", ["unless"])],
)
def test_if_and_unless_accept_ros_booleans(tmp_path: Path, value: str, started: list[str]) -> None:
    path = write(
        tmp_path,
        "a.launch.yaml",
        """
launch:
- arg: {name: flag, default: "false"}
- node: {pkg: robo_rl, exec: x, name: "on", if: $(var flag)}
- node: {pkg: robo_rl, exec: x, name: unless, unless: $(var flag)}
- group:
    if: $(var flag)
    children:
    - node: {pkg: robo_rl, exec: x, name: off_unless}
""",
    )
    assert names(resolve(path, flag=value)) == started


def test_a_condition_that_is_not_boolean_is_an_error(tmp_path: Path) -> None:
    path = write(tmp_path, "a.launch.yaml", "launch:\n- node: {pkg: robo_rl, exec: x, if: 'yes'}\n")
    with pytest.raises(LaunchError, match=r"a.launch.yaml:2: if: expected true, false, 1 or 0, got 'yes'"):
        resolve(path)


def test_group_scopes_configurations_and_namespace_unless_scoped_false(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "a.launch.yaml",
        """
launch:
- let: {name: who, value: outer}
- group:
    children:
    - push-ros-namespace: {namespace: inner}
    - let: {name: who, value: inner}
    - node: {pkg: robo_rl, exec: x, name: $(var who)}
- node: {pkg: robo_rl, exec: x, name: $(var who)}
- group:
    scoped: false
    children:
    - push_ros_namespace: {namespace: leaked}
    - let: {name: who, value: leaked}
- node: {pkg: robo_rl, exec: x, name: $(var who), namespace: sub}
- node: {pkg: robo_rl, exec: x, name: absolute, namespace: /abs}
""",
    )
    plan = resolve(path)
    assert [(p.name, p.namespace) for p in plan.processes] == [
        ("inner", "/inner"),
        ("outer", "/"),
        ("leaked", "/leaked/sub"),
        ("absolute", "/abs"),
    ]


def test_include_passes_args_sees_outer_configurations_and_does_not_leak(tmp_path: Path) -> None:
    write(
        tmp_path,
        "sub/child.launch.yaml",
        """
launch:
- arg: {name: robot}
- let: {name: secret, value: child}
- push-ros-namespace: {namespace: $(var robot)}
- node: {pkg: robo_rl, exec: x, name: "$(var robot)_$(var outer)", param: [{from: p.yaml}]}
""",
    )
    write(tmp_path, "sub/p.yaml", "/**:\n  ros__parameters: {here: $(dirname)}\n")
    path = write(
        tmp_path,
        "a.launch.yaml",
        """
launch:
- let: {name: outer, value: seen}
- include:
    file: $(dirname)/sub/child.launch.yaml
    arg: [{name: robot, value: cf2}]
- include: {file: sub/child.launch.yaml, arg: [{name: robot, value: cf3}]}
- node: {pkg: robo_rl, exec: x, name: last}
""",
    )
    plan = resolve(path)
    assert [(p.name, p.namespace) for p in plan.processes] == [
        ("cf2_seen", "/cf2"),
        ("cf3_seen", "/cf3"),
        ("last", "/"),
    ]
    assert plan.processes[0].params_files == (tmp_path / "sub" / "p.yaml",)
    assert plan.processes[0].params == {"here": "$(dirname)"}  # parameter files are not substituted, as in ROS
    assert plan.configurations == {"outer": "seen"}


def test_include_cycles_and_non_yaml_includes_are_errors(tmp_path: Path) -> None:
    path = write(tmp_path, "loop.launch.yaml", "launch:\n- include: {file: loop.launch.yaml}\n")
    with pytest.raises(LaunchError, match="includes nested deeper than 32"):
        resolve(path)
    path = write(tmp_path, "py.launch.yaml", "launch:\n- include: {file: x.launch.py}\n")
    with pytest.raises(LaunchError, match=r"py.launch.yaml:2: include: only YAML launch files"):
        resolve(path)
    path = write(tmp_path, "gone.launch.yaml", "launch:\n- include: {file: gone/x.launch.yaml}\n")
    with pytest.raises(LaunchError, match="cannot read launch file"):
        resolve(path)


def test_substitutions_env_nested_and_quoted(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "a.launch.yaml",
        """
launch:
- let: {name: which, value: $(env WHICH)}
- let: {name: cf, value: "1"}
- node:
    pkg: robo_rl
    exec: x
    name: $(var $(var which))
    args: "$(env MISSING 'a default') --share $(find-pkg-share robo_rl)"
""",
    )
    plan = resolve(path, environ={"WHICH": "cf"})
    assert plan.processes[0].name == "1"
    assert plan.processes[0].args == ("a", "default", "--share", str(tmp_path))
    with pytest.raises(LaunchError, match=r"a.launch.yaml:3: \$\(env WHICH\): environment variable is not set"):
        resolve(path)


@pytest.mark.parametrize(
    ("expression", "message"),
    [
        ("$(var nope)", r"\$\(var nope\): undefined launch configuration"),
        ("$(find-pkg-share other)", r"package not found without ROS \(known: robo_rl\)"),
    ],
)
def test_unresolvable_substitutions_are_errors(tmp_path: Path, expression: str, message: str) -> None:
    path = write(tmp_path, "a.launch.yaml", f"launch:\n- let: {{name: x, value: '{expression}'}}\n")
    with pytest.raises(LaunchError, match=message):
        resolve(path)


def test_param_values_are_typed_like_ros_and_file_sections_match_as_in_rcl(tmp_path: Path) -> None:
    write(
        tmp_path,
        "p.yaml",
        """
/**:
  ros__parameters: {common: 1, gains: {kp: 2.5, kd: [1, 2]}}
/ns/n:
  ros__parameters: {common: 2}
other:
  ros__parameters: {common: 3}
n:
  ros__parameters: {common: 4}
""",
    )
    path = write(
        tmp_path,
        "a.launch.yaml",
        """
launch:
- arg: {name: rate, default: "100"}
- node:
    pkg: robo_rl
    exec: x
    name: n
    namespace: ns
    param:
    - {name: early, value: 0}
    - from: p.yaml
    - {name: rate, value: $(var rate)}
    - {name: flag, value: "true"}
    - {name: text, value: "hello $(var rate)"}
    - {name: list, value: [a, 2, $(var rate)]}
    - {name: quoted_float, value: "1.0"}
""",
    )
    (process,) = resolve(path).processes
    assert process.params == {
        "early": 0,
        # rcl's order: /ns/n (where `early` put it) comes before the file's /**, so /** wins
        "common": 1,
        "gains.kp": 2.5,
        "gains.kd": (1, 2),
        "rate": 100,
        "flag": True,
        "text": "hello 100",
        "list": ("a", 2, 100),
        "quoted_float": 1.0,
    }
    assert process.param_sources[:3] == (
        ("/ns/n", {"early": 0}),
        tmp_path / "p.yaml",
        ("/ns/n", {"rate": 100, "flag": True, "text": "hello 100", "list": ("a", 2, 100), "quoted_float": 1.0}),
    )


@pytest.mark.parametrize(
    ("outer", "inner", "expected"),
    [("/", "", "/"), ("/", "a", "/a"), ("/a", "b/", "/a/b"), ("/a", "/c", "/c"), ("/a/", "/", "/")],
)
def test_join_namespace(outer: str, inner: str, expected: str) -> None:
    assert join_namespace(outer, inner) == expected


def test_dirname_is_absolute_for_a_relative_launch_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write(tmp_path, "sub/a.launch.yaml", "launch:\n- node: {pkg: robo_rl, exec: x, args: $(dirname)}\n")
    monkeypatch.chdir(tmp_path)
    plan = resolve_launch_file(Path("sub/a.launch.yaml"), {}, ResolveSettings())
    assert plan.processes[0].args == (str(tmp_path / "sub"),)


@pytest.mark.parametrize(
    ("where", "order", "expected"),
    [
        # launch_ros 0.28.0 keys inline params by the node's full name (here /cf1/n) and passes them after the
        # file declared before them: they win over the file's /**/n and /** sections
        ("namespace: cf1", "file_first", "inline"),
        ("namespace: cf1", "inline_first", "file_node"),
        # without a namespace launch_ros keys them /**, which the file placed first: its /**/n section wins
        ("name: n", "file_first", "file_node"),
    ],
)
def test_inline_parameters_against_a_file_follow_launch_ros(
    tmp_path: Path, where: str, order: str, expected: str
) -> None:
    write(tmp_path, "p.yaml", "/**:\n  ros__parameters: {x: file_star}\n/**/n:\n  ros__parameters: {x: file_node}\n")
    params = ["{from: p.yaml}", "{name: x, value: inline}"]
    if order == "inline_first":
        params.reverse()
    node = f"{{pkg: robo_rl, exec: e, name: n, {where}, param: [{', '.join(params)}]}}".replace(
        "name: n, name: n", "name: n"
    )
    (process,) = resolve(write(tmp_path, "a.launch.yaml", f"launch:\n- node: {node}\n")).processes
    assert process.params == {"x": expected}


def test_ros_args_and_a_node_without_package(tmp_path: Path) -> None:
    path = write(tmp_path, "a.launch.yaml", "launch:\n- node: {exec: talker, args: a, ros_args: '--log-level debug'}\n")
    (process,) = resolve(path).processes
    assert (process.pkg, process.executable, process.args, process.ros_args) == (
        "",
        "talker",
        ("a",),
        ("--log-level", "debug"),
    )
