"""The YAML launch schema against ROS 2's own: what `ros2 launch` accepts and refuses, key by key.

CI cannot fetch the launch sources, so the keys are written out here as read from ros2/launch at tag 3.7.1
(launch/action.py `Action.parse` for if/unless; launch/actions/declare_launch_argument.py, set_launch_configuration.py,
include_launch_description.py, group_action.py, execute_process.py `parse`; launch_yaml/launch_yaml/entity.py, which
raises "Unexpected key(s) found in ..." for any key a parse method did not read) and ros2/launch_ros at tag 0.28.0
(launch_ros/actions/node.py `Node.parse` and `parse_nested_parameters`, push_ros_namespace.py). Every key ROS
accepts must either work here or be refused as "not in robo-rl launch"; every other key is "unknown", as in ROS.
Last checked against those sources on the files in launch/ with the real `ros2 launch` (docs/ROBOT.md).
"""

from __future__ import annotations

import pytest

from robo_rl.launch import LaunchError, parse_launch_text
from robo_rl.launch.schema import PARSERS, ROS_ACTIONS, ROS_KEYS, SUPPORTED_KEYS, Arg, Node

CONDITIONS = {"if", "unless"}
PROCESS = {"cwd", "name", "on_exit", "launch-prefix", "output", "respawn", "respawn_max_retries", "respawn_delay"}
PROCESS |= {"sigkill_timeout", "sigterm_timeout", "shell", "emulate_tty", "env"}
UPSTREAM = {  # as read from ros2/launch 3.7.1 and ros2/launch_ros 0.28.0 (see the module docstring)
    "arg": CONDITIONS | {"name", "default", "description", "choice"},
    "arg.choice": {"value"},
    "let": CONDITIONS | {"name", "value"},
    "include": CONDITIONS | {"file", "arg"},
    "include.arg": {"name", "value"},
    "group": CONDITIONS | {"scoped", "forwarding", "keep", "children"},
    "push-ros-namespace": CONDITIONS | {"namespace"},
    "node": CONDITIONS
    | PROCESS
    | {"args", "ros_args", "node-name", "exec_name", "pkg", "exec", "namespace"}
    | {"remap", "param"},
    "node.param": {"name", "value", "type", "param", "from", "allow_substs"},
    "node.remap": {"from", "to"},
    "executable": CONDITIONS | PROCESS | {"cmd"},
}
# A minimal valid body per entity, and a valid value per key this interpreter implements.
MINIMAL = {
    "arg": "{name: a}",
    "let": "{name: a, value: b}",
    "include": "{file: x.launch.yaml}",
    "group": "{children: []}",
    "push-ros-namespace": "{namespace: a}",
    "node": "{exec: x}",
    "executable": "{cmd: x}",
}
VALUES = {
    "if": "'true'",
    "unless": "'false'",
    "default": "a",
    "description": "d",
    "choice": "[{value: a}]",
    "arg": "[{name: a, value: b}]",
    "scoped": "'false'",
    "pkg": "robo_rl",
    "name": "n",
    "namespace": "ns",
    "args": "a b",
    "ros_args": "'-r a:=b'",
    "param": "[{name: p, value: 1}]",
    "remap": "[{from: a, to: b}]",
    "output": "log",
    "value": "v",
    "file": "x.launch.yaml",
    "children": "[]",
    "exec": "x",
    "cmd": "x",
}


IN_BODY = {  # the keys of each minimal body
    "arg": {"name"},
    "let": {"name", "value"},
    "include": {"file"},
    "group": {"children"},
    "push-ros-namespace": {"namespace"},
    "node": {"exec"},
    "executable": {"cmd"},
    "arg.choice": {"value"},
    "include.arg": {"name", "value"},
    "node.param": set(),
    "node.remap": {"from", "to"},
}
PARAM_ENTRIES = {"name": "name: p, value: 1", "value": "name: p, value: 1", "from": "from: f.yaml"}


def entity_text(kind: str, extra: str) -> str:
    """A launch file holding one `kind` entity (or the entry `kind` = ACTION.ENTRY), `extra` keys added."""
    action = kind.partition(".")[0]
    bodies = {
        **{name: body[:-1] + ", EXTRA}" for name, body in MINIMAL.items()},
        "arg.choice": "{name: a, choice: [{value: a, EXTRA}]}",
        "include.arg": "{file: x.launch.yaml, arg: [{name: a, value: b, EXTRA}]}",
        "node.param": "{exec: x, param: [{EXTRA}]}",
        "node.remap": "{exec: x, remap: [{from: a, to: b, EXTRA}]}",
    }
    body = bodies[kind].replace(", EXTRA", f", {extra}" if extra else "").replace("{EXTRA}", f"{{{extra}}}")
    return f"launch:\n- {action}: {body}\n"


def added(kind: str, key: str) -> str:
    if kind == "node.param" and key in PARAM_ENTRIES:
        return PARAM_ENTRIES[key]
    return "" if key in IN_BODY[kind] else f"{key}: {VALUES.get(key, 'x')}"


def test_the_key_tables_are_upstreams() -> None:
    assert {kind: set(keys) for kind, keys in ROS_KEYS.items()} == UPSTREAM
    assert all(SUPPORTED_KEYS[kind] <= ROS_KEYS[kind] for kind in ROS_KEYS)
    assert set(PARSERS) <= ROS_ACTIONS


@pytest.mark.parametrize(("kind", "key"), sorted((kind, key) for kind, keys in UPSTREAM.items() for key in keys))
def test_every_key_ros_accepts_works_or_is_refused_as_unsupported(kind: str, key: str) -> None:
    text = entity_text(kind, added(kind, key))
    if key in SUPPORTED_KEYS[kind]:
        assert len(parse_launch_text(text, "f.yaml")) == 1
    else:
        with pytest.raises(LaunchError, match=f"key '{key}' works under ros2 launch but not in robo-rl launch"):
            parse_launch_text(text, "f.yaml")


@pytest.mark.parametrize(
    ("kind", "key"),
    [
        ("arg", "choices"),
        ("node", "parameters"),
        ("node", "remappings"),
        ("group", "namespace"),
        ("let", "default"),
        ("include.arg", "if"),
        ("node.remap", "unless"),
        ("arg.choice", "description"),
        ("node", "exec-name"),
    ],
)
def test_a_key_ros_refuses_is_unknown(kind: str, key: str) -> None:
    """e.g. `choices` (the old spelling): ROS raises "Unexpected key(s) found in `arg`: {'choices'}"."""
    assert key not in UPSTREAM[kind]
    with pytest.raises(LaunchError, match=f"unknown key '{key}'"):
        parse_launch_text(entity_text(kind, f"{key}: x"), "f.yaml")


def test_choice_is_spelled_as_in_ros() -> None:
    (arg,) = parse_launch_text("launch:\n- arg: {name: p, choice: [{value: a}, {value: '1'}]}\n")
    assert isinstance(arg, Arg) and arg.choices == ("a", "1")
    for bad, message in [
        ("[]", "give at least one"),
        ("[a, b]", "expected a mapping"),
        ("[{}]", "missing required key 'value'"),
    ]:
        with pytest.raises(LaunchError, match=message):
            parse_launch_text(f"launch:\n- arg: {{name: p, choice: {bad}}}\n")


def test_node_without_pkg_and_with_ros_args() -> None:
    """launch_ros reads `pkg` as optional (then `exec` is found on PATH) and `ros_args` as the user's ROS args."""
    (node,) = parse_launch_text("launch:\n- node: {exec: talker, ros_args: '--log-level debug'}\n")
    assert isinstance(node, Node) and node.pkg is None and node.ros_args == ("--log-level debug",)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("- node: {exec: x, if: 'true', unless: 'true'}", "give 'if' or 'unless', not both"),  # ROS: RuntimeError
        ("- node: {pkg: a}", "missing required key 'exec'"),  # ROS: AttributeError, exec is not optional
        ("- group: {scoped: 'true'}", "missing required key 'children'"),  # ROS: entity has no children
        ("- node: {exec: x, param: [{from: f, name: n}]}", "'from' takes no 'name'"),  # ROS: mutually exclusive
        ("- node: {exec: x, param: [{name: n}]}", "missing required key 'value'"),  # ROS: value or nested params
        ("- nodes: {exec: x}", "unknown action 'nodes'"),  # ROS: Unrecognized entity of the type: nodes
        ("- timer: {period: 1, children: []}", "action 'timer' runs under ros2 launch but not in robo-rl launch"),
    ],
)
def test_what_ros_refuses_is_refused(text: str, message: str) -> None:
    with pytest.raises(LaunchError, match=message):
        parse_launch_text(f"launch:\n{text}\n", "f.yaml")
