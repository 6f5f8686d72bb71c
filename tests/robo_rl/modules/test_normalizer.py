"""EmpiricalNormalizer: running moments equal numpy's over all data seen, clipping, state_dict."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from robo_rl.modules.normalizer import EmpiricalNormalizer


def _batches() -> list[np.ndarray]:
    """Batches of different sizes (one of a single row) whose distributions drift from batch to batch."""
    rng = np.random.default_rng(0)
    sizes_and_shifts = [(1, 5.0), (7, -3.0), (100, 0.5), (3, 12.0), (256, 2.0)]
    scale = np.array([1.0, 3.0, 0.1])
    return [(shift + scale * rng.standard_normal((n, 3))).astype(np.float32) for n, shift in sizes_and_shifts]


def test_running_moments_equal_numpy_over_concatenated_data() -> None:
    normalizer = EmpiricalNormalizer(3)
    batches = _batches()
    for batch in batches:
        normalizer.update(torch.from_numpy(batch))
    data = np.concatenate(batches).astype(np.float64)
    np.testing.assert_allclose(normalizer.mean.numpy(), data.mean(axis=0), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(normalizer.var.numpy(), data.var(axis=0), rtol=1e-5, atol=1e-5)
    assert normalizer.count.item() == len(data) == 367


def test_first_update_takes_the_batch_moments_and_empty_batch_is_ignored() -> None:
    normalizer = EmpiricalNormalizer(2)
    normalizer.update(torch.empty(0, 2))
    assert normalizer.count.item() == 0
    torch.testing.assert_close(normalizer.mean, torch.zeros(2))
    # Two rows [1, 10] and [3, 30]: mean [2, 20], population variance [1, 100].
    normalizer.update(torch.tensor([[1.0, 10.0], [3.0, 30.0]]))
    torch.testing.assert_close(normalizer.mean, torch.tensor([2.0, 20.0]))
    torch.testing.assert_close(normalizer.var, torch.tensor([1.0, 100.0]))


def test_forward_normalizes_and_clips_without_updating() -> None:
    normalizer = EmpiricalNormalizer(2, clip=5.0)
    normalizer.update(torch.tensor([[1.0, 10.0], [3.0, 30.0]]))  # mean [2, 20], std [1, 10]
    x = torch.tensor([[4.0, 0.0], [100.0, -1000.0]])
    # (4 - 2) / 1 = 2, (0 - 20) / 10 = -2; then 98 -> 5 and -102 -> -5 by the clip.
    out = normalizer(x)
    torch.testing.assert_close(out, torch.tensor([[2.0, -2.0], [5.0, -5.0]]), atol=1e-6, rtol=0)
    assert normalizer.count.item() == 2  # forward never changes the statistics
    torch.testing.assert_close(normalizer.mean, torch.tensor([2.0, 20.0]))


def test_default_clip_is_ten() -> None:
    out = EmpiricalNormalizer(1)(torch.tensor([[1e6], [-1e6], [3.0]]))
    torch.testing.assert_close(out, torch.tensor([[10.0], [-10.0], [3.0]]), atol=1e-6, rtol=0)


def test_state_dict_carries_statistics() -> None:
    normalizer = EmpiricalNormalizer(3)
    for batch in _batches():
        normalizer.update(torch.from_numpy(batch))
    state = normalizer.state_dict()
    assert set(state) == {"mean", "var", "count"}
    fresh = EmpiricalNormalizer(3)
    fresh.load_state_dict(state)
    x = torch.randn(5, 3)
    torch.testing.assert_close(fresh(x), normalizer(x), rtol=0, atol=0)
    assert fresh.count.item() == pytest.approx(367)
    # ...and continuing to update from the loaded state matches continuing the original.
    extra = torch.randn(9, 3) + 4.0
    fresh.update(extra)
    normalizer.update(extra)
    assert torch.equal(fresh.mean, normalizer.mean) and torch.equal(fresh.var, normalizer.var)
