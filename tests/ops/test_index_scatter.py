"""The VJP of integer-array indexing scatters with ``np.add.at`` or by sorting the rows
(``SORTED_SCATTER``): the same sums, repeated, negative and n-D indices included."""

from __future__ import annotations

import numpy as np
import pytest

import tensorgrad as tg
from tensorgrad.ops import index as index_ops


@pytest.mark.parametrize("sorted_scatter", [True, False], ids=["sorted", "add_at"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize(
    "shape, picks",
    [
        ((7, 3), [0, 6, 0, 2, 6, 6, -1, -7]),  # repeats and negative indices
        ((5,), [[1, 1], [4, -5]]),  # a 2-D index into a 1-D input
        ((4, 2, 3), [[3, 0, 3]]),
        ((3, 2), [2]),
        ((3, 2), np.zeros((0,), np.int64)),  # empty index
        ((3, 0), [1, 1]),  # nothing per row
    ],
)
def test_integer_index_gradients_with_and_without_sorting(
    monkeypatch, sorted_scatter, dtype, shape, picks
):
    monkeypatch.setattr(index_ops, "SORTED_SCATTER", sorted_scatter)
    rng = np.random.default_rng(0)
    data = rng.standard_normal(shape).astype(dtype)
    picks = np.asarray(picks, dtype=np.int64)
    x = tg.tensor(data, requires_grad=True)
    out = x[tg.tensor(picks)]
    g = rng.standard_normal(out.shape).astype(dtype)
    out.backward(tg.tensor(g))
    expected = np.zeros(shape, np.float64)
    np.add.at(expected, picks, g.astype(np.float64))
    assert x.grad.dtype == x.dtype
    tolerance = 1e-6 if dtype == np.float32 else 1e-14
    np.testing.assert_allclose(x.grad.numpy(), expected, rtol=tolerance, atol=tolerance)
