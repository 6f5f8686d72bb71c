"""robo_rl.capture: a block recorded once and replayed must behave as the block run again, or refuse loudly.

The "fx" backend records the block's tensor operations with make_fx and replays them with Python frozen, which is
what a CUDA graph does; the "cuda" rows run where a GPU is.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest
import torch

from robo_rl.capture import Captured, CaptureError, capture_backend, capture_enabled

BACKENDS = ["fx", pytest.param("cuda", marks=pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA"))]


@dataclass(frozen=True)
class Params:
    gain: torch.Tensor


class Integrator:
    """State rebound on every step (`self.x = ...`), a dataclass of tensors rebound too, a Python counter."""

    def __init__(self, device: str) -> None:
        self.x = torch.zeros(3, device=device)
        self.params = Params(torch.ones(3, device=device))
        self.inputs = torch.zeros(3, device=device)
        self.python_steps = 0

    def step(self) -> None:
        self.x = self.x * 0.5 + self.inputs * self.params.gain
        self.params = Params(self.params.gain + 1.0)
        self.python_steps += 1


def _run(backend: str, calls: int) -> list[torch.Tensor]:
    device = "cuda" if backend == "cuda" else "cpu"
    system = Integrator(device)
    captured = Captured(system.step, owners=(system,), backend=backend)  # type: ignore[arg-type]
    seen = []
    for k in range(calls):
        system.inputs.copy_(torch.arange(3.0) + k)  # a new input in the tensor the graph reads
        captured()
        seen.append(torch.cat([system.x, system.params.gain]).cpu())
    if backend != "eager":
        assert captured.captured
        assert system.python_steps == 2  # the warm-up and the recording: replays run no Python
    return seen


@pytest.mark.parametrize("backend", BACKENDS)
def test_replays_continue_from_the_last_state(backend: str) -> None:
    expected, got = _run("eager", 6), _run(backend, 6)
    for k, (a, b) in enumerate(zip(got, expected, strict=True)):
        assert torch.equal(a, b), k


def test_eager_code_between_replays_is_copied_in() -> None:
    system = Integrator("cpu")
    captured = Captured(system.step, owners=(system,), backend="fx")
    for _ in range(3):
        captured()
    system.x = torch.full((3,), 100.0)  # a reset or a checkpoint load rebinds the state between replays
    captured()
    assert torch.equal(system.x, torch.full((3,), 50.0) + system.inputs * (system.params.gain - 1.0))


def test_a_host_sync_in_the_block_is_refused() -> None:
    value = torch.ones(3)

    def block() -> None:
        if bool(value.sum() > 0):  # data-dependent Python: a graph would freeze one branch
            value.mul_(2)

    captured = Captured(block, backend="fx")
    captured()
    with pytest.raises(RuntimeError):
        captured()


def test_new_tensor_attributes_are_refused() -> None:
    class Grows:
        def __init__(self) -> None:
            self.calls = 0

        def step(self) -> None:
            self.calls += 1
            if self.calls == 2:
                self.extra = torch.zeros(1)

    grows = Grows()
    captured = Captured(grows.step, owners=(grows,), backend="fx")
    captured()
    with pytest.raises(CaptureError, match="extra"):
        captured()


def test_settings() -> None:
    assert capture_backend("cpu") == "eager" and capture_backend("cuda:0") == "cuda"
    assert capture_enabled("always", "cpu") and not capture_enabled("auto", "cpu") and capture_enabled("auto", "cuda")
    assert not capture_enabled("never", "cuda")
    with pytest.raises(ValueError, match="capture"):
        capture_enabled("on", "cpu")
