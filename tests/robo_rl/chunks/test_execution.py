"""Chunk specs and chunk execution (temporal ensembling, receding horizon) against hand-computed values."""

from __future__ import annotations

import math
import subprocess
import sys

import numpy as np
import pytest

from robo_rl.chunks.execution import ChunkExecution, ChunkExecutor, TimedChunkQueue, ensemble_weights
from robo_rl.chunks.spec import check_horizon, chunk_spec, step_spec
from robo_rl.spaces import SpaceSpec

STEP = SpaceSpec(("steer", "throttle"), (-0.5, 0.0), (0.5, 1.0), ("rad", "1"))


def test_a_chunk_spec_names_each_step_and_repeats_the_bounds_and_inverts() -> None:
    spec = chunk_spec(STEP, 3)
    assert spec.names == ("steer@0", "throttle@0", "steer@1", "throttle@1", "steer@2", "throttle@2")
    assert spec.low == (-0.5, 0.0) * 3 and spec.units == ("rad", "1") * 3
    assert step_spec(spec, 3) == STEP
    with pytest.raises(ValueError, match="cannot have 6 elements"):
        step_spec(spec, 4)
    with pytest.raises(ValueError, match="lack the suffix '@0'"):
        step_spec(STEP, 1)
    bent = SpaceSpec(spec.names, spec.low, (0.5, 1.0, 0.5, 2.0, 0.5, 1.0), spec.units)
    with pytest.raises(ValueError, match="its steps differ"):
        step_spec(bent, 3)


@pytest.mark.parametrize(
    ("horizon", "execute", "message"),
    [(0, None, r"H must be an integer >= 1, got 0"), (4, 5, r"in \[1, H=4\], got 5"), (4, 0, r"got 0")],
)
def test_bad_horizons_are_refused(horizon: int, execute: int | None, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        check_horizon(horizon, execute)
    assert check_horizon(4) == 4 and check_horizon(4, 2) == 2


def test_execution_settings_are_checked() -> None:
    with pytest.raises(ValueError, match="mode must be one of"):
        ChunkExecution(mode="average")
    with pytest.raises(ValueError, match=r"in \[1, H=3\], got 4"):
        ChunkExecution(mode="receding", execute=4).steps(3)
    assert ChunkExecution(mode="receding").steps(3) == 3  # 0: the whole chunk


def test_ensemble_weights_are_acts_oldest_first() -> None:
    # ACT: w_i = exp(-m i), i = 0 the oldest; by age a (the oldest has age 2 here): exp(-m (2 - a)).
    assert np.allclose(ensemble_weights(np.array([0, 1, 2]), 0.5), [math.exp(-1.0), math.exp(-0.5), 1.0])


def _chunks(step: int, num_envs: int = 1, horizon: int = 3) -> np.ndarray:
    """Chunk made at `step`: action i of env n is 100 n + 10 step + i (the step it is for shows in the tens)."""
    n, i = np.meshgrid(np.arange(num_envs), np.arange(horizon), indexing="ij")
    return (100 * n + 10 * step + i).astype(float)[..., None]


def test_the_executor_ensembles_every_chunk_covering_the_step_with_acts_weights() -> None:
    decay = 0.5
    executor = ChunkExecutor(1, 3, 1, ChunkExecution("ensemble", ensemble_decay=decay))
    got = [float(executor.act(_chunks(t))[0, 0]) for t in range(4)]
    w = [math.exp(-decay * i) for i in range(3)]  # oldest first
    expected2 = (w[0] * 2 + w[1] * 11 + w[2] * 20) / sum(w)  # made at 0 (its [2]), at 1 ([1]), at 2 ([0])
    expected3 = (w[0] * 12 + w[1] * 21 + w[2] * 30) / sum(w)  # the chunk of step 0 is spent
    assert got[0] == 0.0 and got[1] == pytest.approx((w[0] * 1 + w[1] * 10) / (w[0] + w[1]))
    assert got[2] == pytest.approx(expected2) and got[3] == pytest.approx(expected3)


def test_the_executor_forgets_the_chunks_of_a_finished_episode_only() -> None:
    executor = ChunkExecutor(2, 3, 1, ChunkExecution("ensemble", ensemble_decay=0.0))
    executor.act(_chunks(0, 2))
    executor.reset(np.array([True, False]))
    got = executor.act(_chunks(1, 2))[:, 0]
    assert got[0] == 10.0 and got[1] == pytest.approx((101 + 110) / 2)


def test_the_receding_horizon_executes_execute_actions_of_a_chunk_then_switches() -> None:
    executor = ChunkExecutor(2, 3, 1, ChunkExecution("receding", execute=2))
    got = [executor.act(_chunks(t, 2))[:, 0].tolist() for t in range(2)]
    executor.reset(np.array([False, True]))  # env 1's episode ends: its next action comes from a new chunk
    got += [executor.act(_chunks(t, 2))[:, 0].tolist() for t in range(2, 5)]
    assert got == [[0, 100], [1, 101], [20, 120], [21, 121], [40, 140]]


def test_the_timed_queue_sends_the_action_due_now_and_none_once_all_are_past() -> None:
    queue = TimedChunkQueue(3, 1, 0.1, ChunkExecution("receding"))
    assert queue.due(0.0) is None and queue.wants_chunk(0.0)
    queue.push(_chunks(0)[0], stamp=1.0)  # actions 0, 1, 2 for 1.0, 1.1, 1.2 s
    ticks = [1.004, 1.097, 1.21, 1.26, 1.349]  # jitter of a few ms takes the nearest step
    assert [queue.due(t) for t in ticks[:3]] == [0.0, 1.0, 2.0]
    assert queue.due(ticks[3]) is None and queue.due(ticks[4]) is None  # all past: the safe command
    queue.push(np.array([7.0, 8.0, 9.0]), stamp=1.28)
    assert queue.due(1.38) == 8.0


def test_the_timed_receding_queue_wants_a_new_chunk_after_execute_actions_and_keeps_the_rest() -> None:
    queue = TimedChunkQueue(4, 1, 0.1, ChunkExecution("receding", execute=2))
    queue.push(np.arange(4.0), stamp=0.0)
    assert not queue.wants_chunk(0.1) and queue.wants_chunk(0.2)
    assert queue.due(0.3) == 3.0  # no newer observation: the chunk's own later actions
    queue.push(np.arange(10.0, 14.0), stamp=0.25)  # an observation 50 ms before the tick: its step 1 is due
    assert queue.due(0.35) == 11.0


def test_the_timed_ensemble_weighs_the_chunks_that_cover_now() -> None:
    queue = TimedChunkQueue(2, 2, 0.1, ChunkExecution("ensemble", ensemble_decay=1.0))
    queue.push(np.array([[0.0, 0.0], [1.0, -1.0]]), stamp=0.0)
    queue.push(np.array([[3.0, 3.0], [5.0, 5.0]]), stamp=0.1)
    w_old, w_new = 1.0, math.exp(-1.0)
    assert np.allclose(
        queue.due(0.1), [(w_old * 1 + w_new * 3) / (w_old + w_new), (-w_old + w_new * 3) / (w_old + w_new)]
    )
    assert np.allclose(queue.due(0.2), [5.0, 5.0]) and len(queue.chunks) == 1
    assert queue.due(0.31) is None
    with pytest.raises(ValueError, match=r"chunk has 3 values, expected H=2 × 2"):
        queue.push(np.zeros(3), 0.0)


def test_importing_the_executor_loads_no_torch() -> None:
    code = "import sys, robo_rl.chunks.execution; print('torch' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"
