"""Every launch file in launch/ resolves (dry run) to the processes, commands and parameters written here.

The commands are the ones launch_ros 0.28.0 builds (launch_ros/actions/node.py): `--ros-args`, node name,
namespace, then one `--params-file` per `from:` file and per run of inline parameters (a file launch_ros writes
as `/NS/NAME: {ros__parameters: {...}}`), in declaration order, then the remaps.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
import yaml

from robo_rl.launch import ResolveSettings, plan_commands, resolve_launch_file

REPO = Path(__file__).resolve().parents[2]
LAUNCH = REPO / "launch"
SCRIPTS = Path("/opt/bin")  # a fixed folder so the expected commands are exact; nothing is run
SETTINGS = ResolveSettings(package_shares={"robo_rl": REPO})
SECURE = {"secure": False, "keystore": "keystore"}  # every robot node's secure mode (off unless secure:=true)


def inline(key: str, **params: object) -> str:
    """How `commands` shows a written inline-parameter file: its one section."""
    return f"<{key}: {params}>"


def commands(name: str, **arguments: str) -> list[list[str]]:
    """The plan's command lines, each written inline-parameter file replaced by `inline(...)` of its content."""
    plan = resolve_launch_file(LAUNCH / name, arguments, SETTINGS)
    with tempfile.TemporaryDirectory() as folder:
        planned = plan_commands(plan, SCRIPTS, Path(folder))
        shown = {str(path): _shown(path) for command in planned for path, _ in command.written}
    return [[shown.get(word, word) for word in command.argv] for command in planned]


def _shown(path: Path) -> str:
    ((key, body),) = yaml.safe_load(path.read_text()).items()
    assert list(body) == ["ros__parameters"]
    return inline(key, **body["ros__parameters"])


def test_every_shipped_launch_file_is_covered_here() -> None:
    shipped = {path.name for path in LAUNCH.glob("*.launch.yaml")}
    assert shipped == {
        "train_quadrotor_hover.launch.yaml",
        "train_rc_car.launch.yaml",
        "sim_quadrotor.launch.yaml",
        "sim_rc_car.launch.yaml",
        "hardware_quadrotor.launch.yaml",
        "hardware_rc_car.launch.yaml",
        "train_on_robot_rc_car.launch.yaml",
        "train_on_robot_arm.launch.yaml",
    }


@pytest.mark.parametrize(
    ("name", "preset"),
    [("train_quadrotor_hover.launch.yaml", "quadrotor_hover_ppo"), ("train_rc_car.launch.yaml", "rc_car_race_ppo")],
)
def test_train_files_run_robo_rl_train(name: str, preset: str) -> None:
    assert commands(name) == [
        ["/opt/bin/robo-rl", "train", preset, "--seed", "0", "--runs-root", "runs", "--export", "--quiet"]
    ]
    flags = ["--seed", "3", "--num-envs", "16", "--max-iterations", "2", "--device", "cuda", "--runs-root", "runs"]
    assert commands(name, seed="3", num_envs="16", max_iterations="2", device="cuda", export="false") == [
        ["/opt/bin/robo-rl", "train", preset, *flags, "--quiet"]
    ]


def ros_args(name: str, namespace: str, *rest: str) -> list[str]:
    return ["--ros-args", "-r", f"__node:={name}", "-r", f"__ns:={namespace}", *rest]


@pytest.mark.parametrize(
    ("robot", "namespace", "profile", "params", "command"),
    [
        ("quadrotor", "/cf1", "quadrotor_crazyflie", "quadrotor.yaml", []),
        # the car's bridge and policy agree on the command type: Ackermann where installed, else Twist, or as asked
        ("rc_car", "/car1", "rc_car", "rc_car.yaml", ["command_type"]),
    ],
)
def test_sim_files_start_bridge_policy_and_teleop(
    robot: str, namespace: str, profile: str, params: str, command: list[str]
) -> None:
    file = f"{LAUNCH}/params/{params}"
    extra = {"command_type": "auto"} if command else {}
    # the quadrotor's vehicle mode (sim_bridge as PX4 or the Crazyflie firmware, for rehearsing the hand-over) is off
    vehicle = {"target": [0.0, 0.0, 0.0], "px4_offboard": False} if robot == "quadrotor" else {}
    policy_inline = inline(
        f"{namespace}/policy_node", policy="p.onnx", profile=profile, **extra, autostart=True, **vehicle, **SECURE
    )
    policy_params = ["--params-file", file, "--params-file", policy_inline]
    # the quadrotor's joystick drives the chosen profile's actions (motor commands or rates): it gets the profile too
    teleop_extra = {"profile": profile} if robot == "quadrotor" else {}
    teleop_params = ["--params-file", inline(f"{namespace}/teleop_node", **teleop_extra, **SECURE)]
    bridge_vehicle = {"vehicle": False, "target": [0.0, 0.0, 0.0]} if robot == "quadrotor" else {}
    bridge_params = [
        "--params-file",
        file,
        "--params-file",
        inline(f"{namespace}/sim_bridge", profile=profile, **extra, **bridge_vehicle, **SECURE),
    ]
    assert commands(f"sim_{robot}.launch.yaml", policy="p.onnx") == [
        ["/opt/bin/sim_bridge", *ros_args("sim_bridge", namespace, *bridge_params)],
        ["/opt/bin/policy_node", *ros_args("policy_node", namespace, *policy_params)],
        ["/opt/bin/teleop_node", *ros_args("teleop_node", namespace, "--params-file", file, *teleop_params)],
    ]
    assert [argv[0] for argv in commands(f"sim_{robot}.launch.yaml", teleop="false")] == [
        "/opt/bin/sim_bridge",
        "/opt/bin/policy_node",
    ]


def test_sim_quadrotor_parameters_merge_file_sections_and_inline_values() -> None:
    plan = resolve_launch_file(LAUNCH / "sim_quadrotor.launch.yaml", {"profile": "quadrotor_px4"}, SETTINGS)
    bridge, policy, teleop = plan.processes
    assert bridge.params == {
        "profile": "quadrotor_px4",
        "task": "quadrotor/hover",
        "seed": 0,
        "episode_length": 3600.0,
        "lockstep": True,
        "vehicle": False,
        "target": (0.0, 0.0, 0.0),
        **SECURE,
    }
    assert policy.params == {
        "profile": "quadrotor_px4",
        "policy": "policy.onnx",
        "target": (0.0, 0.0, 0.0),
        "trigger": "observation",
        "max_missed_deadlines": 10,
        "autostart": True,
        "px4_offboard": False,
        **SECURE,
    }
    assert teleop.params == {"profile": "quadrotor_px4", "estop_button": 0, "takeover_button": 1, **SECURE}


def test_hardware_quadrotor_remaps_onto_the_driver_topics() -> None:
    file = ["--params-file", f"{LAUNCH}/params/quadrotor.yaml"]
    remaps = ["-r", "odom:=/cf231/odom", "-r", "cmd_motors:=/cf231/cmd_motors"]
    policy_inline = inline(
        "/cf231/policy_node", policy="/p.onnx", profile="quadrotor_crazyswarm2", autostart=False, **SECURE
    )
    teleop_inline = inline("/cf231/teleop_node", profile="quadrotor_crazyswarm2", **SECURE)
    recorder_inline = ["--params-file", inline("/cf231/recorder", **SECURE)]
    assert commands("hardware_quadrotor.launch.yaml", policy="/p.onnx", robot="cf231") == [
        ["/opt/bin/policy_node", *ros_args("policy_node", "/cf231", *file, "--params-file", policy_inline, *remaps)],
        [
            "/opt/bin/teleop_node",
            *ros_args("teleop_node", "/cf231", *file, "--params-file", teleop_inline, "-r", "joy:=/joy"),
        ],
        ["/opt/bin/recorder", *ros_args("recorder", "/cf231", *file, *recorder_inline, *remaps)],
    ]


def test_hardware_rc_car_remaps_onto_f1tenth_topics_and_records_optionally() -> None:
    plan = resolve_launch_file(
        LAUNCH / "hardware_rc_car.launch.yaml", {"policy": "p.onnx", "record": "false"}, SETTINGS
    )
    policy, teleop = plan.processes
    assert policy.remaps == (("odom", "/odom"), ("drive", "/drive"), ("cmd_vel", "/cmd_vel"))
    assert policy.params["autostart"] is False
    assert teleop.remaps == (("joy", "/joy"),)
    assert policy.params["profile"] == teleop.params["profile"] == "rc_car"
    assert policy.namespace == teleop.namespace == "/car1"


def test_a_parameter_given_twice_takes_the_last_value(tmp_path: Path) -> None:
    path = tmp_path / "a.launch.yaml"
    path.write_text(
        "launch:\n- node: {pkg: robo_rl, exec: x, param: [{name: p, value: 1}, {name: p, value: [a, true]}]}\n"
    )
    plan = resolve_launch_file(path, {}, SETTINGS)
    (command,) = plan_commands(plan, SCRIPTS, tmp_path)
    written = tmp_path / "launch_params_1_0.yaml"
    assert command.argv == ("/opt/bin/x", "--ros-args", "--params-file", str(written))
    assert yaml.safe_load(written.read_text()) == {"/**": {"ros__parameters": {"p": ["a", True]}}}
    assert plan.processes[0].params == {"p": ("a", True)}
    assert command.missing == "x is not installed (no console script /opt/bin/x)"


@pytest.mark.parametrize("name", ["sim_quadrotor", "hardware_quadrotor", "sim_rc_car", "hardware_rc_car"])
def test_every_robot_profile_a_launch_file_names_is_bundled_with_the_deploy_core(name: str) -> None:
    from robo_rl.real import bundled_profiles

    plan = resolve_launch_file(LAUNCH / f"{name}.launch.yaml", {"policy": "p.onnx"}, SETTINGS)
    profiles = {process.params["profile"] for process in plan.processes if "profile" in process.params}
    assert profiles and profiles <= set(bundled_profiles())


@pytest.mark.parametrize(
    ("robot", "profile", "namespace", "sim"),
    [("rc_car", "rc_car", "/car1", True), ("arm", "arm", "/arm1", False)],
)
def test_train_on_robot_files_train_through_the_robots_topics(
    robot: str, profile: str, namespace: str, sim: bool
) -> None:
    file = f"{LAUNCH}/params/{profile}.yaml"
    train = ["/opt/bin/robo-rl", "train", f"robot_{robot}_sac", "--robot", profile, "--robot-namespace", namespace]
    train += ["--seed", "0", "--runs-root", "runs", "--export", "--quiet", "--keystore", "keystore"]
    # the arm's operator device: the gamepad on joy by default, teleop_device:=spacenav for a SpaceMouse
    device = {"device": "joy"} if robot == "arm" else {}
    teleop_inline = ["--params-file", inline(f"{namespace}/teleop_node", **device, **SECURE)]
    nodes = [["/opt/bin/teleop_node", *ros_args("teleop_node", namespace, "--params-file", file, *teleop_inline)]]
    recorder_inline = ["--params-file", inline(f"{namespace}/recorder", **SECURE)]
    nodes += [["/opt/bin/recorder", *ros_args("recorder", namespace, "--params-file", file, *recorder_inline)]]
    assert commands(f"train_on_robot_{robot}.launch.yaml") == [train, *nodes]
    if robot == "arm":
        spacenav = inline(f"{namespace}/teleop_node", device="spacenav", **SECURE)
        teleop = ["/opt/bin/teleop_node", *ros_args("teleop_node", namespace, "--params-file", file)]
        assert commands(f"train_on_robot_{robot}.launch.yaml", teleop_device="spacenav")[1] == [
            *teleop,
            "--params-file",
            spacenav,
        ]
    if sim:  # sim_bridge stands in for the car
        bridge_inline = inline(f"{namespace}/sim_bridge", profile="rc_car", **SECURE)
        bridge = [
            "/opt/bin/sim_bridge",
            *ros_args("sim_bridge", namespace, "--params-file", file, "--params-file", bridge_inline),
        ]
        assert commands(f"train_on_robot_{robot}.launch.yaml", sim="true") == [train, bridge, *nodes]


def test_ros_args_come_first_as_launch_ros_orders_them(tmp_path: Path) -> None:
    path = tmp_path / "a.launch.yaml"
    path.write_text(
        "launch:\n- node: {exec: sh, name: n, args: a, ros_args: '--log-level debug', remap: [{from: x, to: y}]}\n"
    )
    (command,) = plan_commands(resolve_launch_file(path, {}, SETTINGS), SCRIPTS, tmp_path)
    assert command.argv == (
        "sh",
        "a",
        "--ros-args",
        "--log-level",
        "debug",
        "--ros-args",
        "-r",
        "__node:=n",
        "-r",
        "x:=y",
    )
    assert command.missing == ""  # a node without a package is the executable on PATH


@pytest.mark.parametrize(
    ("name", "arguments"),
    [
        ("sim_quadrotor", {"policy": "p.onnx"}),
        ("hardware_quadrotor", {"policy": "p.onnx"}),
        ("sim_rc_car", {"policy": "p.onnx"}),
        ("hardware_rc_car", {"policy": "p.onnx"}),
        ("train_on_robot_rc_car", {"sim": "true"}),
        ("train_on_robot_arm", {}),
    ],
)
def test_secure_reaches_every_process_of_the_robot(name: str, arguments: dict[str, str]) -> None:
    secure = {"secure": "true", "keystore": "/ks", **arguments}
    plan = resolve_launch_file(LAUNCH / f"{name}.launch.yaml", secure, SETTINGS)
    for process in plan.processes:
        assert process.params["secure"] is True and process.params["keystore"] == "/ks", process.executable
    for argv in commands(f"{name}.launch.yaml", **secure):
        if argv[1:2] == ["train"]:  # the trainer's robot link: robo-rl train --secure --keystore
            assert argv[-3:] == ["--secure", "--keystore", "/ks"]
