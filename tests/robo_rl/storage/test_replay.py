"""Replay buffer: ring overwrite order, sampling, flags, state round trips, disk files, symmetric sampling."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from robo_rl.storage.replay import FIELD_NAMES, ReplayBuffer, SymmetricSampler, Transitions, concat_transitions

OBS_DIM, CRITIC_OBS_DIM, ACTION_DIM = 3, 5, 2


def transitions(ids: torch.Tensor) -> Transitions:
    """Transitions whose every field is a known function of the transition id (= its reward).

    A row can thus be checked for coherence after any shuffling: all fields must agree with its reward.
    """
    ids = ids.to(torch.float32)
    col = ids[:, None]
    whole = ids.to(torch.int64)
    obs = col + torch.arange(OBS_DIM, device=ids.device) * 0.25
    critic_obs = -col - torch.arange(CRITIC_OBS_DIM, device=ids.device) * 0.5
    return Transitions(
        obs=obs,
        critic_obs=critic_obs,
        actions=col * 2 + torch.arange(ACTION_DIM, device=ids.device),
        rewards=ids,
        costs=ids / 2,
        next_obs=obs + 0.5,
        next_critic_obs=critic_obs + 0.125,
        terminated=whole % 5 == 0,
        truncated=whole % 7 == 0,
        intervened=whole % 2 == 0,
        is_demo=whole % 3 == 0,
    )


def id_range(start: int, stop: int, device: str = "cpu") -> Transitions:
    return transitions(torch.arange(start, stop, device=device))


def buffer(capacity: int, device: str = "cpu", obs_dim: int = OBS_DIM) -> ReplayBuffer:
    return ReplayBuffer(capacity, obs_dim, CRITIC_OBS_DIM, ACTION_DIM, device)


def assert_coherent(batch: Transitions) -> None:
    expected = transitions(batch.rewards)
    for name in FIELD_NAMES:
        assert torch.equal(getattr(batch, name), getattr(expected, name)), name


def assert_same(a: Transitions, b: Transitions) -> None:
    for name in FIELD_NAMES:
        assert torch.equal(getattr(a, name), getattr(b, name)), name


def ids_of(batch: Transitions) -> list[int]:
    return batch.rewards.to(torch.int64).tolist()


# Ring buffer


def test_len_counts_up_to_capacity() -> None:
    buf = buffer(10)
    assert len(buf) == 0
    buf.add(id_range(0, 4))
    assert len(buf) == 4
    buf.add(id_range(4, 20))
    assert len(buf) == 10


def test_three_adds_past_capacity_keep_the_newest_in_ring_slots() -> None:
    buf = buffer(10)
    for start, stop in ((0, 4), (4, 9), (9, 15)):
        buf.add(id_range(start, stop))
    assert len(buf) == 10
    # Id i lands in slot i % 10, so ids 10..14 overwrote 0..4 and ids 5..9 survive.
    assert ids_of(buf.stored()) == [10, 11, 12, 13, 14, 5, 6, 7, 8, 9]
    assert_coherent(buf.stored())


def test_batch_larger_than_capacity_keeps_its_last_items_and_the_ring_position() -> None:
    buf = buffer(4)
    buf.add(id_range(0, 3))
    buf.add(id_range(3, 13))
    assert ids_of(buf.stored()) == [12, 9, 10, 11]
    buf.add(id_range(13, 14))
    assert ids_of(buf.stored()) == [12, 13, 10, 11]


def test_empty_batch_changes_nothing() -> None:
    buf = buffer(4)
    buf.add(id_range(0, 2))
    buf.add(id_range(2, 2))
    assert len(buf) == 2
    assert ids_of(buf.stored()) == [0, 1]


def test_flags_survive_add_and_sample() -> None:
    buf = buffer(8)
    batch = id_range(0, 6)
    batch.intervened = torch.tensor([True, False, True, False, False, True])
    batch.is_demo = torch.tensor([False, False, True, True, False, False])
    buf.add(batch)
    assert buf.stored().intervened.tolist() == [True, False, True, False, False, True]
    assert buf.stored().is_demo.tolist() == [False, False, True, True, False, False]
    sample = buf.sample(200, torch.Generator().manual_seed(0))
    ids = sample.rewards.to(torch.int64)
    assert torch.equal(sample.intervened, batch.intervened[ids])
    assert torch.equal(sample.is_demo, batch.is_demo[ids])
    assert sample.intervened.any() and not sample.intervened.all()


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("obs", torch.zeros(4, OBS_DIM + 1), "obs: expected shape"),
        ("rewards", torch.zeros(3), "rewards: expected shape"),
        ("intervened", torch.zeros(4), "intervened: expected torch.bool"),
        ("actions", torch.zeros(4, ACTION_DIM, dtype=torch.int64), "actions: expected a float dtype"),
    ],
)
def test_add_rejects_a_malformed_field_by_name(field: str, value: torch.Tensor, message: str) -> None:
    batch = id_range(0, 4)
    setattr(batch, field, value)
    with pytest.raises(ValueError, match=message):
        buffer(8).add(batch)


def test_add_rejects_a_field_on_another_device() -> None:
    batch = id_range(0, 2)
    batch.rewards = batch.rewards.to("meta")
    with pytest.raises(ValueError, match="rewards: on meta"):
        buffer(4).add(batch)


def test_float64_fields_are_stored_as_float32() -> None:
    buf = buffer(4)
    batch = id_range(0, 2)
    batch.obs = batch.obs.double()
    buf.add(batch)
    assert buf.stored().obs.dtype == torch.float32
    assert_coherent(buf.stored())


# Sampling


def test_sample_returns_only_stored_items_with_coherent_rows() -> None:
    buf = buffer(8)
    buf.add(id_range(0, 20))
    sample = buf.sample(1000, torch.Generator().manual_seed(1))
    assert len(sample) == 1000
    assert set(ids_of(sample)) == set(range(12, 20))
    assert_coherent(sample)


def test_sample_before_wrap_never_returns_unfilled_slots() -> None:
    buf = buffer(100)
    buf.add(id_range(1, 4))
    assert set(ids_of(buf.sample(500, torch.Generator().manual_seed(2)))) == {1, 2, 3}


def test_sample_is_reproducible_with_a_seeded_generator() -> None:
    buf = buffer(64)
    buf.add(id_range(0, 64))
    a = buf.sample(32, torch.Generator().manual_seed(7))
    b = buf.sample(32, torch.Generator().manual_seed(7))
    c = buf.sample(32, torch.Generator().manual_seed(8))
    assert_same(a, b)
    assert not torch.equal(a.rewards, c.rewards)


def test_sample_from_empty_buffer_raises() -> None:
    with pytest.raises(ValueError, match="empty"):
        buffer(4).sample(1)


# State dict and files


@pytest.mark.parametrize("num_added", [3, 13], ids=["before-wrap", "after-wrap"])
def test_state_dict_round_trip_restores_contents_len_and_ring_position(num_added: int) -> None:
    original = buffer(8)
    original.add(id_range(0, num_added))
    restored = buffer(8)
    restored.load_state_dict(original.state_dict())
    assert len(restored) == len(original)
    assert_same(restored.stored(), original.stored())
    for buf in (original, restored):
        buf.add(id_range(100, 103))
    assert_same(restored.stored(), original.stored())
    assert_same(
        restored.sample(16, torch.Generator().manual_seed(3)), original.sample(16, torch.Generator().manual_seed(3))
    )


def test_state_dict_holds_only_the_filled_part(tmp_path: Path) -> None:
    buf = buffer(100_000)
    buf.add(id_range(0, 3))
    state = buf.state_dict()
    assert all(t.shape[0] == 3 for t in state["transitions"].values())
    buf.save(tmp_path / "replay.pt")
    # The full buffer would take about 100_000 x 80 bytes = 8 MB.
    assert (tmp_path / "replay.pt").stat().st_size < 50_000


def test_state_dict_is_a_copy() -> None:
    buf = buffer(4)
    buf.add(id_range(0, 2))
    state = buf.state_dict()
    buf.add(id_range(10, 14))
    assert state["transitions"]["rewards"].tolist() == [0.0, 1.0]


def test_save_and_load_through_disk(tmp_path: Path) -> None:
    original = buffer(8)
    original.add(id_range(0, 11))
    path = tmp_path / "nested" / "replay.pt"
    original.save(path)
    loaded = ReplayBuffer.load(path, "cpu")
    assert (loaded.capacity, loaded.obs_dim, loaded.critic_obs_dim, loaded.action_dim) == (8, 3, 5, 2)
    assert len(loaded) == 8
    assert_same(loaded.stored(), original.stored())
    loaded.add(id_range(50, 51))
    original.add(id_range(50, 51))
    assert_same(loaded.stored(), original.stored())
    assert [p.name for p in path.parent.iterdir()] == ["replay.pt"]


def test_a_file_saved_before_transitions_held_costs_loads_with_zero_costs(tmp_path: Path) -> None:
    """Buffers written before issue 54 have no `costs` rows: they load, every cost 0 (no constraint then)."""
    original = buffer(8)
    original.add(id_range(0, 5))
    state = original.state_dict()
    del state["transitions"]["costs"]
    loaded = buffer(8)
    loaded.load_state_dict(state)
    assert loaded.stored().costs.tolist() == [0.0] * 5
    torch.testing.assert_close(loaded.stored().rewards, original.stored().rewards)


def test_load_state_dict_with_wrong_obs_dim_names_it() -> None:
    saved = buffer(8, obs_dim=OBS_DIM)
    saved.add(id_range(0, 2))
    with pytest.raises(ValueError, match=r"obs_dim: the saved replay buffer has 3, this buffer has 4"):
        buffer(8, obs_dim=OBS_DIM + 1).load_state_dict(saved.state_dict())


def test_load_state_dict_with_wrong_capacity_names_it() -> None:
    with pytest.raises(ValueError, match="capacity"):
        buffer(16).load_state_dict(buffer(8).state_dict())


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("size", 9, r"size: the saved replay buffer holds 9 transitions, its capacity is 8"),
        ("size", -1, r"size: the saved replay buffer holds -1 transitions"),
        ("position", 8, r"position: 8 is outside a ring of capacity 8"),
        ("size", 3, r"transitions.obs: expected 3 rows, the file has \(2, 3\)"),
    ],
)
def test_load_state_dict_rejects_a_fill_that_no_ring_of_its_capacity_has(key: str, value: int, message: str) -> None:
    saved = buffer(8)
    saved.add(id_range(0, 2))
    state = saved.state_dict() | {key: value}
    with pytest.raises(ValueError, match=message):
        buffer(8).load_state_dict(state)


def test_load_of_a_file_that_is_not_a_buffer_says_so(tmp_path: Path) -> None:
    path = tmp_path / "other.pt"
    torch.save({"model": {}}, path)
    with pytest.raises(ValueError, match="not a replay buffer file"):
        ReplayBuffer.load(path)


# Symmetric sampling


def marked_buffers(online_size: int = 50, prior_size: int = 20) -> tuple[ReplayBuffer, ReplayBuffer]:
    """Online ids are -1000 - i, prior ids 1000 + i, so the sign of a reward tells its buffer."""
    online, prior = buffer(64), buffer(64)
    online.add(transitions(-1000 - torch.arange(online_size)))
    prior.add(transitions(1000 + torch.arange(prior_size)))
    return online, prior


@pytest.mark.parametrize(
    ("batch_size", "prior_fraction", "num_prior"),
    [(256, 0.5, 128), (7, 0.5, 4), (9, 0.5, 4), (1, 0.5, 0), (8, 0.25, 2), (10, 0.25, 2), (4, 1.0, 4), (4, 0.0, 0)],
)
def test_symmetric_sampler_draws_the_exact_prior_share(batch_size: int, prior_fraction: float, num_prior: int) -> None:
    online, prior = marked_buffers()
    batch = SymmetricSampler(online, prior, prior_fraction).sample(batch_size, torch.Generator().manual_seed(0))
    assert len(batch) == batch_size
    assert int((batch.rewards >= 1000).sum()) == num_prior
    assert int((batch.rewards <= -1000).sum()) == batch_size - num_prior
    # Prior first, then online.
    assert (batch.rewards[:num_prior] >= 1000).all() and (batch.rewards[num_prior:] <= -1000).all()
    assert_coherent(batch)


def test_symmetric_sampler_half_and_half_by_default() -> None:
    online, prior = marked_buffers()
    batch = SymmetricSampler(online, prior).sample(64)
    assert int((batch.rewards > 0).sum()) == 32


def test_symmetric_sampler_with_empty_prior_draws_all_online() -> None:
    online, _ = marked_buffers()
    batch = SymmetricSampler(online, buffer(64)).sample(32, torch.Generator().manual_seed(0))
    assert len(batch) == 32
    assert (batch.rewards <= -1000).all()


def test_symmetric_sampler_is_reproducible() -> None:
    online, prior = marked_buffers()
    sampler = SymmetricSampler(online, prior)
    assert_same(
        sampler.sample(16, torch.Generator().manual_seed(5)), sampler.sample(16, torch.Generator().manual_seed(5))
    )


@pytest.mark.parametrize("fraction", [-0.1, 1.5])
def test_symmetric_sampler_rejects_fraction_outside_unit_interval(fraction: float) -> None:
    with pytest.raises(ValueError, match="prior_fraction"):
        SymmetricSampler(buffer(4), buffer(4), fraction)


def test_symmetric_sampler_rejects_buffers_of_different_shapes() -> None:
    with pytest.raises(ValueError, match="obs_dim"):
        SymmetricSampler(buffer(4), buffer(4, obs_dim=OBS_DIM + 1))


def test_concat_transitions_puts_a_before_b() -> None:
    joined = concat_transitions(id_range(0, 2), id_range(5, 8))
    assert ids_of(joined) == [0, 1, 5, 6, 7]
    assert joined.obs.shape == (5, OBS_DIM)
    assert_coherent(joined)


# Device


@pytest.mark.skipif(not torch.cuda.is_available(), reason="CUDA is not available")
def test_buffer_on_cuda_adds_samples_and_round_trips(tmp_path: Path) -> None:
    buf = buffer(8, device="cuda")
    buf.add(id_range(0, 11, device="cuda"))
    sample = buf.sample(64, torch.Generator(device="cuda").manual_seed(0))
    assert sample.obs.is_cuda and sample.intervened.is_cuda
    assert set(ids_of(sample)) <= set(range(3, 11))
    assert_coherent(sample)
    assert all(t.device.type == "cpu" for t in buf.state_dict()["transitions"].values())
    buf.save(tmp_path / "replay.pt")
    loaded = ReplayBuffer.load(tmp_path / "replay.pt", "cuda")
    assert loaded.stored().rewards.is_cuda
    assert_same(loaded.stored(), buf.stored())
    on_cpu = buffer(8)
    on_cpu.load_state_dict(buf.state_dict())
    assert ids_of(on_cpu.stored()) == ids_of(buf.stored())
    with pytest.raises(ValueError, match="rewards: on cpu"):
        bad = id_range(0, 1, device="cuda")
        bad.rewards = bad.rewards.cpu()
        buf.add(bad)


def test_sample_many_draws_several_coherent_batches_at_once() -> None:
    buf = buffer(64)
    buf.add(id_range(0, 64))
    (one,) = buf.sample_many(32, 1, torch.Generator().manual_seed(7))
    assert_same(one, buf.sample(32, torch.Generator().manual_seed(7)))  # one batch: exactly what sample draws
    batches = buf.sample_many(16, 3, torch.Generator().manual_seed(7))
    assert [len(b) for b in batches] == [16, 16, 16]
    for batch in batches:
        assert_coherent(batch)
    assert len({tuple(ids_of(b)) for b in batches}) == 3  # three different batches
    online, prior = buffer(64), buffer(64)
    online.add(id_range(0, 64))
    prior.add(id_range(1000, 1010))
    for batch in SymmetricSampler(online, prior, 0.25).sample_many(8, 4, torch.Generator().manual_seed(0)):
        assert_coherent(batch)
        ids = ids_of(batch)  # every batch: its prior share first, then online transitions
        assert all(i >= 1000 for i in ids[:2]) and all(i < 64 for i in ids[2:])
