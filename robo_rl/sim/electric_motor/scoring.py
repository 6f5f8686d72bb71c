"""Score a current controller from its `Trace` on a `Scenario`: tracking error, limit violations, settling time;
and the controllers that are scored: the PI/FOC baseline and an exported policy.

Settling time: for each reference hold that ends with a reference change (not cut by the episode's end or a trip),
the time from the change until the error |i_dq - ref| stays below `band` (5 % of i_nominal) for the rest of the hold;
a hold that never does is counted as unsettled.
"""

from __future__ import annotations

import itertools
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Literal

import numpy as np
import torch

from robo_rl.sim.electric_motor.foc import FocCurrentController
from robo_rl.sim.electric_motor.params import PmsmParams
from robo_rl.sim.electric_motor.scenario import Controller, ControllerFactory, Scenario, Trace

SETTLING_BAND = 0.05
"""The settling band as a fraction of the nominal current."""


@dataclass(frozen=True)
class Score:
    """One controller's result on one scenario."""

    mean_abs_error: float
    """Mean over the steps run and both axes of |i - ref| in A (the headline tracking error)."""
    rms_error: float
    """RMS of |i_dq - ref| in A over the steps run."""
    trips: int
    """Episodes where the current limit tripped (limit violations)."""
    settling_ms: float
    """Mean settling time in ms over the holds that settled."""
    unsettled: int
    """Holds that ended outside the band."""
    holds: int
    """Holds scored."""
    episodes: int

    def as_dict(self) -> dict[str, float | int]:
        return asdict(self)


def score(scenario: Scenario, trace: Trace) -> Score:
    """The `Score` of `trace` against the references of `scenario`."""
    error = trace.currents - scenario.references
    ran = ~np.isnan(error[..., 0])
    axis_abs = np.abs(error[ran])
    norm = np.linalg.norm(error[ran], axis=-1)
    band = SETTLING_BAND * scenario.config.motor.i_nominal
    settle_steps, unsettled = _settling(
        scenario.references, np.linalg.norm(np.nan_to_num(error, nan=np.inf), axis=-1), band
    )
    return Score(
        mean_abs_error=float(axis_abs.mean()),
        rms_error=float(np.sqrt(np.mean(norm**2))),
        trips=int((trace.trip_step >= 0).sum()),
        settling_ms=float(np.mean(settle_steps)) * scenario.config.dt * 1e3 if settle_steps else float("nan"),
        unsettled=unsettled,
        holds=len(settle_steps) + unsettled,
        episodes=scenario.episodes,
    )


def _settling(references: np.ndarray, error: np.ndarray, band: float) -> tuple[list[int], int]:
    settled: list[int] = []
    unsettled = 0
    for episode in range(references.shape[0]):
        change = np.flatnonzero(np.any(np.diff(references[episode], axis=0) != 0, axis=-1)) + 1
        starts = np.concatenate(([0], change))
        for start, end in itertools.pairwise(starts):  # holds that ended with a change
            outside = np.flatnonzero(error[episode, start:end] > band)
            if outside.size and outside[-1] == end - start - 1:
                unsettled += 1
            else:
                settled.append(int(outside[-1]) + 1 if outside.size else 0)
    return settled, unsettled


def pi_factory(params: PmsmParams, period: float, clip: Literal["axis", "circle"] = "axis") -> ControllerFactory:
    """The PI/FOC controller (`foc.FocCurrentController`) reading the measured currents from the observation."""

    def build(num_envs: int) -> Controller:
        pi = FocCurrentController(params, period, num_envs, clip=clip)

        def control(obs: torch.Tensor, speed: torch.Tensor, reference: torch.Tensor) -> torch.Tensor:
            measured = reference - obs[:, :2] * params.i_nominal
            return pi(measured[:, 0], measured[:, 1], reference[:, 0], reference[:, 1], speed)

        return control

    return build


def onnx_factory(path: Path) -> ControllerFactory:
    """An exported policy (policy.onnx, observation as the task's) run in onnxruntime."""
    import onnxruntime

    session = onnxruntime.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    name = session.get_inputs()[0].name

    def build(num_envs: int) -> Controller:
        def control(obs: torch.Tensor, speed: torch.Tensor, reference: torch.Tensor) -> torch.Tensor:
            return torch.from_numpy(session.run(None, {name: obs.numpy().astype(np.float32)})[0])

        return control

    return build
