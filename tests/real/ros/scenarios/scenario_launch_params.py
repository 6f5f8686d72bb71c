"""Scenario: the parameters real rclpy gives a node from `--params-file` and `-p` arguments, next to what
`robo_rl.launch.param_file.node_parameters` predicts for the same arguments.

argv: LOG_DIR. Writes the cases' parameter files there; reports per case {"rclpy": {...}, "predicted": {...}}.
"""

from __future__ import annotations

import sys
from pathlib import Path

import rclpy
import yaml
from harness import finish
from rclpy.context import Context
from rclpy.node import Node

from robo_rl.launch.param_file import WILDCARD_KEY, infer_type, load_param_file, node_parameters

FILES = {
    # a shared file as launch/params/*.yaml are written: /**, then per-node sections in any namespace
    "shared": {"/**": {"profile": "file_star", "trigger": "file_star"}, "/**/policy_node": {"trigger": "file_wild"}},
    # what launch_ros writes for inline params of a node with a name and a namespace, and without a namespace
    "inline_fqn": {"/cf1/policy_node": {"trigger": "inline", "profile": "inline"}},
    "inline_star": {"/**": {"trigger": "inline"}},
    "star_last": {"/**/policy_node": {"trigger": "wild"}, "/**": {"trigger": "star"}},
    "patterns": {
        "/*/policy_node": {"one": "yes"},
        "/**/policy_node": {"any": "yes"},
        "policy_node": {"bare": "yes"},
        "/cf1/*": {"cf1_any_name": "yes"},
        "/a/**": {"under_a": "yes"},
    },
    "nested": {"cf1": {"policy_node": {"trigger": "nested"}}},
}
CASES = {
    # label: (node name, namespace, ROS arguments after the name/namespace)
    "launch_ros_order": ("policy_node", "/cf1", ["--params-file", "shared", "--params-file", "inline_fqn"]),
    "inline_declared_first": ("policy_node", "/cf1", ["--params-file", "inline_fqn", "--params-file", "shared"]),
    "inline_at_root": ("policy_node", "/", ["--params-file", "shared", "--params-file", "inline_star"]),
    "dash_p_then_file": ("policy_node", "/cf1", ["-p", "trigger:=dash_p", "--params-file", "shared"]),
    "file_then_dash_p": ("policy_node", "/cf1", ["--params-file", "shared", "-p", "trigger:=dash_p"]),
    "star_after_wild": ("policy_node", "/cf1", ["--params-file", "star_last"]),
    "same_key_later_file": ("policy_node", "/cf1", ["--params-file", "inline_fqn", "--params-file", "nested"]),
    "patterns_root": ("policy_node", "/", ["--params-file", "patterns"]),
    "patterns_cf1": ("policy_node", "/cf1", ["--params-file", "patterns"]),
    "patterns_deep": ("policy_node", "/a/b/c", ["--params-file", "patterns"]),
    "other_node": ("teleop_node", "/cf1", ["--params-file", "shared", "--params-file", "patterns"]),
}


def write_files(folder: Path) -> dict[str, str]:
    paths = {}
    for label, sections in FILES.items():
        document = {key: _wrap(body) for key, body in sections.items()}
        path = folder / f"{label}.yaml"
        path.write_text(yaml.dump(document, default_flow_style=False, sort_keys=False))
        paths[label] = str(path)
    return paths


def _wrap(body: dict) -> dict:
    if all(isinstance(value, dict) for value in body.values()):
        return {key: _wrap(value) for key, value in body.items()}
    return {"ros__parameters": body}


def rclpy_parameters(name: str, namespace: str, ros_args: list[str]) -> dict[str, object]:
    context = Context()
    rclpy.init(
        args=["probe", "--ros-args", "-r", f"__node:={name}", "-r", f"__ns:={namespace}", *ros_args], context=context
    )
    node = Node("probe", context=context, automatically_declare_parameters_from_overrides=True)
    params = {key: value.value for key, value in node.get_parameters_by_prefix("").items()}
    node.destroy_node()
    rclpy.shutdown(context=context)
    return {
        key: value for key, value in params.items() if key not in ("use_sim_time", "start_type_description_service")
    }


def predicted(name: str, namespace: str, ros_args: list[str]) -> dict[str, object]:
    sections = []
    for option, value in zip(ros_args[::2], ros_args[1::2], strict=True):
        if option == "--params-file":
            sections.extend(load_param_file(Path(value)))
        else:
            param, _, text = value.partition(":=")
            sections.append((WILDCARD_KEY, {param: infer_type(text)}))
    return dict(node_parameters(sections, name, namespace))


def main() -> None:
    paths = write_files(Path(sys.argv[1]))
    results = {}
    for label, (name, namespace, args) in CASES.items():
        ros_args = [paths.get(arg, arg) for arg in args]
        results[label] = {
            "rclpy": rclpy_parameters(name, namespace, ros_args),
            "predicted": predicted(name, namespace, ros_args),
        }
    finish(results)


if __name__ == "__main__":
    main()
