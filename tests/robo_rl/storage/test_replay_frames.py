"""Replay buffers with camera frames: frames stay paired with their transition (obs frames with obs, next frames
with next obs) through the ring, sampling, RLPD's symmetric mix, selection, files and incremental histories."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from robo_rl.image_spec import ImageSpec
from robo_rl.storage.replay import (
    FIELD_NAMES,
    ReplayBuffer,
    ReplayHistory,
    SymmetricSampler,
    Transitions,
    frame_bytes,
    select_transitions,
)

SPECS = (ImageSpec("wrist", 6, 5, 3), ImageSpec("top", 4, 4, 1))
OBS_DIM, CRITIC_OBS_DIM, ACTION_DIM = 2, 3, 1


def transitions(ids: torch.Tensor, specs: tuple[ImageSpec, ...] = SPECS) -> Transitions:
    """Transitions whose fields and frames are functions of the id (= reward): obs frames hold `id % 100`, next
    frames `id % 100 + 100`, each camera offset by its index, so any mix-up shows."""
    values = ids.to(torch.float32)
    col = values[:, None]
    whole = ids.to(torch.int64)

    def frames(offset: int) -> dict[str, torch.Tensor]:
        level = (whole % 100 + offset)[:, None, None, None]
        return {
            spec.name: (level + index).to(torch.uint8).expand(len(ids), *spec.shape).clone()
            for index, spec in enumerate(specs)
        }

    return Transitions(
        obs=col.expand(-1, OBS_DIM).clone(),
        critic_obs=-col.expand(-1, CRITIC_OBS_DIM).clone(),
        actions=col * 0.5,
        rewards=values,
        costs=values / 2,
        next_obs=col.expand(-1, OBS_DIM) + 0.5,
        next_critic_obs=-col.expand(-1, CRITIC_OBS_DIM) - 0.5,
        terminated=whole % 5 == 0,
        truncated=whole % 7 == 0,
        intervened=whole % 2 == 0,
        is_demo=whole % 3 == 0,
        images=frames(0),
        next_images=frames(100),
    )


def camera_buffer(capacity: int) -> ReplayBuffer:
    return ReplayBuffer(capacity, OBS_DIM, CRITIC_OBS_DIM, ACTION_DIM, "cpu", SPECS)


def assert_paired(batch: Transitions) -> None:
    """Every row's vectors and frames belong to the same transition."""
    expected = transitions(batch.rewards.to(torch.int64))
    for name in FIELD_NAMES:
        assert torch.equal(getattr(batch, name), getattr(expected, name)), name
    assert batch.images is not None and batch.next_images is not None
    assert expected.images is not None and expected.next_images is not None
    for spec in SPECS:
        assert torch.equal(batch.images[spec.name], expected.images[spec.name]), spec.name
        assert torch.equal(batch.next_images[spec.name], expected.next_images[spec.name]), spec.name
        assert batch.images[spec.name].dtype == torch.uint8


def test_sampled_frames_stay_with_their_transition_after_the_ring_wraps() -> None:
    buffer = camera_buffer(16)
    buffer.add(transitions(torch.arange(0, 11)))
    buffer.add(transitions(torch.arange(11, 30)))  # wraps, overwriting the oldest
    batch = buffer.sample(64, torch.Generator().manual_seed(0))
    assert_paired(batch)
    assert set(batch.rewards.int().tolist()) <= set(range(14, 30))
    for part in buffer.sample_many(8, 4, torch.Generator().manual_seed(1)):
        assert len(part) == 8
        assert_paired(part)


def test_the_rlpd_mix_keeps_prior_and_online_frames_with_their_transitions() -> None:
    online, prior = camera_buffer(64), camera_buffer(64)
    online.add(transitions(torch.arange(0, 40)))
    prior.add(transitions(torch.arange(1000, 1020)))
    sampler = SymmetricSampler(online, prior, 0.5)
    for batch in [sampler.sample(32, torch.Generator().manual_seed(2)), *sampler.sample_many(32, 3)]:
        assert_paired(batch)
        ids = batch.rewards.int()
        assert bool((ids[:16] >= 1000).all()) and bool((ids[16:] < 1000).all())  # prior share first


def test_symmetric_sampling_refuses_buffers_of_other_cameras() -> None:
    other = ReplayBuffer(8, OBS_DIM, CRITIC_OBS_DIM, ACTION_DIM, "cpu", SPECS[:1])
    with pytest.raises(ValueError, match="image_specs"):
        SymmetricSampler(camera_buffer(8), other)


def test_selection_keeps_frames_of_the_selected_rows() -> None:
    batch = transitions(torch.arange(10))
    picked = select_transitions(batch, batch.intervened)
    assert picked.rewards.int().tolist() == [0, 2, 4, 6, 8]
    assert_paired(picked)


def test_adding_without_frames_or_with_wrong_frames_is_refused() -> None:
    buffer = camera_buffer(8)
    batch = transitions(torch.arange(3))
    with pytest.raises(ValueError, match="no frames"):
        buffer.add(Transitions(**{name: getattr(batch, name) for name in FIELD_NAMES}))
    assert batch.images is not None
    bad = {**batch.images, "top": batch.images["top"].float()}
    with pytest.raises(ValueError, match=r"images\.top: expected uint8"):
        buffer.add(Transitions(**{name: getattr(batch, name) for name in FIELD_NAMES}, images=bad, next_images=bad))
    with pytest.raises(ValueError, match="frames of"):
        ReplayBuffer(8, OBS_DIM, CRITIC_OBS_DIM, ACTION_DIM, "cpu").add(batch)


def test_files_round_trip_frames_and_refuse_other_cameras(tmp_path: Path) -> None:
    buffer = camera_buffer(12)
    buffer.add(transitions(torch.arange(0, 17)))
    buffer.save(tmp_path / "replay.pt")
    loaded = ReplayBuffer.load(tmp_path / "replay.pt")
    assert loaded.image_specs == SPECS and len(loaded) == 12 and loaded.added == 17
    assert_paired(loaded.stored())
    assert torch.equal(loaded.stored().rewards, buffer.stored().rewards)
    other = ReplayBuffer(12, OBS_DIM, CRITIC_OBS_DIM, ACTION_DIM, "cpu", (ImageSpec("wrist", 6, 5, 1), SPECS[1]))
    with pytest.raises(ValueError, match="image_specs"):
        other.load_state_dict(buffer.state_dict())


def test_a_vector_buffer_state_holds_no_camera_keys() -> None:
    """State-only buffers' files are what they were before cameras existed."""
    state = ReplayBuffer(4, OBS_DIM, CRITIC_OBS_DIM, ACTION_DIM, "cpu").state_dict()
    assert set(state) == {
        "capacity",
        "obs_dim",
        "critic_obs_dim",
        "action_dim",
        "position",
        "size",
        "added",
        "transitions",
    }


def test_histories_rebuild_the_ring_with_frames() -> None:
    buffer = camera_buffer(8)
    buffer.add(transitions(torch.arange(0, 13)))
    history = ReplayHistory(buffer.state_dict(), buffer.added, buffer.since(buffer.added - len(buffer)))
    rebuilt = camera_buffer(8)
    rebuilt.load_history(history)
    assert torch.equal(rebuilt.stored().rewards, buffer.stored().rewards)
    assert_paired(rebuilt.stored())


def test_frame_bytes_counts_both_frames_of_every_camera() -> None:
    assert frame_bytes((ImageSpec("cam", 64, 64, 3),)) == 2 * 64 * 64 * 3
    assert frame_bytes(SPECS) == 2 * (6 * 5 * 3 + 4 * 4)
