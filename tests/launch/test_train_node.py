"""`ros2 run robo_rl train --ros-args ...` becomes the same `robo-rl train` command as under `robo-rl launch`.

Under `ros2 launch`, launch_ros 0.28.0 passes each inline `param` as a generated parameter file
(launch_ros/actions/node.py, `_create_params_file_from_dict`: `yaml.dump({KEY: {'ros__parameters': params}})`,
KEY the node's full name when it has a name and a namespace, else `/**`), so the train entry reads
`--params-file` as rcl does.
"""

from __future__ import annotations

import ast
import runpy
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from robo_rl.launch import LaunchError
from robo_rl.launch.train_node import train_argv

ROOT = Path(__file__).resolve().parents[2]


def launch_ros_params_file(folder: Path, name: str, key: str, params: dict[str, object]) -> str:
    """A parameter file as launch_ros writes one for inline parameters (yaml.dump, block style)."""
    path = folder / name
    path.write_text(yaml.dump({key: {"ros__parameters": params}}, default_flow_style=False))
    return str(path)


def test_launch_ros_generated_parameter_files_become_train_flags(tmp_path: Path) -> None:
    """The command ros2 launch gives train_quadrotor_hover's node (one file per inline param, `/**` keys)."""
    argv = ["--ros-args", "-r", "__node:=train_quadrotor_hover"]
    inline = {"preset": "quadrotor_hover_ppo", "seed": 3, "num_envs": "", "max_iterations": 20, "export": True}
    for number, (name, value) in enumerate(inline.items()):
        argv += ["--params-file", launch_ros_params_file(tmp_path, f"launch_params_{number}", "/**", {name: value})]
    assert (tmp_path / "launch_params_0").read_text() == "/**:\n  ros__parameters:\n    preset: quadrotor_hover_ppo\n"
    assert train_argv(argv) == ["train", "quadrotor_hover_ppo", "--seed", "3", "--max-iterations", "20", "--export"]


def test_only_the_sections_of_this_node_apply_in_rcl_order(tmp_path: Path) -> None:
    text = """
/**:
  ros__parameters: {preset: pendulum_ppo, seed: 1}
/robots/train_on_robot:
  ros__parameters: {seed: 2, max_iterations: 5}
/**/other_node:
  ros__parameters: {seed: 9, device: cuda}
"""
    (tmp_path / "p.yaml").write_text(text)
    ros = [
        "--ros-args",
        "-r",
        "__ns:=/robots",
        "-r",
        "__node:=train_on_robot",
        "--params-file",
        str(tmp_path / "p.yaml"),
    ]
    assert train_argv(ros) == ["train", "pendulum_ppo", "--seed", "2", "--max-iterations", "5"]
    # -p writes into /**, which sits before the node's own section: the section still wins
    assert train_argv([*ros, "-p", "seed:=7"])[:4] == ["train", "pendulum_ppo", "--seed", "2"]
    # a later file's section of the same key updates it in place: later wins
    later = launch_ros_params_file(tmp_path, "later.yaml", "/robots/train_on_robot", {"seed": 4})
    assert train_argv([*ros, "--params-file", later])[:4] == ["train", "pendulum_ppo", "--seed", "4"]
    # without -r __node the entry's name is `train`: only /** applies
    assert train_argv(["--ros-args", "--params-file", str(tmp_path / "p.yaml")]) == [
        "train",
        "pendulum_ppo",
        "--seed",
        "1",
    ]


def test_inline_parameters_beat_the_file_as_launch_ros_orders_them(tmp_path: Path) -> None:
    """launch_ros passes `from:` first (as declared) and the inline file keyed by the node's full name after it:
    the inline value wins over the file's `/**/NAME` section; declared before the file, it loses."""
    shared = launch_ros_params_file(tmp_path, "shared.yaml", "/**/train_on_robot", {"preset": "from_file", "seed": 1})
    inline = launch_ros_params_file(tmp_path, "inline.yaml", "/car1/train_on_robot", {"preset": "pendulum_ppo"})
    ros = ["--ros-args", "-r", "__node:=train_on_robot", "-r", "__ns:=/car1"]
    assert train_argv([*ros, "--params-file", shared, "--params-file", inline]) == [
        "train",
        "pendulum_ppo",
        "--seed",
        "1",
    ]
    assert train_argv([*ros, "--params-file", inline, "--params-file", shared]) == ["train", "from_file", "--seed", "1"]


def test_ros_parameters_become_train_flags() -> None:
    argv = ["--ros-args", "-r", "__node:=train_quadrotor_hover", "-p", "preset:=quadrotor_hover_ppo", "-p", "seed:=3"]
    argv += ["-p", "num_envs:=", "-p", "export:=true", "-p", "quiet:=false", "-p", "max_iterations:=20"]
    assert train_argv(argv) == ["train", "quadrotor_hover_ppo", "--seed", "3", "--export", "--max-iterations", "20"]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--ros-args", "--params-file", "missing.yaml"], "missing.yaml: cannot read parameter file"),
        (["--ros-args", "-p", "seed"], "expected -p NAME:=VALUE"),
        (["--ros-args", "-p", "speed:=3"], "unknown parameter 'speed'"),
        (["--ros-args", "--log-level", "debug"], "unsupported ROS argument '--log-level'"),
    ],
)
def test_bad_ros_arguments_are_one_line_errors(argv: list[str], message: str) -> None:
    with pytest.raises(LaunchError, match=message):
        train_argv(argv)


def test_plain_arguments_and_repeated_ros_args_sections() -> None:
    argv = ["--ros-args", "-p", "preset:=pendulum_ppo", "--", "--num-envs", "8", "--ros-args", "-p", "seed:=2"]
    assert train_argv(argv) == ["train", "pendulum_ppo", "--seed", "2", "--num-envs", "8"]


@pytest.mark.parametrize("script", sorted(path.name for path in (ROOT / "ros_bin").iterdir()))
def test_every_ros_bin_script_runs_main_only_as_the_main_module(script: str) -> None:
    """A spawned child (the on-robot SAC's learner) imports the script as `__mp_main__`: it must not run main."""
    tree = ast.parse((ROOT / "ros_bin" / script).read_text())
    calls = [node for node in ast.walk(tree) if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "main"]
    guard = tree.body[-1]
    assert isinstance(guard, ast.If) and ast.unparse(guard.test) == "__name__ == '__main__'"
    assert calls and all(any(call is inner for inner in ast.walk(guard)) for call in calls)


def test_importing_the_train_script_as_a_spawned_child_does_not_train() -> None:
    namespace = runpy.run_path(str(ROOT / "ros_bin" / "train"), run_name="__mp_main__")
    assert callable(namespace["main"])


def test_installed_executable_trains(tmp_path: Path) -> None:
    """ros_bin/train, as colcon installs it, runs a (tiny) training."""
    ros_args = ["--ros-args", "-p", "preset:=pendulum_ppo", "-p", "max_iterations:=1", "-p", "num_envs:=8"]
    ros_args += ["-p", f"runs_root:={tmp_path}", "-p", "quiet:=true"]
    done = subprocess.run([sys.executable, str(ROOT / "ros_bin" / "train"), *ros_args], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    assert len(list(tmp_path.glob("pendulum_ppo/*/metrics.jsonl"))) == 1


def test_the_ros_entry_point_answers_a_bad_ros_argument_with_one_line_and_exit_2(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from robo_rl.cli.ros_train import main

    assert main(["--ros-args", "--log-level", "debug"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "unsupported ROS argument '--log-level'" in err[0]
