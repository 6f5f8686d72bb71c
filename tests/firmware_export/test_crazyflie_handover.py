"""The Crazyflie controller's hand-over state machine, in C: the generated controller and the real generated policy
(exported from a robo_rl-style quadrotor ONNX file) fly scripted scenarios (crazyflie_stubs/handover_scenarios.c:
ground, take-off under the PID, hand-over ramp, policy, faults) on the host and on an emulated Cortex-M4 (QEMU
mps2-an386); the tests read the printed trace. The PID and the power distribution are test stand-ins
(crazyflie_stubs/firmware_stubs.c); the state estimate and the setpoints are scripted."""

from __future__ import annotations

import dataclasses
import importlib.util
import math
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

import numpy as np
import onnx
import onnxruntime as ort
import pytest
import torch

from robo_rl.firmware_export import qemu
from robo_rl.firmware_export.boards.crazyflie import (
    CRAZYFLIE_POSITION_ERROR_CLIP,
    crazyflie_clip_ranges,
    crazyflie_map_header,
)
from robo_rl.firmware_export.ir import PolicyInfo
from robo_rl.firmware_export.onnx_reader import load_policy
from robo_rl.firmware_export.targets import export_target
from robo_rl.sim.quadrotor.dynamics import quat_to_rotmat

STUBS = Path(__file__).parent / "crazyflie_stubs"
# The firmware's flags (gnu11 for its anonymous unions, -Wdouble-promotion), warnings as errors.
CRAZYFLIE_FLAGS = ["-O2", "-std=gnu11", "-Wall", "-Wextra", "-Werror", "-Wdouble-promotion"]
M4_FLAGS = ["-mcpu=cortex-m4", "-mthumb", "-mfloat-abi=hard", "-mfpu=fpv4-sp-d16"]

GROUND, TAKEOFF, RAMP, POLICY, FALLBACK = range(5)
FAULT_NONE, FAULT_COMMANDER, FAULT_POLICY_ERROR, FAULT_ACTION, FAULT_POSITION, FAULT_TILT = range(6)
MODE_LEGACY, MODE_FORCE = 0, 2
RAMP_TICKS = 500  # ROBO_RL_CF_RAMP_MS at 1 kHz
TAKEOFF_MIN_TICKS = 1000  # ROBO_RL_CF_TAKEOFF_MIN_MS
POLICY_PERIOD_TICKS = 10  # the policy's 100 Hz in the 1 kHz loop
QEMU_TOLERANCE = 1e-5  # float32 on both; the M4 fuses multiply-adds and its newlib expf may round differently

# (tick, state, fault) at every change of state or fault, per scenario, from the script in handover_scenarios.c
# (ticks at 1 kHz; the setpoint stream changes its timestamp every 10 ticks and times out 500 ticks after the
# last change).
EXPECTED_TRANSITIONS = {
    "flight": [
        (0, GROUND, FAULT_NONE),  # on the ground, no setpoint
        (200, TAKEOFF, FAULT_NONE),  # the stream starts: the PID takes off at 0.4 m/s towards z = 1 m
        (1450, RAMP, FAULT_NONE),  # 200 + 1250: z = 0.5 m, |position error| within the 0.5 m clip range
        (1950, POLICY, FAULT_NONE),  # + 500 ticks of ramp
        (3599, FALLBACK, FAULT_POLICY_ERROR),  # NaN velocity from tick 3597: rejected at the next policy step
        (4421, GROUND, FAULT_POLICY_ERROR),  # stream stopped at 3922 (last timestamp 3920): timeout, latch ends
        (6622, TAKEOFF, FAULT_POLICY_ERROR),  # landed (3922 + 2500), 200 ticks on the ground, a new stream
        (7872, RAMP, FAULT_NONE),  # 6622 + 1250
        (8372, POLICY, FAULT_NONE),
        (9422, FALLBACK, FAULT_POSITION),  # the setpoint jumps 1.5 m away
        (9672, GROUND, FAULT_POSITION),  # latched until the commander switches mode (9422 + 50 + 200)
    ],
    "conditions": [
        (0, GROUND, FAULT_NONE),
        (200, TAKEOFF, FAULT_NONE),  # 3000 ticks on the ground, 1000 at 0.15 m, 300 tilted 40°, 300 at 0.3 m
        (4800, RAMP, FAULT_NONE),  # level at 0.6 m: every condition holds at once
        (5300, POLICY, FAULT_NONE),
        (5991, FALLBACK, FAULT_COMMANDER),  # stream stopped at 5500, last timestamp 5490: timeout at 5991
        (5992, GROUND, FAULT_COMMANDER),
    ],
    "faults": [
        (0, GROUND, FAULT_NONE),
        (100, TAKEOFF, FAULT_NONE),  # airborne and in range at once (z = 0.4 m, setpoint 0.5 m)
        (1100, RAMP, FAULT_NONE),  # the minimum PID time binds: exactly 1000 ticks after the request
        (1600, POLICY, FAULT_NONE),
        (1800, FALLBACK, FAULT_TILT),  # 70° of tilt for one tick
        (2401, GROUND, FAULT_TILT),  # stream stopped at 1901 (last timestamp 1900)
        (2551, TAKEOFF, FAULT_TILT),
        (3551, RAMP, FAULT_NONE),
        (4051, POLICY, FAULT_NONE),
        (4251, FALLBACK, FAULT_POSITION),  # NaN position for one tick
        (4302, GROUND, FAULT_POSITION),  # the commander switches mode
        (4402, TAKEOFF, FAULT_POSITION),
        (5402, RAMP, FAULT_NONE),
        (5902, POLICY, FAULT_NONE),
        (6593, FALLBACK, FAULT_COMMANDER),  # the stream stops while the policy flies (last timestamp 6092)
        (6594, GROUND, FAULT_COMMANDER),
    ],
    "table": [
        (0, GROUND, FAULT_NONE),  # standing on a table at z = 0.5 m
        (100, TAKEOFF, FAULT_NONE),  # setpoint 0.6 m: 1500 ticks at 0.5 m (0.5 m above z = 0, not above the start)
        (1600, RAMP, FAULT_NONE),  # z = 0.75 m: 0.25 m above the start height
        (2100, POLICY, FAULT_NONE),
        (2200, FALLBACK, FAULT_COMMANDER),  # the commander switches mode
        (2201, GROUND, FAULT_COMMANDER),
    ],
}


def _load_targets_module() -> ModuleType:
    """test_targets.py, for its robo_rl-style quadrotor policy builder (the tests import in importlib mode)."""
    path = Path(__file__).with_name("test_targets.py")
    spec = importlib.util.spec_from_file_location("_crazyflie_handover_targets", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # before running it, as an import does (dataclasses look the module up)
    spec.loader.exec_module(module)
    return module


def _floats(words: list[str]) -> np.ndarray:
    """Floats printed as their IEEE-754 bit patterns (8 hex digits each)."""
    return np.array([int(word, 16) for word in words], dtype=np.uint32).view(np.float32)


@dataclass
class Scenario:
    """One scenario's trace: ints (N, 5) tick, state, fault, mode, policy steps; blend (N,); out, pid, policy
    (N, 4) motor commands as PWM ratios; runs: the policy evaluations (tick, code, inputs, observation, action)."""

    name: str
    ints: np.ndarray
    blend: np.ndarray
    out: np.ndarray
    pid: np.ndarray
    policy: np.ndarray
    runs: list[tuple[int, int, np.ndarray, np.ndarray, np.ndarray]]

    @property
    def state(self) -> np.ndarray:
        return self.ints[:, 1]

    @property
    def fault(self) -> np.ndarray:
        return self.ints[:, 2]

    @property
    def mode(self) -> np.ndarray:
        return self.ints[:, 3]

    def transitions(self) -> list[tuple[int, int, int]]:
        keys = self.ints[:, 1:3]
        changed = np.concatenate([[True], np.any(keys[1:] != keys[:-1], axis=1)])
        return [(int(t), int(s), int(f)) for t, s, f in self.ints[changed][:, :3]]

    def segments(self, state: int) -> list[tuple[int, int]]:
        """[start, stop) tick ranges spent in `state`."""
        inside = np.concatenate([[False], self.state == state, [False]]).astype(np.int8)
        edges = np.flatnonzero(np.diff(inside))
        return list(zip(edges[::2].tolist(), edges[1::2].tolist(), strict=True))


def parse_trace(text: str, obs_dim: int, action_dim: int, state_size: int = 0) -> dict[str, Scenario]:
    """The trace's scenarios; P lines of a policy with memory end with its `state_size` entries (read by
    test_crazyflie_memory.py), which the runs here leave out."""
    lines = [line.split() for line in text.splitlines() if line[:2] in ("S ", "T ", "P ") or line == "E"]
    assert lines and lines[-1] == ["E"], f"incomplete trace:\n{text[-2000:]}"
    scenarios: dict[str, Scenario] = {}
    rows: dict[str, list[list[str]]] = {}
    runs: dict[str, list[tuple[int, int, np.ndarray, np.ndarray, np.ndarray]]] = {}
    names: dict[str, str] = {}
    for words in lines[:-1]:
        if words[0] == "S":
            names[words[1]] = words[2]
            rows[words[2]], runs[words[2]] = [], []
        elif words[0] == "T":
            assert len(words) == 20
            rows[names[words[1]]].append(words[2:])
        else:
            assert len(words) == 4 + 19 + obs_dim + action_dim + state_size
            values = _floats(words[4 : len(words) - state_size])
            run = (int(words[2]), int(words[3]), values[:19], values[19 : 19 + obs_dim], values[19 + obs_dim :])
            runs[names[words[1]]].append(run)
    for name, table in rows.items():
        ints = np.array([[int(word) for word in row[:5]] for row in table], dtype=np.int64)
        floats = np.stack([_floats(row[5:]) for row in table])
        assert np.array_equal(ints[:, 0], np.arange(len(ints))), f"{name}: ticks out of order"
        scenarios[name] = Scenario(
            name, ints, floats[:, 0], floats[:, 1:5], floats[:, 5:9], floats[:, 9:13], runs[name]
        )
    return scenarios


def _run(command: list[str], cwd: Path | None = None, timeout: float = 120.0) -> str:
    done = subprocess.run(command, capture_output=True, text=True, cwd=cwd, check=False, timeout=timeout)
    assert done.returncode == 0, f"{' '.join(command)}\n{done.stdout[-4000:]}{done.stderr[-4000:]}"
    return done.stdout + done.stderr


def build_host_trace(app: Path, build: Path, defines: tuple[str, ...] = ()) -> str:
    """handover_host.c with the generated controller and policy, built with the firmware's flags; its trace."""
    build.mkdir(parents=True, exist_ok=True)
    src, program = app / "src", build / "handover_host"
    sources = [str(STUBS / "handover_host.c"), str(src / "robo_rl_policy.c")]
    defines_flags = [f"-D{define}" for define in defines]
    _run(["gcc", *CRAZYFLIE_FLAGS, *defines_flags, f"-I{STUBS}", f"-I{src}", *sources, "-o", str(program), "-lm"])
    return _run([str(program)])


def build_qemu_trace(app: Path, build: Path) -> str:
    """handover_qemu.c as a bare-metal Cortex-M4F firmware (templates/qemu's startup code, semihosting and
    linker script), run in QEMU mps2-an386; its trace."""
    build.mkdir(parents=True, exist_ok=True)
    src, firmware = app / "src", build / "handover.elf"
    templates = qemu.TEMPLATES
    command = ["arm-none-eabi-gcc", *M4_FLAGS, *CRAZYFLIE_FLAGS, "-ffunction-sections", "-fdata-sections"]
    command += [f"-I{STUBS}", f"-I{src}", f"-I{templates}"]
    command += [str(templates / "startup.c"), str(templates / "semihosting.c")]
    command += [str(STUBS / "handover_qemu.c"), str(src / "robo_rl_policy.c")]
    command += ["-T", str(templates / qemu.LINKER_SCRIPT), *qemu.LINK_FLAGS, "-o", str(firmware)]
    _run(command)
    machine = ["-M", "mps2-an386", "-cpu", "cortex-m4", "-nographic", "-nic", "none", "-monitor", "none"]
    machine += ["-semihosting-config", "enable=on,target=native", "-kernel", str(firmware)]
    output = _run([qemu.QEMU, *machine])
    assert "ROBO_RL_QEMU FAULT" not in output
    return output


needs_qemu = pytest.mark.skipif(
    bool(qemu.missing_tools()), reason=f"QEMU run needs {', '.join(qemu.missing_tools())} (make system-deps)"
)


@pytest.fixture(scope="module")
def targets() -> ModuleType:
    return _load_targets_module()


@pytest.fixture(scope="module")
def policy_onnx(targets: ModuleType, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return targets.quadrotor_policy(tmp_path_factory.mktemp("handover_policy") / "policy.onnx")


@pytest.fixture(scope="module")
def info(policy_onnx: Path) -> PolicyInfo:
    return load_policy(onnx.load(str(policy_onnx))).info


@pytest.fixture(scope="module")
def app(policy_onnx: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return export_target(policy_onnx, "crazyflie", tmp_path_factory.mktemp("handover_app") / "cf").out_dir


@pytest.fixture(scope="module")
def host_text(app: Path, tmp_path_factory: pytest.TempPathFactory) -> str:
    return build_host_trace(app, tmp_path_factory.mktemp("handover_host"))


@pytest.fixture(scope="module")
def host(host_text: str, info: PolicyInfo) -> dict[str, Scenario]:
    return parse_trace(host_text, len(info.obs_names), len(info.action_names))


def test_trace_has_the_scripted_transitions(host: dict[str, Scenario]) -> None:
    assert list(host) == list(EXPECTED_TRANSITIONS)
    for name, expected in EXPECTED_TRANSITIONS.items():
        assert host[name].transitions() == expected, name


def test_pid_flies_on_the_ground_takeoff_and_fallback(host: dict[str, Scenario]) -> None:
    for scenario in host.values():
        pid_states = np.isin(scenario.state, [GROUND, TAKEOFF, FALLBACK])
        # The PID's own output goes to the motors (legacy control mode), untouched.
        assert np.all(scenario.mode[pid_states] == MODE_LEGACY)
        np.testing.assert_array_equal(scenario.out[pid_states], scenario.pid[pid_states])
        assert np.all(scenario.blend[pid_states] == 0.0)
        # On the ground without a setpoint the (stock-like) PID cuts thrust: motors off; then it takes off.
        first_request = scenario.segments(TAKEOFF)[0][0]
        assert first_request >= 100 and np.all(scenario.out[:first_request] == 0.0)
        assert np.all(scenario.out[scenario.state == TAKEOFF] > 0.0)
        # The policy never runs outside RAMP and POLICY.
        run_states = {int(scenario.state[tick]) for tick, *_ in scenario.runs}
        assert run_states <= {RAMP, POLICY, FALLBACK}  # FALLBACK: the run that found the fault
        for tick, code, *_ in scenario.runs:
            if scenario.state[tick] == FALLBACK:
                assert code != 0 and scenario.fault[tick] == FAULT_POLICY_ERROR


def test_never_hands_over_on_the_ground(host: dict[str, Scenario]) -> None:
    conditions = host["conditions"]
    # Requested from tick 200; each condition in turn keeps the PID in command: on the ground with the setpoint
    # 0.1 m above (3000 ticks, long past the minimum PID time, the error within the clip range), at 0.15 m with
    # the setpoint at 0.3 m (below the take-off height), tilted by 40° (beyond 30°), 0.7 m below the setpoint
    # (outside the clip range).
    for start, stop in [(200, 3200), (3200, 4200), (4200, 4500), (4500, 4800)]:
        assert np.all(conditions.state[start:stop] == TAKEOFF), (start, stop)
        assert np.all(conditions.ints[start:stop, 4] == 0)  # the policy has not run
        assert np.all(conditions.out[start:stop] > 0.0)  # the PID flies (its stand-in's thrust)
    assert conditions.state[4800] == RAMP
    # In every scenario the policy starts airborne: at least 0.2 m above the start height (0 here), with the
    # position error within the 0.5 m clip range, after at least 1000 ticks of PID flight.
    for scenario in host.values():
        takeoffs = scenario.segments(TAKEOFF)
        for start, _ in scenario.segments(RAMP):
            request = max(t for t, _ in takeoffs if t < start)
            assert start - request >= TAKEOFF_MIN_TICKS
            inputs = next(run[2] for run in scenario.runs if run[0] == start)
            start_height = 0.5 if scenario.name == "table" else 0.0
            assert inputs[2] - start_height >= 0.2 - 1e-6
            assert np.all(np.abs(inputs[0:3] - inputs[13:16]) <= CRAZYFLIE_POSITION_ERROR_CLIP + 1e-6)
    # Time binds in "faults" (airborne at once): exactly the minimum PID time after the request.
    faults = host["faults"]
    for (request, _), (start, _) in zip(faults.segments(TAKEOFF), faults.segments(RAMP), strict=True):
        assert start - request == TAKEOFF_MIN_TICKS


def test_ramp_blends_linearly_from_pid_to_policy(host: dict[str, Scenario]) -> None:
    ramps = 0
    for scenario in host.values():
        for start, stop in scenario.segments(RAMP):
            ramps += 1
            assert stop - start == RAMP_TICKS and scenario.state[stop] == POLICY
            weight = scenario.blend[start:stop]
            # w = elapsed / ramp length, from 0, strictly increasing, then 1 in POLICY.
            np.testing.assert_array_equal(weight, np.arange(RAMP_TICKS, dtype=np.float32) / np.float32(RAMP_TICKS))
            assert weight[0] == 0.0 and np.all(np.diff(weight) > 0) and scenario.blend[stop] == 1.0
            assert np.all(scenario.mode[start : stop + 1] == MODE_FORCE)
            out, pid, policy = scenario.out[start:stop], scenario.pid[start:stop], scenario.policy[start:stop]
            np.testing.assert_allclose(out, (1 - weight[:, None]) * pid + weight[:, None] * policy, atol=1e-6)
            # Each motor command lies between the PID's and the policy's: a convex blend.
            assert np.all(out >= np.minimum(pid, policy) - 1e-6) and np.all(out <= np.maximum(pid, policy) + 1e-6)
            # It starts at the PID's command and ends at the policy's.
            np.testing.assert_array_equal(out[0], pid[0])
            np.testing.assert_array_equal(scenario.out[stop], scenario.policy[stop])
        for start, stop in scenario.segments(POLICY):
            np.testing.assert_array_equal(scenario.out[start:stop], scenario.policy[start:stop])
            assert np.all(scenario.blend[start:stop] == 1.0)
    assert ramps == 7


def _observation_sources(inputs: np.ndarray, history: np.ndarray) -> dict[str, float]:
    """Every observation name the quadrotor policy can use, from the scripted inputs, as robo_rl's simulator
    computes it (its own quaternion-to-rotation convention)."""
    x, y, z, w = (float(v) for v in inputs[3:7])
    values = {}
    if all(math.isfinite(v) for v in (x, y, z, w)):
        rotation = quat_to_rotmat(torch.tensor([w, x, y, z], dtype=torch.float64)).numpy().reshape(9)
    else:
        rotation = np.full(9, np.nan)
    for a, axis in enumerate("xyz"):
        values[f"position_error_{axis}"] = inputs[a] - inputs[13 + a]
        values[f"velocity_{axis}"] = inputs[7 + a]
        values[f"velocity_error_{axis}"] = inputs[7 + a] - inputs[16 + a]
        values[f"reference_velocity_{axis}"] = inputs[16 + a]
        values[f"angular_velocity_{axis}"] = math.radians(inputs[10 + a])
    for r in range(3):
        for c in range(3):
            values[f"rotation_{r}{c}"] = rotation[3 * r + c]
    for k in range(len(history)):
        for i in range(4):
            values[f"previous_action_{k}_{i}"] = history[k, i]
    return values


def _clip_bounds(info: PolicyInfo, position_clip: float) -> tuple[np.ndarray, np.ndarray]:
    low, high = np.array(info.obs_low, dtype=np.float64), np.array(info.obs_high, dtype=np.float64)
    for i, name in enumerate(info.obs_names):
        if name.startswith("position_error_"):
            low[i], high[i] = max(low[i], -position_clip), min(high[i], position_clip)
    return low, high


def check_policy_runs(
    scenarios: dict[str, Scenario], info: PolicyInfo, onnx_path: Path, position_clip: float
) -> dict[str, int]:
    """Every policy evaluation saw the observation the simulator would build from the scripted state, clipped to
    the trained range, and computed what onnxruntime computes; the held command is its actuator model's motor
    command (robo_rl.actuator: the action linear in the PWM ratio)."""
    session = ort.InferenceSession(str(onnx_path), providers=["CPUExecutionProvider"])
    rotor_index = [info.action_names.index(f"rotor_{i}") for i in range(4)]
    rows = 1 + max(int(n.split("_")[2]) for n in info.obs_names if n.startswith("previous_action_"))
    low, high = _clip_bounds(info, position_clip)
    counts = {"runs": 0, "rejected": 0, "position_clipped": 0}
    actuator = info.actuator
    assert actuator is not None and actuator.hover_action is not None
    for scenario in scenarios.values():
        history = np.full((rows, 4), actuator.hover_action)
        for tick, code, inputs, observation, action in scenario.runs:
            counts["runs"] += 1
            if scenario.state[tick - 1] == TAKEOFF:  # the first tick of a ramp: a fresh action history
                history = np.full((rows, 4), actuator.hover_action)
            sources = _observation_sources(inputs.astype(np.float64), history)
            raw = np.array([sources[name] for name in info.obs_names], dtype=np.float64)
            expected = np.where(np.isfinite(raw), np.clip(raw, low, high), raw)
            np.testing.assert_allclose(observation, expected, atol=1e-5, equal_nan=True)
            counts["position_clipped"] += int(np.any(np.abs(raw[:3]) > position_clip))
            if not np.all(np.isfinite(raw)):
                assert code == 1  # the policy's non-finite check: action not written, fault
                assert scenario.state[tick] == FALLBACK and scenario.fault[tick] == FAULT_POLICY_ERROR
                counts["rejected"] += 1
                continue
            assert code == 0
            reference = session.run(None, {session.get_inputs()[0].name: observation[None, :]})[0][0]
            np.testing.assert_allclose(action, reference, atol=1e-5 * max(1.0, float(np.max(np.abs(reference)))))
            by_rotor = action[rotor_index]
            commands = [actuator.command(float(a)) for a in by_rotor]
            np.testing.assert_allclose(scenario.policy[tick], commands, atol=1e-6)
            history = np.concatenate([by_rotor[None, :], history[:-1]])
    return counts


def test_policy_sees_the_clipped_observation_and_computes_what_onnxruntime_does(
    host: dict[str, Scenario], info: PolicyInfo, policy_onnx: Path
) -> None:
    counts = check_policy_runs(host, info, policy_onnx, CRAZYFLIE_POSITION_ERROR_CLIP)
    assert counts["runs"] > 300 and counts["rejected"] == 1
    # The 0.8 m setpoint step: the policy kept flying with its position error clipped to 0.5 m.
    assert counts["position_clipped"] >= 25
    flight = host["flight"]
    # Ticks 3200-3499 (after the 2500-tick climb from tick 200 and 500 ticks of hover): 0.82 m error in x.
    clipped = [obs for tick, _, _, obs, _ in flight.runs if 3200 <= tick < 3500]
    assert len(clipped) == 30 and all(obs[0] == np.float32(CRAZYFLIE_POSITION_ERROR_CLIP) for obs in clipped)
    assert np.all(flight.state[3200:3500] == POLICY)


def test_faults_hand_back_to_the_pid_and_latch(host: dict[str, Scenario]) -> None:
    flight, faults = host["flight"], host["faults"]
    # NaN velocity from tick 3597: the next policy step (tick 3599) rejects it; immediate faults for a position
    # error beyond 1 m (tick 9422), a NaN position (4251) and 70° of tilt (1800).
    assert flight.fault[3599] == FAULT_POLICY_ERROR and flight.state[3598] == POLICY
    assert 3599 - 3597 < POLICY_PERIOD_TICKS
    assert (flight.state[9421], flight.state[9422], flight.fault[9422]) == (POLICY, FALLBACK, FAULT_POSITION)
    assert (faults.state[4250], faults.state[4251], faults.fault[4251]) == (POLICY, FALLBACK, FAULT_POSITION)
    assert (faults.state[1799], faults.state[1800], faults.fault[1800]) == (POLICY, FALLBACK, FAULT_TILT)
    # Latched: the state is fine again and the setpoint still streams, yet the PID keeps flying until the request
    # ends; a fallback never goes straight back to the policy.
    assert np.all(flight.state[3599:4421] == FALLBACK) and np.all(flight.state[9422:9672] == FALLBACK)
    for scenario in host.values():
        states = scenario.state
        after_fallback = states[1:][states[:-1] == FALLBACK]
        assert set(after_fallback.tolist()) <= {FALLBACK, GROUND}
    # The commander stopping while the policy flies is a fault too (then GROUND once the request has ended).
    assert host["conditions"].transitions()[-2:] == [(5991, FALLBACK, FAULT_COMMANDER), (5992, GROUND, 1)]


@needs_qemu
def test_qemu_trace_matches_the_host_trace(
    app: Path, host_text: str, host: dict[str, Scenario], info: PolicyInfo, tmp_path: Path
) -> None:
    qemu_text = build_qemu_trace(app, tmp_path)
    on_target = parse_trace(qemu_text, len(info.obs_names), len(info.action_names))
    assert list(on_target) == list(host)
    for name, scenario in host.items():
        other = on_target[name]
        # The state machine takes the same decisions on the same ticks; the numbers agree to float rounding.
        np.testing.assert_array_equal(other.ints, scenario.ints)
        for field in ("blend", "out", "pid", "policy"):
            np.testing.assert_allclose(getattr(other, field), getattr(scenario, field), atol=QEMU_TOLERANCE)
        assert [run[:2] for run in other.runs] == [run[:2] for run in scenario.runs]
        for mine, theirs in zip(other.runs, scenario.runs, strict=True):
            for a, b in zip(mine[2:], theirs[2:], strict=True):
                np.testing.assert_allclose(a, b, atol=QEMU_TOLERANCE, equal_nan=True)
    host_lines = [line for line in host_text.splitlines() if line[:1] in "STPE"]
    qemu_lines = [line for line in qemu_text.splitlines() if line[:1] in "STPE"]
    assert len(qemu_lines) == len(host_lines)


def test_defines_override_clip_ramp_takeoff_and_fallback(
    app: Path, info: PolicyInfo, policy_onnx: Path, tmp_path: Path
) -> None:
    defines = (
        "ROBO_RL_CF_POSITION_ERROR_CLIP=0.3f",
        "ROBO_RL_CF_RAMP_MS=200u",
        "ROBO_RL_CF_TAKEOFF_MIN_MS=300u",
        "ROBO_RL_CF_FALLBACK_MOTORS_OFF=1",
    )
    scenarios = parse_trace(build_host_trace(app, tmp_path, defines), len(info.obs_names), len(info.action_names))
    counts = check_policy_runs(scenarios, info, policy_onnx, 0.3)
    assert counts["position_clipped"] > 0
    fallbacks = 0
    for scenario in scenarios.values():
        assert all(stop - start == 200 for start, stop in scenario.segments(RAMP))
        fallback = scenario.state == FALLBACK
        fallbacks += int(np.sum(fallback))
        assert np.all(scenario.mode[fallback] == MODE_FORCE)
        assert np.all(scenario.out[fallback] == 0.0)  # motors off instead of the PID
    assert fallbacks > 100
    faults = scenarios["faults"]
    for (request, _), (start, _) in zip(faults.segments(TAKEOFF), faults.segments(RAMP), strict=True):
        assert start - request == 300
    # The take-off in "flight" now waits for |position error z| <= 0.3 m: z = 0.7 m, 1750 ticks at 0.4 m/s.
    assert scenarios["flight"].segments(RAMP)[0][0] == 200 + 1750


def test_map_header_clips_to_the_metadata_and_the_position_error_range(info: PolicyInfo) -> None:
    header = crazyflie_map_header(info)
    assert f"#define ROBO_RL_CF_POSITION_ERROR_CLIP ({CRAZYFLIE_POSITION_ERROR_CLIP}f)" in header
    ranges = {name: (low, high) for _, name, low, high in crazyflie_clip_ranges(info)}
    clip = "(float)(ROBO_RL_CF_POSITION_ERROR_CLIP)"
    assert ranges["position_error_x"] == (f"-{clip}", clip)
    assert ranges["rotation_22"] == ("-1.0f", "1.0f") and ranges["previous_action_1_3"] == ("-1.0f", "1.0f")
    assert "velocity_x" not in ranges and "angular_velocity_z" not in ranges  # unbounded in the metadata
    assert "not clipped (unbounded in the metadata): velocity_x" in header
    # Finite metadata bounds on the position error: the narrower of the two ranges.
    bounded = dataclasses.replace(
        info, obs_low=(-0.3, -2.0, *info.obs_low[2:]), obs_high=(0.3, 2.0, *info.obs_high[2:])
    )
    ranges = {name: (low, high) for _, name, low, high in crazyflie_clip_ranges(bounded)}
    low, high = "0.30000001192092896f", "0.30000001192092896f"  # 0.3 as a float32
    assert ranges["position_error_x"] == (f"fmaxf(-{low}, -{clip})", f"fminf({high}, {clip})")
    assert ranges["position_error_y"] == (f"fmaxf(-2.0f, -{clip})", f"fminf(2.0f, {clip})")


def test_readme_documents_the_handover(app: Path) -> None:
    readme = (app / "README.md").read_text()
    sources = (app / "src" / "robo_rl_controller.c").read_text() + (app / "src" / "robo_rl_crazyflie_map.h").read_text()
    assert "## Hand-over state machine" in readme and "**latched**" in readme
    assert "`obs[0]` position_error_x: ±`ROBO_RL_CF_POSITION_ERROR_CLIP`" in readme
    # Every #define the user may override is in the settings table, with the default the sources have.
    defaults = dict(re.findall(r"#ifndef (ROBO_RL_CF_\w+)\n#define \1 (\S+)", sources))
    assert len(defaults) == 10 and "ROBO_RL_CF_TAKEOFF_HEIGHT" in defaults
    for name, value in defaults.items():
        assert f"| `{name}` | {value.strip('()')} |" in readme, name


@pytest.mark.skipif(shutil.which("arm-none-eabi-gcc") is None, reason="arm-none-eabi-gcc not installed")
def test_controller_with_scenarios_builds_for_cortex_m4_without_warnings(app: Path, tmp_path: Path) -> None:
    src = app / "src"
    command = ["arm-none-eabi-gcc", *M4_FLAGS, *CRAZYFLIE_FLAGS, f"-I{STUBS}", f"-I{src}", "-c"]
    _run([*command, str(STUBS / "handover_scenarios.c"), "-o", str(tmp_path / "scenarios.o")])
