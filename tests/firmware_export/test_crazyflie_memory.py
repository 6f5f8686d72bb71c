"""The Crazyflie controller app with a policy with memory (a RAPTOR-sized student: 22 observations → dense 32 → GRU 32
→ 4 motor commands): it carries the GRU's state from one policy step to the next, resets it when the policy takes
over (hand-over) and whenever it falls back to the PID, on the scripted scenarios of test_crazyflie_handover.py
(stepped time: 1 kHz stabilizer ticks, the stand-in PID and power distribution of crazyflie_stubs/). Each policy
step's action and state are checked against onnxruntime (Microsoft's runtime of the ONNX GRU operator) fed the
state the reset rule prescribes (`robo_rl.memory_spec.RESET_RULE`: the reset value when the policy takes over or
after a safe command, the previous step's h_out otherwise). Before each take-off the scenarios plant a stale state
(0.5 everywhere) in the controller's memory, as a previous flight could leave it: the hand-over must not pass it
on."""

from __future__ import annotations

import importlib.util
import sys
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

import numpy as np
import onnxruntime as ort
import pytest
import torch

from robo_rl.export.onnx import PolicyMetadata, export_onnx
from robo_rl.firmware_export import qemu
from robo_rl.firmware_export.targets import export_target
from robo_rl.modules.actor_critic import PolicyConfig
from robo_rl.modules.normalizer import EmpiricalNormalizer
from robo_rl.modules.recurrent import GruCore, RecurrentActorCritic
from robo_rl.spaces import SpaceSpec

HOVER_OBS = (
    [f"position_error_{a}" for a in "xyz"]
    + [f"rotation_{r}{c}" for r in range(3) for c in range(3)]
    + [f"velocity_{a}" for a in "xyz"]
    + [f"angular_velocity_{a}" for a in "xyz"]
    + [f"previous_action_0_{i}" for i in range(4)]
)
"""The hover task's 22 observations with one previous action (robo_rl/sim/quadrotor/hover.py, action_history=1)."""
STATE_SIZE = 32
STALE = np.float32(0.5)
"""What handover_scenarios.c's start_stream writes into the controller's memory before each take-off."""
TOLERANCE = 1e-5


def _load(name: str) -> ModuleType:
    """A sibling test module (the tests import in importlib mode), for its builders and expected transitions."""
    path = Path(__file__).with_name(f"{name}.py")
    spec = importlib.util.spec_from_file_location(f"_crazyflie_memory_{name}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


@dataclass
class MemoryTrace:
    """The memory part of one scenario's trace: runs (tick, code, observation, action, memory after the tick) from
    the P lines; shown (tick, memory after the tick) from the M lines, where it changed."""

    runs: list[tuple[int, int, np.ndarray, np.ndarray, np.ndarray]]
    shown: list[tuple[int, np.ndarray]]

    def memory_before(self, tick: int) -> np.ndarray:
        """The controller's memory going into `tick` (zeros after init until an M line says otherwise)."""
        before = [memory for t, memory in self.shown if t < tick]
        return before[-1] if before else np.zeros(STATE_SIZE, np.float32)

    def memory_after(self, tick: int) -> np.ndarray:
        return self.memory_before(tick + 1)


def parse_memory(text: str, obs_dim: int, action_dim: int, floats: object) -> dict[str, MemoryTrace]:
    names: dict[str, str] = {}
    traces: dict[str, MemoryTrace] = {}
    for line in text.splitlines():
        words = line.split()
        if line.startswith("S "):
            names[words[1]] = words[2]
            traces[words[2]] = MemoryTrace([], [])
        elif line.startswith("P "):
            values = floats(words[4:])  # type: ignore[operator]
            observation = values[19 : 19 + obs_dim]
            action = values[19 + obs_dim : 19 + obs_dim + action_dim]
            memory = values[19 + obs_dim + action_dim :]
            assert memory.shape == (STATE_SIZE,)
            traces[names[words[1]]].runs.append((int(words[2]), int(words[3]), observation, action, memory))
        elif line.startswith("M "):
            traces[names[words[1]]].shown.append((int(words[2]), floats(words[3:])))  # type: ignore[operator]
    return traces


def _gru(policy: RecurrentActorCritic) -> torch.nn.GRU:
    assert isinstance(policy.core, GruCore)
    return policy.core.gru


def _normalizer(policy: RecurrentActorCritic) -> EmpiricalNormalizer:
    assert isinstance(policy.obs_normalizer, EmpiricalNormalizer)
    return policy.obs_normalizer


@pytest.fixture(scope="module")
def handover() -> ModuleType:
    return _load("test_crazyflie_handover")


@pytest.fixture(scope="module")
def policy_onnx(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A GRU student (22 → dense 32 → GRU 32 → 4) with the hover task's metadata and a Crazyflie actuator."""
    actuator = _load("test_targets").CF_ACTUATOR
    torch.manual_seed(0)
    cfg = PolicyConfig(actor_hidden=(32,), memory="gru", memory_size=STATE_SIZE)
    policy = RecurrentActorCritic(len(HOVER_OBS), -torch.ones(4), torch.ones(4), cfg)
    with torch.no_grad():  # a trained-looking head and statistics: actions away from 0, a state that matters
        for parameter in policy.head.parameters():
            parameter.normal_(0.0, 0.3)
        for parameter in _gru(policy).parameters():
            parameter.mul_(2.0)
        _normalizer(policy).update(torch.randn(256, len(HOVER_OBS)) * 0.3)
    bounded = [name.startswith(("rotation_", "previous_action_")) for name in HOVER_OBS]
    obs_spec = SpaceSpec(
        tuple(HOVER_OBS),
        tuple(-1.0 if b else -float("inf") for b in bounded),
        tuple(1.0 if b else float("inf") for b in bounded),
        tuple("1" if b else "SI" for b in bounded),
    )
    action_spec = SpaceSpec(tuple(f"rotor_{i}" for i in range(4)), (-1.0,) * 4, (1.0,) * 4, ("1",) * 4)
    metadata = PolicyMetadata(
        obs_spec, action_spec, 0.01, "quadrotor/hover", "c", "g", actuator=actuator, memory=policy.memory
    )
    return export_onnx(policy.deterministic_actor(), metadata, tmp_path_factory.mktemp("gru_cf") / "policy.onnx")


@pytest.fixture(scope="module")
def app(policy_onnx: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return export_target(policy_onnx, "crazyflie", tmp_path_factory.mktemp("gru_cf_app") / "cf").out_dir


@pytest.fixture(scope="module")
def host_text(handover: ModuleType, app: Path, tmp_path_factory: pytest.TempPathFactory) -> str:
    return handover.build_host_trace(app, tmp_path_factory.mktemp("gru_cf_host"))


@pytest.fixture(scope="module")
def scenarios(handover: ModuleType, host_text: str) -> dict:
    return handover.parse_trace(host_text, len(HOVER_OBS), 4, STATE_SIZE)


@pytest.fixture(scope="module")
def memory(handover: ModuleType, host_text: str) -> dict[str, MemoryTrace]:
    return parse_memory(host_text, len(HOVER_OBS), 4, handover._floats)


def _step(session: ort.InferenceSession, observation: np.ndarray, h_in: np.ndarray) -> tuple[np.ndarray, ...]:
    action, h_out = session.run(["action", "h_out"], {"obs": observation[None, :], "h_in": h_in[None, :]})
    return action[0], h_out[0]


def test_the_hand_over_state_machine_is_unchanged_by_the_memory(handover: ModuleType, scenarios: dict) -> None:
    assert list(scenarios) == list(handover.EXPECTED_TRANSITIONS)
    for name, expected in handover.EXPECTED_TRANSITIONS.items():
        assert scenarios[name].transitions() == expected, name


def check_memory_runs(
    handover: ModuleType, scenarios: dict, memory: dict[str, MemoryTrace], session: ort.InferenceSession
) -> dict[str, int]:
    """Every policy step computed what onnxruntime computes from the state the reset rule prescribes: the reset
    value at the hand-over (though a stale state was in the memory going into it), the previous step's h_out
    after; a rejected step ends in the reset value (the fallback's reset)."""
    reset = np.zeros(STATE_SIZE, np.float32)
    counts = {"first": 0, "carried": 0, "carried_differs_from_reset": 0, "rejected": 0}
    for name, scenario in scenarios.items():
        trace = memory[name]
        hand_overs = {start for start, _ in scenario.segments(handover.RAMP)}
        h_in = reset
        for tick, code, observation, action, after in trace.runs:
            if tick in hand_overs:
                counts["first"] += 1
                # The stale state planted before the take-off was there going into the hand-over tick...
                np.testing.assert_array_equal(trace.memory_before(tick), np.full(STATE_SIZE, STALE))
                # ... and the policy did not see it: with it, the action would have been another.
                stale_action, _ = _step(session, observation, np.full(STATE_SIZE, STALE))
                assert np.max(np.abs(stale_action - action)) > 1e-3
                h_in = reset
            else:
                counts["carried"] += 1
            if code != 0:  # the policy rejected its observation: fault, and the fallback resets the memory
                counts["rejected"] += 1
                np.testing.assert_array_equal(after, reset)
                continue
            expected_action, expected_state = _step(session, observation, h_in)
            np.testing.assert_allclose(action, expected_action, atol=TOLERANCE)
            np.testing.assert_allclose(after, expected_state, atol=TOLERANCE)
            if tick not in hand_overs:
                reset_action, _ = _step(session, observation, reset)
                counts["carried_differs_from_reset"] += int(np.max(np.abs(reset_action - action)) > 1e-3)
            h_in = after
    return counts


def test_state_is_reset_at_the_hand_over_and_carried_between_policy_steps(
    handover: ModuleType, scenarios: dict, memory: dict[str, MemoryTrace], policy_onnx: Path
) -> None:
    session = ort.InferenceSession(str(policy_onnx), providers=["CPUExecutionProvider"])
    counts = check_memory_runs(handover, scenarios, memory, session)
    assert counts["first"] == 7 and counts["rejected"] == 1
    assert counts["carried"] > 300 and counts["carried_differs_from_reset"] > counts["carried"] // 2


def test_state_is_reset_whenever_the_app_falls_back_to_the_pid(
    handover: ModuleType, scenarios: dict, memory: dict[str, MemoryTrace]
) -> None:
    fallbacks = 0
    for name, scenario in scenarios.items():
        trace = memory[name]
        for start, _ in scenario.segments(handover.FALLBACK):
            fallbacks += 1
            assert np.any(trace.memory_before(start) != 0.0)  # the policy had been carrying a state ...
            np.testing.assert_array_equal(trace.memory_after(start), np.zeros(STATE_SIZE))  # ... reset at the fault
            # Nothing changes it while the PID flies: the next change, if any, is the next take-off's stale state.
            later = [shown for t, shown in trace.shown if t > start]
            if later:
                np.testing.assert_array_equal(later[0], np.full(STATE_SIZE, STALE))
    assert fallbacks == 7


@pytest.mark.skipif(bool(qemu.missing_tools()), reason=f"QEMU run needs {', '.join(qemu.missing_tools())}")
def test_qemu_cortex_m4_app_follows_the_same_reset_rule(
    handover: ModuleType, app: Path, scenarios: dict, memory: dict[str, MemoryTrace], policy_onnx: Path, tmp_path: Path
) -> None:
    """The same scenarios on an emulated Cortex-M4: the same decisions on the same ticks, the memory changing on
    the same ticks, and every step right from the state the rule prescribes. (Each side carries its own state
    through hundreds of steps, so the two traces' floats drift apart by float rounding; each step is compared
    with onnxruntime fed the target's own state instead.)"""
    qemu_text = handover.build_qemu_trace(app, tmp_path)
    on_target = handover.parse_trace(qemu_text, len(HOVER_OBS), 4, STATE_SIZE)
    target_memory = parse_memory(qemu_text, len(HOVER_OBS), 4, handover._floats)
    assert list(on_target) == list(scenarios) and list(target_memory) == list(memory)
    for name, scenario in scenarios.items():
        np.testing.assert_array_equal(on_target[name].ints, scenario.ints)
        assert [run[:2] for run in target_memory[name].runs] == [run[:2] for run in memory[name].runs]
        assert [t for t, _ in target_memory[name].shown] == [t for t, _ in memory[name].shown]
    session = ort.InferenceSession(str(policy_onnx), providers=["CPUExecutionProvider"])
    counts = check_memory_runs(handover, on_target, target_memory, session)
    assert counts["first"] == 7 and counts["rejected"] == 1


def test_readme_and_controller_state_the_memory_rule(app: Path) -> None:
    readme = (app / "README.md").read_text()
    controller = (app / "src" / "robo_rl_controller.c").read_text()
    header = (app / "src" / "robo_rl_policy.h").read_text()
    assert f"#define ROBO_RL_STATE_SIZE {STATE_SIZE}" in header
    assert "**memory**" in readme and "at each hand-over (entering `RAMP`) and at each fallback" in readme
    assert "robo_rl_policy_step((OBS), policy_memory, (ACTION), policy_memory)" in controller
