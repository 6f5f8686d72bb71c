"""The checks of an exported policy: object sizes, host C vs onnxruntime (and a NaN observation), host latency,
the int8 error and the QEMU run. A missing compiler or emulator skips its check with a note."""

from __future__ import annotations

import math
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from robo_rl.firmware_export import qemu
from robo_rl.firmware_export.build import (
    SizeReport,
    ToolNotFoundError,
    build_cortex_m4,
    build_host,
    build_host_object,
    build_host_recurrent,
)
from robo_rl.firmware_export.codegen import CSources
from robo_rl.firmware_export.ir import PolicyIR
from robo_rl.firmware_export.onnx_reference import episode_starts, onnxruntime_actions, onnxruntime_episode
from robo_rl.firmware_export.quantize import sample_observations
from robo_rl.firmware_export.report import Comparison, QemuCheck

VERIFY_SAMPLES = 1024
"""Observations of the host parity check (sampled from the metadata bounds)."""
QEMU_SAMPLES = 32
"""Observations run in QEMU (each is printed bit-exact, so keep it small)."""
HOST_TIMING_CALLS = 2000
"""Calls of the host latency measurement (best of 5 batches)."""


@dataclass(frozen=True)
class CheckInputs:
    ir: PolicyIR
    onnx_path: Path
    target: str
    sources: CSources
    """CSources actually exported (quantized with int8)."""
    float_sources: CSources
    """Float CSources (the same object without int8)."""
    int8: bool
    verify: bool
    test_obs: np.ndarray | None

    qemu: bool
    """Also run the policy in QEMU on an emulated Cortex-M4 (with verify)."""


def run_checks(inputs: CheckInputs, scratch: Path) -> dict[str, Any]:
    """ExportReport fields from the size, host and QEMU checks; a missing tool skips its check with a note."""
    found: dict[str, Any] = {"notes": []}
    found["cortex_m4_size"] = _skippable(found, "cortex-m4 size", lambda: _cortex_m4_size(inputs, scratch / "m4"))
    found["host_size"] = _skippable(found, "host size", lambda: _host_size(inputs, scratch / "size"))
    if inputs.verify:
        parity = _skippable(found, "host parity", lambda: _host_parity(inputs, scratch / "host"))
        if parity is not None:
            found["host_parity"], found["nonfinite_rejected"] = parity
        found["host_latency_us"] = _skippable(found, "host timing", lambda: _host_latency_us(inputs, scratch / "time"))
    if inputs.int8:
        found["int8_error"] = _skippable(found, "int8 error", lambda: _int8_error(inputs, scratch / "int8"))
    if inputs.verify and inputs.qemu:
        found["qemu"] = _skippable(found, "QEMU check", lambda: _qemu_check(inputs, scratch / "qemu"))
    found["notes"] = tuple(found["notes"])
    return found


class _ToolMissing(RuntimeError):
    """A compiler or emulator is not installed: the check is skipped, and the report says why."""


def _skippable(found: dict[str, Any], what: str, check: Callable[[], Any]) -> Any:
    try:
        return check()
    except (_ToolMissing, ToolNotFoundError) as missing:
        found["notes"].append(f"{what} skipped: {missing}")
        return None


def _require(*tools: str) -> None:
    missing = [tool for tool in tools if shutil.which(tool) is None]
    if missing:
        raise _ToolMissing(f"{', '.join(missing)} not found on PATH (the Makefile installs it with apt)")


def _cortex_m4_size(inputs: CheckInputs, directory: Path) -> SizeReport:
    _require("arm-none-eabi-gcc", "arm-none-eabi-size")
    return build_cortex_m4(inputs.sources, directory)


def _host_size(inputs: CheckInputs, directory: Path) -> SizeReport:
    _require("gcc", "size")
    return build_host_object(inputs.sources, directory)


def _host_latency_us(inputs: CheckInputs, directory: Path) -> float:
    """Best-of-5 mean time of one call of the exported C policy on the host, through ctypes, in µs (with memory:
    one step, the state carried in place)."""
    _require("gcc")
    obs = np.ascontiguousarray(_verify_observations(inputs)[:1])
    action = np.zeros((1, inputs.ir.action_dim), np.float32)
    if inputs.ir.state_size:
        recurrent = build_host_recurrent(inputs.sources, directory)
        state = recurrent.reset_state()
        step, addresses = recurrent.step_function, (obs.ctypes.data, state.ctypes.data, action.ctypes.data)

        def call() -> None:
            step(*addresses, addresses[1])

    else:
        function, obs_address, action_address = (
            build_host(inputs.sources, directory).function,
            obs.ctypes.data,
            action.ctypes.data,
        )

        def call() -> None:
            function(obs_address, action_address)

    batch, best = HOST_TIMING_CALLS // 5, math.inf
    for _ in range(5):
        start = time.perf_counter()
        for _ in range(batch):
            call()
        best = min(best, (time.perf_counter() - start) / batch)
    return best * 1e6


def _verify_observations(inputs: CheckInputs) -> np.ndarray:
    sampled = sample_observations(inputs.ir.info, VERIFY_SAMPLES, seed=2)
    if inputs.test_obs is None:
        return sampled
    return np.concatenate([np.asarray(inputs.test_obs, np.float32).reshape(-1, inputs.ir.obs_dim), sampled])


def _host_actions(sources: CSources, obs: np.ndarray, directory: Path) -> tuple[np.ndarray, np.ndarray]:
    _require("gcc")
    host = build_host(sources, directory)
    actions, codes = host(obs)
    return np.asarray(actions, np.float32), np.asarray(codes)


def _compare(reference_name: str, got: np.ndarray, reference: np.ndarray) -> Comparison:
    error = np.abs(got.astype(np.float64) - reference.astype(np.float64))
    max_error = float(np.max(error)) if np.all(np.isfinite(error)) else math.inf
    return Comparison(reference_name, len(reference), max_error, float(np.max(np.abs(reference))))


def _nonfinite_observation(obs_dim: int) -> np.ndarray:
    row = np.zeros((1, obs_dim), np.float32)
    row[0, obs_dim // 2] = np.nan
    return row


def _host_parity(inputs: CheckInputs, directory: Path) -> tuple[Comparison, bool]:
    """Float host C vs onnxruntime, and whether a NaN observation gets the error code."""
    if inputs.ir.state_size:
        return _host_episode_parity(inputs, directory)
    obs = _verify_observations(inputs)
    with_nan = np.concatenate([obs, _nonfinite_observation(inputs.ir.obs_dim)])
    actions, codes = _host_actions(inputs.float_sources, with_nan, directory)
    reference = onnxruntime_actions(inputs.onnx_path, obs, inputs.ir.info)
    comparison = _compare("onnxruntime", actions[:-1], reference)
    return comparison, bool(np.all(codes[:-1] == 0) and codes[-1] != 0)


def _host_episode_parity(inputs: CheckInputs, directory: Path) -> tuple[Comparison, bool]:
    """A policy with memory: the host C over one stream of steps with resets (`episode_starts`) vs onnxruntime,
    actions and states side by side; a NaN observation in a last step must get the error code."""
    _require("gcc")
    obs = _verify_observations(inputs)
    starts = episode_starts(len(obs), seed=2)
    with_nan = np.concatenate([obs, _nonfinite_observation(inputs.ir.obs_dim)])
    host = build_host_recurrent(inputs.float_sources, directory)
    actions, states, codes = host.episode(with_nan, np.concatenate([starts, [False]]))
    reference = np.concatenate(onnxruntime_episode(inputs.onnx_path, obs, starts, inputs.ir.info), axis=1)
    comparison = _compare("onnxruntime", np.concatenate([actions, states], axis=1)[:-1], reference)
    return comparison, bool(np.all(codes[:-1] == 0) and codes[-1] != 0)


def _int8_error(inputs: CheckInputs, directory: Path) -> Comparison:
    obs = inputs.test_obs
    if obs is None:
        obs = sample_observations(inputs.ir.info, VERIFY_SAMPLES, seed=3)
    obs = np.asarray(obs, np.float32).reshape(-1, inputs.ir.obs_dim)
    actions, _ = _host_actions(inputs.sources, obs, directory)
    return _compare("onnxruntime (float)", actions, onnxruntime_actions(inputs.onnx_path, obs, inputs.ir.info))


def _qemu_check(inputs: CheckInputs, directory: Path) -> QemuCheck:
    missing = qemu.missing_tools()
    if missing:
        raise _ToolMissing(f"{', '.join(missing)} not found on PATH (the Makefile installs them with apt)")
    obs = _verify_observations(inputs)[:QEMU_SAMPLES]
    with_nan = np.concatenate([obs, _nonfinite_observation(inputs.ir.obs_dim)])
    if inputs.ir.state_size:
        starts = episode_starts(len(obs), seed=3, episode_steps=len(obs) // 2)
        result = qemu.run_in_qemu(inputs.sources, with_nan, directory / "firmware", resets=np.append(starts, False))
        assert result.states is not None
        outputs = np.concatenate([result.outputs, result.states], axis=1)[:-1]
        host_actions, host_states, _ = build_host_recurrent(inputs.sources, directory / "host").episode(obs, starts)
        host = np.concatenate([host_actions, host_states], axis=1)
        reference = np.concatenate(onnxruntime_episode(inputs.onnx_path, obs, starts, inputs.ir.info), axis=1)
    else:
        result = qemu.run_in_qemu(inputs.sources, with_nan, directory / "firmware")
        outputs = result.outputs[:-1]
        host, _ = _host_actions(inputs.sources, obs, directory / "host")
        reference = onnxruntime_actions(inputs.onnx_path, obs, inputs.ir.info)
    instructions = result.instructions_per_inference
    return QemuCheck(
        vs_onnxruntime=_compare("onnxruntime", outputs, reference),
        vs_host=_compare("host C", outputs, host),
        instructions_per_inference=instructions,
        estimated_latency_us=None if instructions is None else qemu.estimated_latency_us(instructions),
        count_error=result.max_count_error,
        nonfinite_rejected=bool(np.all(result.codes[:-1] == 0) and result.codes[-1] != 0),
        firmware_size=result.firmware_size,
    )
