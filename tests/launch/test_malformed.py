"""Malformed launch files fail with a one-line LaunchError naming file and line; fuzzed files never raise
anything else."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from robo_rl.launch import LaunchError, ResolveSettings, parse_launch_text, resolve_launch_file
from robo_rl.launch.substitution import parse_text


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("launch: [", r"f.yaml:1: invalid YAML"),
        ("nodes: []", r"f.yaml:1: a launch file is a mapping with the single key 'launch'"),
        ("launch: {a: 1}", r"f.yaml:1: expected a list of actions"),
        ("launch:\n- nod: {pkg: a, exec: b}", r"f.yaml:2: unknown action 'nod' \(known: arg, executable, group"),
        ("launch:\n- node: {pkg: a, exec: b, pkgs: c}", r"f.yaml:2: node: unknown key 'pkgs'"),
        ("launch:\n- node: {pkg: a}", r"f.yaml:2: node: missing required key 'exec'"),
        ("launch:\n- node: {pkg: a, exec: b, if: 'true', unless: 'true'}", r"give 'if' or 'unless', not both"),
        ("launch:\n\n- let: {name: x, value: $(vra y)}", r"f.yaml:3: let.value: unknown substitution \$\(vra\)"),
        ("launch:\n- let: {name: x, value: '$(var y'}", r"f.yaml:2: let.value: unclosed \$\(var"),
        ("launch:\n- let: {name: x, value: $(eval 1+1)}", r"\$\(eval \.\.\.\) is not supported without ROS"),
        ("launch:\n- let: {name: x, value: $(var)}", r"\$\(var\) takes 1..1 arguments, got 0"),
        ("launch:\n- arg: {name: x, default: ~}", r"f.yaml:2: arg.default: expected a string"),
        ("launch:\n- group: {children: [], scoped: maybe}", r"group.scoped: expected true or false, got 'maybe'"),
        ("launch:\n- node: {pkg: a, exec: b, param: [{name: p, value: {x: 1}}]}", r"node.param.value: expected"),
        ("launch:\n- node: {pkg: a, exec: b, remap: [{from: a}]}", r"node.remap: missing required key 'to'"),
        ("launch:\n- node: {pkg: a, exec: b, output: loud}", r"node.output: expected screen, log or both"),
        ("launch:\n- {node: {pkg: a, exec: b}, arg: {name: c}}", r"an action is a mapping with one key"),
        ("launch:\n- node: {pkg: a, exec: b, param: [{from: f, name: n}]}", r"node.param: 'from' takes no 'name'"),
    ],
)
def test_malformed_files_name_file_line_and_problem(text: str, message: str) -> None:
    with pytest.raises(LaunchError, match=message) as info:
        parse_launch_text(text, "f.yaml")
    assert "\n" not in str(info.value)


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("p: 1", r"section 'p': expected exactly the key 'ros__parameters'"),
        ("n: {ros__parameters: [1]}", r"ros__parameters must be a mapping"),
        ("n: {ros__parameters: {p: {q: [{}]}}}", r"parameter 'p.q': expected a string, number"),
        ("[1, 2]", r"a parameter file maps node names"),
        ("n: {ros__parameters: {a: 1}", r"invalid YAML"),
    ],
)
def test_malformed_parameter_files(tmp_path: Path, content: str, message: str) -> None:
    (tmp_path / "p.yaml").write_text(content)
    path = tmp_path / "a.launch.yaml"
    path.write_text("launch:\n- node: {pkg: robo_rl, exec: x, param: [{from: p.yaml}]}\n")
    with pytest.raises(LaunchError, match=message):
        resolve_launch_file(path, {}, ResolveSettings())


ACTIONS = ["arg", "let", "include", "group", "node", "executable", "push-ros-namespace", "launch", "bogus"]
KEYS = [
    *ACTIONS,
    "name",
    "default",
    "value",
    "file",
    "children",
    "pkg",
    "exec",
    "param",
    "remap",
    "from",
    "to",
    "namespace",
    "if",
    "unless",
    "scoped",
    "cmd",
    "choices",
    "output",
    "args",
]
TEXTS = st.sampled_from(
    ["", "x", "true", "0", "$(var a)", "$(env HOME)", "$(dirname)", "$(var", "$(eval 1)", "$(x)", "a.launch.yaml"]
)
SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-3, 3), st.floats(allow_nan=True), TEXTS, st.text(max_size=8))
YAML_VALUES = st.recursive(
    SCALARS,
    lambda children: st.one_of(
        st.lists(children, max_size=4), st.dictionaries(st.sampled_from(KEYS), children, max_size=4)
    ),
    max_leaves=25,
)
# Action-shaped documents reach the resolver, not just the first structural check.
ACTION_BODIES = st.dictionaries(st.sampled_from(KEYS), st.one_of(TEXTS, YAML_VALUES), max_size=5)
ACTION_ITEMS = st.dictionaries(st.sampled_from(ACTIONS), ACTION_BODIES, min_size=1, max_size=1)
DOCUMENTS = st.one_of(
    YAML_VALUES,
    st.builds(lambda actions: {"launch": actions}, st.lists(YAML_VALUES, max_size=5)),
    st.builds(lambda actions: {"launch": actions}, st.lists(ACTION_ITEMS, max_size=6)),
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(document=DOCUMENTS)
def test_fuzzed_structures_raise_only_launch_errors(tmp_path: Path, document: object) -> None:
    path = tmp_path / "fuzz.launch.yaml"
    path.write_text(yaml.safe_dump(document))
    try:
        resolve_launch_file(path, {}, ResolveSettings(environ={"HOME": "/h"}, package_shares={"robo_rl": tmp_path}))
    except LaunchError as err:
        assert "\n" not in str(err)


@settings(max_examples=300, deadline=None)
@given(text=st.text(alphabet="$() 'avrenx\\", max_size=30))
def test_fuzzed_substitution_text_parses_or_raises_launch_error(text: str) -> None:
    try:
        parse_text(text)
    except LaunchError:
        pass


@settings(max_examples=200, deadline=None)
@given(text=st.text(max_size=60))
def test_arbitrary_text_raises_only_launch_errors(text: str) -> None:
    try:
        parse_launch_text("launch:\n" + text, "f.yaml")
    except LaunchError:
        pass
