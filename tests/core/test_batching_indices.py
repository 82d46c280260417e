"""vmap of indexing by per-sample (batched) indices without the per-sample fallback
(``core/batching.py``: ``_advanced_after_slices``, the batched ``index_select``): values and
per-sample gradients equal a loop over the batch, no fallback warning, and the checks'
errors still come (from one sample)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import tensorgrad as tg
from tensorgrad import func
from tensorgrad.array_backend import IndexRangeError
from tensorgrad.core import batching

B = 4

CASES = {  # name -> (function of (x, i), x's shape per sample, i's shape per sample, x batched)
    "slice_then_index": (lambda x, i: x[:, i], (3, 5), (2,), True),
    "slice_then_index_shared_x": (lambda x, i: x[:, i], (3, 5), (2,), False),
    "two_slices_then_index": (lambda x, i: x[:, :, i], (2, 3, 5), (4,), True),
    "index_then_slice": (lambda x, i: x[:, i, 1:], (3, 5, 4), (2,), True),
    "index_2d_and_int": (lambda x, i: x[:, i, 0], (3, 5, 4), (2, 3), True),
    "index_select_dim0": (lambda x, i: x.index_select(0, i), (5, 3), (4,), True),
    "index_select_dim1": (lambda x, i: x.index_select(1, i), (3, 5), (2,), True),
    "index_select_last_shared_x": (lambda x, i: x.index_select(-1, i), (2, 3, 5), (6,), False),
}


def _inputs(name: str):
    _, x_shape, i_shape, x_batched = CASES[name]
    rng = np.random.default_rng(len(name))
    x = tg.tensor(rng.standard_normal((B, *x_shape) if x_batched else x_shape))
    i = tg.tensor(rng.integers(0, 5, (B, *i_shape)))
    return x, i, (0 if x_batched else None, 0)


@pytest.mark.parametrize("name", list(CASES))
def test_batched_indices_equal_a_loop_without_the_fallback(name, monkeypatch):
    fn = CASES[name][0]
    x, i, dims = _inputs(name)
    monkeypatch.setattr(batching.state, "warned", set())
    before = dict(batching.state.looped)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no "performance drop" warning
        got = func.vmap(fn, in_dims=dims)(x, i)
    assert dict(batching.state.looped) == before
    want = np.stack([fn(x if dims[0] is None else x[b], i[b]).numpy() for b in range(B)])
    np.testing.assert_array_equal(got.numpy(), want)


@pytest.mark.parametrize("name", [n for n in CASES if CASES[n][3]])
def test_per_sample_gradients_through_batched_indices_equal_a_loop(name):
    """vmap(grad) through the index: each sample's gradient scattered to its own rows."""
    fn = CASES[name][0]
    x, i, dims = _inputs(name)

    def loss(x, i):
        return (fn(x, i) ** 2).sum()

    got = func.vmap(func.grad(loss), in_dims=dims)(x, i)
    for b in range(B):
        leaf = x[b].detach().requires_grad_()
        loss(leaf, i[b]).backward()
        np.testing.assert_allclose(got[b].numpy(), leaf.grad.numpy(), rtol=1e-12)


def test_an_index_out_of_range_still_raises_the_methods_error():
    x = tg.tensor(np.ones((B, 3, 5)))
    i = tg.tensor(np.array([[0, 1], [2, 3], [4, 5], [1, 1]]))  # 5 is out of range
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the loop that gives the error warns first
        with pytest.raises(IndexRangeError, match="index_select: index out of range"):
            func.vmap(lambda x, i: x.index_select(1, i))(x, i)
