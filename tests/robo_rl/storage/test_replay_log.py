"""Incremental replay checkpoints: `since` copies the newest transitions in insertion order, `load_history`
rebuilds the exact ring, and chunk files written save by save read back into the same buffer."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from robo_rl.storage.checkpoint import CheckpointError
from robo_rl.storage.replay import ReplayBuffer, ReplayHistory, Transitions
from robo_rl.storage.replay_log import ReplayLog

OBS_DIM, CRITIC_OBS_DIM, ACTION_DIM = 3, 5, 2


def _buffer(capacity: int) -> ReplayBuffer:
    return ReplayBuffer(capacity, OBS_DIM, CRITIC_OBS_DIM, ACTION_DIM, "cpu")


def _add(buffer: ReplayBuffer, start: int, stop: int) -> None:
    """Transitions whose reward is their number, so the order is visible (the other fields are zero)."""
    n = stop - start
    zeros = {"obs": OBS_DIM, "critic_obs": CRITIC_OBS_DIM, "actions": ACTION_DIM}
    fields = {name: torch.zeros(n, dim) for name, dim in zeros.items()}
    fields |= {"next_obs": torch.zeros(n, OBS_DIM), "next_critic_obs": torch.zeros(n, CRITIC_OBS_DIM)}
    flags = {name: torch.zeros(n, dtype=torch.bool) for name in ("terminated", "truncated", "intervened", "is_demo")}
    rewards = torch.arange(start, stop, dtype=torch.float32)
    buffer.add(Transitions(**fields, **flags, rewards=rewards, costs=torch.zeros(n)))


def _same_ring(a: ReplayBuffer, b: ReplayBuffer) -> None:
    sa, sb = a.state_dict(), b.state_dict()
    assert (sa["position"], sa["size"], sa["added"]) == (sb["position"], sb["size"], sb["added"])
    for name, tensor in sa["transitions"].items():
        assert torch.equal(tensor, sb["transitions"][name]), name


def test_since_copies_the_newest_in_insertion_order_across_the_wrap() -> None:
    buffer = _buffer(8)
    _add(buffer, 0, 13)  # slots hold 8..12 then 5..7
    assert buffer.added == 13
    assert buffer.since(9).rewards.tolist() == [9.0, 10.0, 11.0, 12.0]
    assert buffer.since(5).rewards.tolist() == [float(i) for i in range(5, 13)]
    assert len(buffer.since(13)) == 0
    with pytest.raises(ValueError, match="not stored"):
        buffer.since(4)  # overwritten


@pytest.mark.parametrize("added", [0, 5, 8, 13, 21])
def test_load_history_rebuilds_the_same_ring(added: int) -> None:
    original = _buffer(8)
    _add(original, 0, added)
    start = added - len(original)
    history = ReplayHistory(original._dims(), added, original.since(start))
    rebuilt = _buffer(8)
    rebuilt.load_history(history)
    _same_ring(original, rebuilt)
    if added:
        generator_a, generator_b = torch.Generator().manual_seed(1), torch.Generator().manual_seed(1)
        assert torch.equal(original.sample(32, generator_a).rewards, rebuilt.sample(32, generator_b).rewards)


def test_load_history_of_another_capacity_names_it() -> None:
    history = ReplayHistory(_buffer(8)._dims(), 0, _buffer(8).stored())
    with pytest.raises(ValueError, match="capacity"):
        _buffer(16).load_history(history)


def test_chunks_written_save_by_save_restore_the_buffer(tmp_path: Path) -> None:
    buffer, log = _buffer(64), ReplayLog(tmp_path)
    manifest = None
    for stop in (10, 30, 50, 90, 100, 140):  # the ring wraps twice; early chunks fall out of it
        _add(buffer, buffer.added, stop)
        manifest = log.append(buffer)
        log.commit(manifest)
    assert manifest is not None and manifest["added"] == 140
    rebuilt = _buffer(64)
    rebuilt.load_history(ReplayLog(tmp_path).restore(manifest))
    _same_ring(buffer, rebuilt)
    named = {f"chunk-{start:015d}-{count:09d}.pt" for start, count in manifest["replay_chunks"]}
    assert named <= {p.name for p in tmp_path.iterdir()}
    assert len(list(tmp_path.iterdir())) <= len(named) + 2  # what the previous checkpoint names, no more


def test_a_missing_chunk_is_a_checkpoint_error_naming_it(tmp_path: Path) -> None:
    buffer, log = _buffer(64), ReplayLog(tmp_path)
    _add(buffer, 0, 10)
    manifest = log.append(buffer)
    log.commit(manifest)
    (chunk,) = tmp_path.iterdir()
    chunk.unlink()
    with pytest.raises(CheckpointError, match=f"{chunk} is missing"):
        ReplayLog(tmp_path).restore(manifest)
