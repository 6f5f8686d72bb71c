"""Export targets: each folder has its files; the generic example and the Crazyflie controller (against stand-in
firmware headers) build with -Werror and compute what onnxruntime computes; the Arduino library's C parts build
for a Cortex-M; verify reports host parity and the QEMU run; int8 reports its error."""

from __future__ import annotations

import ctypes
import dataclasses
import json
import math
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
import torch
from onnx import TensorProto, helper, numpy_helper

from robo_rl.actuator import ACTUATOR_KEY, MotorActuator
from robo_rl.firmware_export import qemu
from robo_rl.firmware_export.board import render
from robo_rl.firmware_export.onnx_ops import UnsupportedOperatorError
from robo_rl.firmware_export.onnx_reader import load_policy
from robo_rl.firmware_export.quantize import error_bound, quantize, sample_observations
from robo_rl.firmware_export.report import PARITY_TOLERANCE
from robo_rl.firmware_export.targets import FIRMWARE_TARGETS, export_target
from robo_rl.sim.quadrotor.dynamics import quat_to_rotmat

STUBS = Path(__file__).parent / "crazyflie_stubs"
ARDUINO_STUBS = Path(__file__).parent / "arduino_stubs"
HOST_FLAGS = ["-O2", "-std=c99", "-Wall", "-Wextra", "-Werror"]
# The Crazyflie firmware builds with gnu11 (its headers use anonymous unions) and warns on double promotion.
CRAZYFLIE_FLAGS = ["-O2", "-std=gnu11", "-Wall", "-Wextra", "-Werror", "-Wdouble-promotion"]
M4_FLAGS = ["-mcpu=cortex-m4", "-mthumb", "-mfloat-abi=hard", "-mfpu=fpv4-sp-d16"]
QUADROTOR_OBS = (
    [f"position_error_{a}" for a in "xyz"]
    + [f"rotation_{r}{c}" for r in range(3) for c in range(3)]
    + [f"velocity_{a}" for a in "xyz"]
    + [f"angular_velocity_{a}" for a in "xyz"]
    + [f"previous_action_{k}_{i}" for k in range(2) for i in range(4)]
)
# A Crazyflie-like actuator model: thrust quadratic in the command with the 2023 Learning to Fly curve (0.1488 N per
# rotor at u = 1, rl_tools' crazy_flie.h of that time), hover at u = sqrt(0.027 kg * 9.81 / 4 / 0.1488) = 0.667.
CF_THRUST_CURVE = (0.0, 0.0, 0.14882867)
CF_HOVER_COMMAND = math.sqrt(0.027 * 9.81 / 4 / CF_THRUST_CURVE[2])
CF_ACTUATOR = MotorActuator(
    thrust_curve=CF_THRUST_CURVE,
    torque_to_thrust=0.005964552,
    motor_rise_time_constant=0.05,
    motor_fall_time_constant=0.05,
    frame="crazyflie_2_1_bare_2023",
    hover_action=2.0 * CF_HOVER_COMMAND - 1.0,
)
EXPECTED_FILES = {
    "c": {"robo_rl_policy.h", "robo_rl_policy.c", "main.c", "Makefile", "README.md", "report.json"},
    "cortex-m4": {"robo_rl_policy.h", "robo_rl_policy.c", "Makefile", "README.md", "report.json"},
    "crazyflie": {
        "Makefile",
        "Kbuild",
        "app-config",
        "src/Kbuild",
        "src/robo_rl_controller.c",
        "src/robo_rl_crazyflie_map.h",
        "src/robo_rl_policy.h",
        "src/robo_rl_policy.c",
        "README.md",
        "report.json",
    },
    "arduino": {
        "library.properties",
        "src/RoboRlPolicy.h",
        "src/robo_rl_policy.h",
        "src/robo_rl_policy.c",
        "examples/RoboRlPolicy/RoboRlPolicy.ino",
        "README.md",
        "report.json",
    },
}


def _tensor(name: str, values: np.ndarray) -> onnx.TensorProto:
    return numpy_helper.from_array(np.asarray(values, dtype=np.float32), name)


def _save(model: onnx.ModelProto, path: Path, props: dict[str, str] | None = None) -> Path:
    model.ir_version = 10  # what the installed onnxruntime reads
    if props:
        helper.set_model_props(model, props)
    onnx.checker.check_model(model)
    onnx.save_model(model, str(path))
    return path


def quadrotor_policy(
    path: Path,
    dt: float = 0.01,
    seed: int = 0,
    actuator: MotorActuator | None = CF_ACTUATOR,
    obs_names: list[str] | None = None,
    integral_limit: float = 0.3,
) -> Path:
    """A robo_rl-style quadrotor hover policy (normalizer, Gemm-Elu-Gemm, clip, action scaling; 26 → 24 → 4)
    with robo_rl metadata, action names rotor_0..3 in a shuffled order to check the rotor mapping, and the
    actuator model `actuator` (None: a file exported before robo_rl.actuator). `obs_names` (default
    QUADROTOR_OBS) may add position_error_integral_* observations, bounded to +-`integral_limit` m*s."""
    rng = np.random.default_rng(seed)
    names = QUADROTOR_OBS if obs_names is None else obs_names
    obs_dim, hidden, action_dim = len(names), 24, 4
    nodes = [
        helper.make_node("Sub", ["obs", "mean"], ["centered"], name="node_sub"),
        helper.make_node("Div", ["centered", "std"], ["normalized"], name="node_div"),
        helper.make_node("Gemm", ["normalized", "w1", "b1"], ["h1"], name="node_linear", transB=1),
        helper.make_node("Elu", ["h1"], ["a1"], name="node_elu"),
        helper.make_node("Gemm", ["a1", "w2", "b2"], ["raw"], name="node_linear_1", transB=1),
        helper.make_node("Clip", ["raw", "low", "high"], ["clipped"], name="node_clamp"),
        helper.make_node("Mul", ["clipped", "scale"], ["scaled"], name="node_mul"),
        helper.make_node("Add", ["scaled", "offset"], ["action"], name="node_add"),
    ]
    initializers = [
        _tensor("mean", rng.normal(0, 0.1, obs_dim)),
        _tensor("std", rng.uniform(0.3, 2.0, obs_dim)),
        _tensor("w1", rng.normal(0, 0.5, (hidden, obs_dim))),
        _tensor("b1", rng.normal(0, 0.1, hidden)),
        _tensor("w2", rng.normal(0, 0.4, (action_dim, hidden))),
        _tensor("b2", rng.normal(0, 0.1, action_dim)),
        _tensor("low", np.float32(-1.0)),
        _tensor("high", np.float32(1.0)),
        _tensor("scale", np.ones(action_dim)),
        _tensor("offset", np.zeros(action_dim)),
    ]
    graph = helper.make_graph(
        nodes,
        "quadrotor",
        [helper.make_tensor_value_info("obs", TensorProto.FLOAT, ["batch", obs_dim])],
        [helper.make_tensor_value_info("action", TensorProto.FLOAT, ["batch", action_dim])],
        initializers,
    )
    low = [_OBS_BOUND_UNIT[_obs_kind(name)][0] for name in names]
    low = [
        -integral_limit if _obs_kind(name) == "position_error_integral" else value
        for name, value in zip(names, low, strict=True)
    ]
    units = [_OBS_BOUND_UNIT[_obs_kind(name)][1] for name in names]
    props = {
        "robo_rl.task": "quadrotor/hover",
        "robo_rl.dt": repr(dt),
        "robo_rl.obs_names": json.dumps(names),
        "robo_rl.obs_units": json.dumps(units),
        "robo_rl.obs_low": json.dumps(low),
        "robo_rl.obs_high": json.dumps([-v for v in low]),
        "robo_rl.action_names": json.dumps(["rotor_1", "rotor_0", "rotor_2", "rotor_3"]),
        "robo_rl.action_units": json.dumps(["1"] * 4),
        "robo_rl.action_low": json.dumps([-1.0] * 4),
        "robo_rl.action_high": json.dumps([1.0] * 4),
        "robo_rl.version": "0.1.0",
    }
    if actuator is not None:
        props |= {ACTUATOR_KEY: actuator.to_json(), "robo_rl.schema": "3"}
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    return _save(model, path, props)


_OBS_BOUND_UNIT = {
    "position_error": (-math.inf, "m"),
    "position_error_integral": (-math.inf, "m*s"),
    "rotation": (-1.0, "1"),
    "velocity": (-math.inf, "m/s"),
    "angular_velocity": (-math.inf, "rad/s"),
    "previous_action": (-1.0, "1"),
}


def _obs_kind(name: str) -> str:
    """`position_error` of `position_error_x`, `rotation` of `rotation_01`, ... (the name without its index)."""
    return re.sub(r"(_[xyz]|_\d+)+$", "", name)


def sb3_policy(path: Path, seed: int = 1) -> Path:
    """An SB3-style actor without metadata: MatMul+Add, Tanh, MatMul+Add, Tanh (5 → 8 → 2)."""
    rng = np.random.default_rng(seed)
    nodes = [
        helper.make_node("MatMul", ["input", "w1"], ["m1"], name="/mlp/0/MatMul"),
        helper.make_node("Add", ["m1", "b1"], ["z1"], name="/mlp/0/Add"),
        helper.make_node("Tanh", ["z1"], ["h1"], name="/mlp/1/Tanh"),
        helper.make_node("MatMul", ["h1", "w2"], ["m2"], name="/action/MatMul"),
        helper.make_node("Add", ["m2", "b2"], ["z2"], name="/action/Add"),
        helper.make_node("Tanh", ["z2"], ["output"], name="/squash/Tanh"),
    ]
    initializers = [
        _tensor("w1", rng.normal(0, 0.6, (5, 8))),
        _tensor("b1", rng.normal(0, 0.1, 8)),
        _tensor("w2", rng.normal(0, 0.6, (8, 2))),
        _tensor("b2", rng.normal(0, 0.1, 2)),
    ]
    graph = helper.make_graph(
        nodes,
        "sb3",
        [helper.make_tensor_value_info("input", TensorProto.FLOAT, ["batch", 5])],
        [helper.make_tensor_value_info("output", TensorProto.FLOAT, ["batch", 2])],
        initializers,
    )
    return _save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)


def _onnxruntime(path: Path, obs: np.ndarray) -> np.ndarray:
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    return session.run(None, {session.get_inputs()[0].name: np.atleast_2d(obs).astype(np.float32)})[0]


def _compile(command: list[str], cwd: Path | None = None) -> None:
    done = subprocess.run(command, capture_output=True, text=True, cwd=cwd, check=False, timeout=120)
    assert done.returncode == 0, f"{' '.join(command)}\n{done.stdout}{done.stderr}"


needs_arm_gcc = pytest.mark.skipif(
    shutil.which("arm-none-eabi-gcc") is None, reason="arm-none-eabi-gcc not installed (make system-deps)"
)


@pytest.fixture(scope="module")
def quadrotor_onnx(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return quadrotor_policy(tmp_path_factory.mktemp("quadrotor") / "policy.onnx")


@pytest.fixture(scope="module")
def exported(quadrotor_onnx: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Every firmware target exported once (no verify), shared by the tests below."""
    root = tmp_path_factory.mktemp("targets")
    return {target: export_target(quadrotor_onnx, target, root / target).out_dir for target in FIRMWARE_TARGETS}


@pytest.mark.parametrize("target", FIRMWARE_TARGETS)
def test_target_folder_holds_expected_files(target: str, exported: dict[str, Path]) -> None:
    out = exported[target]
    files = {str(p.relative_to(out)) for p in out.rglob("*") if p.is_file()}
    assert files == EXPECTED_FILES[target]
    report = json.loads((out / "report.json").read_text())
    assert report["target"] == target and set(report["files"]) == EXPECTED_FILES[target]
    assert report["obs_dim"] == len(QUADROTOR_OBS) and report["action_dim"] == 4
    for path in out.rglob("*"):
        if path.is_file():
            assert "@@" not in path.read_text(), f"unfilled placeholder in {path}"
    readme = (out / "README.md").read_text()
    assert "quadrotor/hover" in readme and "robo_rl_policy.c" in readme


@needs_arm_gcc
def test_report_has_cortex_m4_object_size(exported: dict[str, Path]) -> None:
    report = json.loads((exported["cortex-m4"] / "report.json").read_text())
    # 26*24 + 24*4 weights and biases etc. as float32: at least 2.9 kB of constants, well below 16 kB.
    for size in (report["cortex_m4_size"], report["host_size"]):
        assert 2900 < size["text"] < 16_000 and size["bss"] > 0


def test_generic_example_builds_with_werror_and_prints_the_onnxruntime_action(
    exported: dict[str, Path], quadrotor_onnx: Path, tmp_path: Path
) -> None:
    out = shutil.copytree(exported["c"], tmp_path / "c")  # build outputs stay out of the shared folder
    _compile(["make", "-s", "CC=gcc", f"CFLAGS={' '.join(HOST_FLAGS)}"], cwd=out)
    printed = subprocess.run([str(out / "policy_example")], capture_output=True, text=True, check=True).stdout
    values = dict(line.split() for line in printed.splitlines())
    expected = _onnxruntime(quadrotor_onnx, np.zeros(len(QUADROTOR_OBS)))[0]
    # Action order of the file: rotor_1, rotor_0, rotor_2, rotor_3.
    got = [float(values[name]) for name in ("rotor_1", "rotor_0", "rotor_2", "rotor_3")]
    np.testing.assert_allclose(got, expected, atol=PARITY_TOLERANCE)


@needs_arm_gcc
@pytest.mark.parametrize("motors_off", [0, 1])
def test_crazyflie_app_compiles_for_cortex_m4_against_stub_headers(
    motors_off: int, exported: dict[str, Path], tmp_path: Path
) -> None:
    src = exported["crazyflie"] / "src"
    command = ["arm-none-eabi-gcc", *M4_FLAGS, *CRAZYFLIE_FLAGS, f"-I{STUBS}", f"-I{src}", "-c"]
    command += [f"-DROBO_RL_CF_FALLBACK_MOTORS_OFF={motors_off}", str(src / "robo_rl_controller.c")]
    _compile([*command, str(src / "robo_rl_policy.c")], cwd=tmp_path)
    kbuild = (src / "Kbuild").read_text().split()
    assert "robo_rl_controller.o" in kbuild and "robo_rl_policy.o" in kbuild
    assert "CONFIG_CONTROLLER_OOT=y" in (exported["crazyflie"] / "app-config").read_text()


class _Controller:
    """The generated controller compiled on the host with the stub headers and a stub PID (see host_driver.c)."""

    def __init__(
        self, app: Path, build: Path, defines: tuple[str, ...] = (), obs_dim: int = len(QUADROTOR_OBS)
    ) -> None:
        self.obs_dim = obs_dim
        library = build / "controller.so"
        src = app / "src"
        command = ["gcc", *CRAZYFLIE_FLAGS, *(f"-D{d}" for d in defines), "-shared", "-fPIC", f"-I{STUBS}", f"-I{src}"]
        _compile([*command, str(STUBS / "host_driver.c"), str(src / "robo_rl_policy.c"), "-o", str(library), "-lm"])
        self.lib = ctypes.CDLL(str(library))
        self.lib.cf_test_step.restype = ctypes.c_int
        self.lib.robo_rl_cf_fault.restype = ctypes.c_uint8
        self.lib.controllerOutOfTreeInit()
        self.calls = 0

    def step(
        self, state: np.ndarray, reference: np.ndarray, timestamp: int, position_mode: bool, step: int
    ) -> tuple[int, np.ndarray, np.ndarray]:
        """(mode: 2 = controlModeForce, -1 = the PID's output; normalized forces (4,); last observation)."""
        self.calls += 1
        forces, obs = np.zeros(4, np.float32), np.zeros(self.obs_dim, np.float32)
        pointer = ctypes.POINTER(ctypes.c_float)
        mode = self.lib.cf_test_step(
            np.ascontiguousarray(state, np.float32).ctypes.data_as(pointer),
            np.ascontiguousarray(reference, np.float32).ctypes.data_as(pointer),
            ctypes.c_uint32(timestamp),
            ctypes.c_int(int(position_mode)),
            ctypes.c_uint32(step),
            forces.ctypes.data_as(pointer),
            obs.ctypes.data_as(pointer),
        )
        return mode, forces, obs


def _expected_observation(state: np.ndarray, reference: np.ndarray, history: np.ndarray) -> np.ndarray:
    """The observation robo_rl's quadrotor/hover task would give in this state (its own rotation convention),
    with the position error clipped to +-0.5 m as the controller does (ROBO_RL_CF_POSITION_ERROR_CLIP)."""
    x, y, z, w = state[3:7]
    rotation = quat_to_rotmat(torch.tensor([w, x, y, z], dtype=torch.float64)).numpy().reshape(9)
    position_error = np.clip(state[0:3] - reference[0:3], -0.5, 0.5)
    return np.concatenate(
        [position_error, rotation, state[7:10], np.radians(state[10:13]), history.reshape(-1)]
    ).astype(np.float32)


def _forces(onnx_path: Path, obs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(actions in rotor order 0..3, expected normalized forces: the PWM ratios the actuator model gives them)."""
    action = _onnxruntime(onnx_path, obs)[0]
    by_rotor = action[[1, 0, 2, 3]]  # the file's action order is rotor_1, rotor_0, rotor_2, rotor_3
    return by_rotor, np.array([CF_ACTUATOR.command(float(a)) for a in by_rotor])


def test_crazyflie_controller_maps_state_to_policy_and_falls_back(
    exported: dict[str, Path], quadrotor_onnx: Path, tmp_path: Path
) -> None:
    # No minimum PID flight time and no ramp: the policy takes over on the first tick airborne with a position
    # setpoint (the hand-over itself: test_crazyflie_handover.py).
    controller = _Controller(exported["crazyflie"], tmp_path, ("ROBO_RL_CF_TAKEOFF_MIN_MS=0u", "ROBO_RL_CF_RAMP_MS=0u"))
    quaternion = np.array([0.1, -0.2, 0.3, 0.9])
    quaternion /= np.linalg.norm(quaternion)
    state = np.concatenate([[0.3, -0.2, 1.1], quaternion, [0.5, -0.1, 0.2], [30.0, -45.0, 10.0]])
    reference = np.array([0.0, 0.0, 1.0, 0.0, 0.0, 0.0])
    history = np.full((2, 4), CF_ACTUATOR.hover_action)
    ground = np.concatenate([[0.0, 0.0, 0.0], [0.0, 0.0, 0.0, 1.0], np.zeros(6)])

    assert controller.step(ground, reference, timestamp=0, position_mode=False, step=999)[0] == -1  # PID
    mode, forces, obs = controller.step(state, reference, timestamp=7, position_mode=True, step=1000)
    assert mode == 2  # controlModeForce
    np.testing.assert_allclose(obs, _expected_observation(state, reference, history), atol=1e-6)
    first_action, expected_forces = _forces(quadrotor_onnx, obs)
    np.testing.assert_allclose(forces, expected_forces, atol=1e-5)

    # Between policy steps (100 Hz in a 1 kHz loop) the command is held, whatever the state does.
    moved = state.copy()
    moved[0] += 0.5
    mode, held, _ = controller.step(moved, reference, timestamp=8, position_mode=True, step=1005)
    assert mode == 2 and np.array_equal(held, forces)

    # The next policy step sees the new state (its 0.8 m position error in x clipped to 0.5 m) and the previous
    # action, newest first.
    mode, forces, obs = controller.step(moved, reference, timestamp=9, position_mode=True, step=1010)
    history = np.stack([first_action, history[0]])
    np.testing.assert_allclose(obs, _expected_observation(moved, reference, history), atol=1e-6)
    assert obs[0] == np.float32(0.5)
    np.testing.assert_allclose(forces, _forces(quadrotor_onnx, obs)[1], atol=1e-5)

    # Back to the PID: stale setpoint (same timestamp for more than 500 ms), no position setpoint, NaN state.
    assert controller.step(moved, reference, timestamp=9, position_mode=True, step=1500)[0] == 2
    assert controller.step(moved, reference, timestamp=9, position_mode=True, step=1511)[0] == -1
    assert controller.lib.robo_rl_cf_fault() == 1  # the commander stopped
    assert controller.step(moved, reference, timestamp=10, position_mode=False, step=1520)[0] == -1
    assert controller.step(ground, reference, timestamp=10, position_mode=False, step=1525)[0] == -1  # landed
    broken = state.copy()
    broken[8] = np.nan
    assert controller.step(broken, reference, timestamp=11, position_mode=True, step=1530)[0] == -1
    assert controller.lib.robo_rl_cf_fault() == 2  # the policy rejected the NaN observation
    # Latched: the PID keeps flying until the request ends; a new take-off hands over again.
    assert controller.step(state, reference, timestamp=12, position_mode=True, step=1540)[0] == -1
    assert controller.step(ground, reference, timestamp=12, position_mode=False, step=1550)[0] == -1
    assert controller.step(state, reference, timestamp=13, position_mode=True, step=1560)[0] == 2
    # The PID runs on every tick (warm for a fallback), whoever commands the motors.
    assert controller.lib.cf_test_pid_calls() == controller.calls


def test_crazyflie_target_refuses_policies_it_cannot_fly(quadrotor_onnx: Path, tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"cannot compute observation\(s\) obs_0"):
        export_target(sb3_policy(tmp_path / "sb3.onnx"), "crazyflie", tmp_path / "sb3")
    with pytest.raises(ValueError, match=r"control period 0.03 s"):
        export_target(quadrotor_policy(tmp_path / "slow.onnx", dt=0.03), "crazyflie", tmp_path / "slow")
    assert not (tmp_path / "sb3").exists() and not (tmp_path / "slow").exists()


def test_crazyflie_target_refuses_a_policy_that_does_not_state_its_actuator(tmp_path: Path) -> None:
    """A file without robo_rl.actuator (exported before it, or by another stack) says nothing about what its
    motor actions mean (a thrust fraction? a PWM ratio?): the target refuses it in one line instead of guessing;
    the generic C targets, which only run the network, still take it."""
    legacy = quadrotor_policy(tmp_path / "legacy.onnx", actuator=None)
    expected = r"^crazyflie target: the policy does not state its actuator model \(robo_rl\.actuator\).*re-export"
    with pytest.raises(ValueError, match=expected) as refused:
        export_target(legacy, "crazyflie", tmp_path / "cf")
    assert "\n" not in str(refused.value) and not (tmp_path / "cf").exists()
    assert export_target(legacy, "c", tmp_path / "c").ok
    no_hover = quadrotor_policy(
        tmp_path / "no_hover.onnx", actuator=dataclasses.replace(CF_ACTUATOR, hover_action=None)
    )
    with pytest.raises(ValueError, match=r"has no hover_action"):
        export_target(no_hover, "crazyflie", tmp_path / "cf")


@needs_arm_gcc
def test_arduino_library_c_parts_and_example_compile_for_cortex_m4(exported: dict[str, Path], tmp_path: Path) -> None:
    out = exported["arduino"]
    _compile(["arm-none-eabi-gcc", *M4_FLAGS, *HOST_FLAGS, "-c", str(out / "src" / "robo_rl_policy.c")], cwd=tmp_path)
    sketch = out / "examples" / "RoboRlPolicy" / "RoboRlPolicy.ino"
    command = ["arm-none-eabi-g++", *M4_FLAGS, "-O2", "-std=gnu++17", "-Wall", "-Wextra", "-Werror", "-x", "c++"]
    _compile([*command, "-include", "Arduino.h", f"-I{ARDUINO_STUBS}", f"-I{out / 'src'}", "-c", str(sketch)], tmp_path)
    properties = dict(
        line.split("=", 1) for line in (out / "library.properties").read_text().splitlines() if "=" in line
    )
    assert properties["name"] == "RoboRlPolicy" and re.fullmatch(r"\d+\.\d+\.\d+", properties["version"])


def test_verify_reports_host_parity_and_qemu(quadrotor_onnx: Path, tmp_path: Path) -> None:
    report = export_target(quadrotor_onnx, "crazyflie", tmp_path / "cf", verify=True)
    assert report.host_parity is not None and report.host_parity.samples >= 1000
    assert report.host_parity.relative_error <= PARITY_TOLERANCE and report.nonfinite_rejected is True
    assert report.host_latency_us is not None and 0 < report.host_latency_us < 1000
    if qemu.missing_tools():
        assert report.qemu is None and any("QEMU check skipped" in note for note in report.notes)
        pytest.skip(f"QEMU part not checked: {', '.join(qemu.missing_tools())} not installed")
    assert report.qemu is not None and report.qemu.nonfinite_rejected
    assert report.qemu.vs_onnxruntime.within_tolerance and report.qemu.vs_host.within_tolerance
    # 26*24 + 24*4 multiply-accumulates and 28 exponentials: a few thousand instructions, not millions.
    assert report.qemu.instructions_per_inference is not None and 1000 < report.qemu.instructions_per_inference < 50_000
    assert report.ok
    saved = json.loads((tmp_path / "cf" / "report.json").read_text())
    assert saved["qemu"]["instructions_per_inference"] == report.qemu.instructions_per_inference
    assert "QEMU instructions per inference" in (tmp_path / "cf" / "README.md").read_text()


def test_int8_export_reports_its_error_within_the_quantization_bound(quadrotor_onnx: Path, tmp_path: Path) -> None:
    ir = load_policy(quadrotor_onnx)
    test_obs = sample_observations(ir.info, 512, seed=7)
    report = export_target(quadrotor_onnx, "c", tmp_path / "int8", int8=True, test_obs=test_obs)
    assert report.int8_error is not None and report.int8_error.samples == 512 and "int8" in report.numerics
    bound = error_bound(quantize(ir, None, activations="float"), test_obs)
    assert 0 < report.int8_error.max_abs_error <= bound.max() + 1e-5
    assert "int8_t" in (tmp_path / "int8" / "robo_rl_policy.c").read_text()
    assert any(line.startswith("host C (int8) vs onnxruntime") for line in report.lines())


def test_unknown_target_and_unsupported_operator_are_value_errors(quadrotor_onnx: Path, tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="unknown firmware target 'stm32'"):
        export_target(quadrotor_onnx, "stm32", tmp_path / "x")
    model = onnx.load(str(quadrotor_onnx))
    model.graph.node[3].op_type = "Softplus"  # the Elu after the first Gemm
    with pytest.raises(UnsupportedOperatorError, match="Softplus node 'node_elu'"):
        export_target(_save(model, tmp_path / "softplus.onnx"), "c", tmp_path / "y")


def test_render_refuses_unfilled_placeholders() -> None:
    assert render("a @@X@@ b", {"X": "1"}) == "a 1 b"
    with pytest.raises(KeyError, match="Y"):
        render("@@X@@ @@Y@@", {"X": "1"})
