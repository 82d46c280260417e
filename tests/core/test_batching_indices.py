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


WRITES = {  # name -> (function of (x, i, source), x's, i's and the source's shape per sample)
    "index_add_dim1": (lambda x, i, s: x.index_add(1, i, s), (3, 5), (2,), (3, 2)),
    "index_add_dim0_alpha_repeats": (
        lambda x, i, s: x.index_add(0, i, s, alpha=2.5),
        (5, 3),
        (6,),
        (6, 3),
    ),
    "index_copy_dim1": (lambda x, i, s: x.index_copy(1, i, s), (2, 5, 3), (2,), (2, 2, 3)),
    "index_fill_last": (lambda x, i, s: x.index_fill(-1, i, 7.5) * s.sum(), (3, 5), (2,), ()),
}


def _write_inputs(name: str, distinct: bool):
    _, x_shape, i_shape, s_shape = WRITES[name]
    rng = np.random.default_rng(len(name))
    x, s = (tg.tensor(rng.standard_normal((B, *shape))) for shape in (x_shape, s_shape))
    size = 5  # the indexed dimension's, in every case
    rows = [rng.permutation(size)[: i_shape[0]] if distinct else rng.integers(0, size, i_shape)
            for _ in range(B)]  # fmt: skip
    return x, tg.tensor(np.stack(rows)), s


@pytest.mark.parametrize("name", list(WRITES))
def test_writes_at_batched_indices_equal_a_loop_without_the_fallback(name, monkeypatch):
    """index_add (repeated indices add up), index_copy and index_fill: values and the
    per-sample gradients of x and the source."""
    fn = WRITES[name][0]
    x, i, s = _write_inputs(name, distinct=not name.endswith("repeats"))
    monkeypatch.setattr(batching.state, "warned", set())
    before = dict(batching.state.looped)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = func.vmap(fn)(x, i, s)
        grads = func.vmap(func.grad(lambda x, i, s: (fn(x, i, s) ** 2).sum(), argnums=(0, 2)))(
            x, i, s
        )
    assert dict(batching.state.looped) == before
    for b in range(B):
        leaves = x[b].detach().requires_grad_(), s[b].detach().requires_grad_()
        out = fn(leaves[0], i[b], leaves[1])
        np.testing.assert_allclose(got[b].numpy(), out.numpy(), rtol=1e-12)
        (out**2).sum().backward()
        for g, leaf in zip(grads, leaves, strict=True):
            np.testing.assert_allclose(g[b].numpy(), leaf.grad.numpy(), rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_scatter_at_batched_indices_equals_a_loop_without_the_fallback(dim, monkeypatch):
    """scatter of a source (its part of the index's shape) and of a number: values and the
    per-sample gradients of x and the source."""
    rng = np.random.default_rng(dim + 5)
    shape, axis = (3, 5), dim % 2
    index_shape = (2, 5) if axis == 0 else (3, 2)
    rows = []
    for _ in range(B):  # distinct positions along the axis, per line (a scatter's writes)
        lines = [rng.permutation(shape[axis])[: index_shape[axis]] for _ in range(shape[1 - axis])]
        rows.append(np.stack(lines, axis=1 - axis))
    x, src = tg.tensor(rng.standard_normal((B, *shape))), tg.tensor(rng.standard_normal((B, 3, 5)))
    i = tg.tensor(np.stack(rows))

    def fn(x, i, s):
        return x.scatter(dim, i, s) + x.scatter(dim, i, 0.5)

    monkeypatch.setattr(batching.state, "warned", set())
    before = dict(batching.state.looped)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = func.vmap(fn)(x, i, src)
        grads = func.vmap(func.grad(lambda x, i, s: (fn(x, i, s) ** 2).sum(), argnums=(0, 2)))(
            x, i, src
        )
    assert dict(batching.state.looped) == before
    for b in range(B):
        leaves = x[b].detach().requires_grad_(), src[b].detach().requires_grad_()
        out = fn(leaves[0], i[b], leaves[1])
        np.testing.assert_allclose(got[b].numpy(), out.numpy(), rtol=1e-12)
        (out**2).sum().backward()
        for g, leaf in zip(grads, leaves, strict=True):
            np.testing.assert_allclose(g[b].numpy(), leaf.grad.numpy(), rtol=1e-12, atol=1e-14)


def test_an_index_out_of_range_still_raises_the_methods_error():
    x = tg.tensor(np.ones((B, 3, 5)))
    i = tg.tensor(np.array([[0, 1], [2, 3], [4, 5], [1, 1]]))  # 5 is out of range
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the loop that gives the error warns first
        with pytest.raises(IndexRangeError, match="index_select: index out of range"):
            func.vmap(lambda x, i: x.index_select(1, i))(x, i)
