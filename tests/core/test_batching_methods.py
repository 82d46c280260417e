"""vmap of the methods that read their tensors' values (``core/batching_methods.py``) and of
the index methods with batched indices: each case equals a loop over the batch (in_dims 0, 1
and None mixed), a nested vmap equals a double loop, and the per-sample gradients of the
differentiable ones equal a backward call per sample (float64); all without the per-sample
fallback. Where PyTorch is installed, ``torch.func.vmap`` of the same code agrees.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import tensorgrad as tg
from tensorgrad import func
from tensorgrad.core import batching

B = 3
RNG = np.random.default_rng(7)


def normal(*shape):
    return RNG.standard_normal(shape)


def ties(*shape):
    """Small integers as floats: repeated values in every row."""
    return RNG.integers(0, 3, shape).astype(np.float64)


def with_nans(*shape):
    x = RNG.standard_normal(shape)
    x[RNG.random(shape) < 0.25] = np.nan
    return x


def indices(high, *shape):
    return RNG.integers(0, high, shape)


def mask(*shape):
    return RNG.random(shape) > 0.5


def picks(n, k):
    """B rows of k distinct indices below n (an index_copy's or a setitem's, no repeats)."""
    return np.stack([RNG.permutation(n)[:k] for _ in range(B)])


#: name -> (the per-sample function of (module, *tensors), the arrays (each with its batch
#: axis at its in_dim; as it is where the in_dim is None), in_dims, whether to check the
#: per-sample gradient of the first output with respect to the float arguments, and whether
#: torch.func.vmap runs it (it refuses bincount, whose shape comes from values))
CASES = {
    "argmax_dim": (lambda m, x: x.argmax(1), [normal(B, 4, 5)], 0, False, True),
    "argmax_all": (lambda m, x: x.argmax(), [normal(4, B, 5)], 1, False, True),
    "argmin_keepdim": (lambda m, x: x.argmin(0, keepdim=True), [normal(4, B)], 1, False, True),
    "argmax_ints": (lambda m, x: x.argmax(-1), [indices(9, B, 4, 6)], 0, False, True),
    "max_dim": (lambda m, x: tuple(x.max(1)), [normal(B, 4, 5)], 0, True, True),
    "min_dim_keepdim": (lambda m, x: tuple(x.min(0, True)), [normal(4, B, 5)], 1, True, True),
    "xlogy": (
        lambda m, x, y: x.xlogy(y),
        [np.where(normal(B, 4) > 0.5, 0.0, normal(B, 4)), np.abs(normal(4)) + 0.1],
        (0, None),
        True,
        True,
    ),
    "xlogy_broadcast": (
        lambda m, x, y: x.xlogy(y),
        [normal(3), np.abs(normal(2, B, 3)) + 0.1],
        (None, 1),
        True,
        True,
    ),
    "cummax": (lambda m, x: tuple(x.cummax(1)), [ties(B, 3, 6)], 0, True, True),
    "cummin": (lambda m, x: tuple(x.cummin(0)), [normal(5, B)], 1, True, True),
    "median_dim": (lambda m, x: tuple(x.median(1)), [normal(B, 3, 5)], 0, True, True),
    "median_all": (lambda m, x: x.median(), [normal(B, 3, 4)], 0, True, True),
    "median_all_ties": (lambda m, x: x.median(), [ties(B, 7)], 0, True, False),
    "median_all_nan": (lambda m, x: x.median(), [with_nans(B, 6)], 0, False, True),
    "kthvalue": (lambda m, x: tuple(x.kthvalue(2, 0)), [normal(5, B, 3)], 1, True, True),
    "sort": (lambda m, x: tuple(x.sort(-1, descending=True)), [normal(B, 2, 5)], 0, True, True),
    "topk": (lambda m, x: tuple(x.topk(2, 0)), [normal(B, 5, 2)], 0, True, True),
    "any_dims": (lambda m, x: (x > 0.5).any(1), [normal(B, 3, 4)], 0, False, True),
    "all": (lambda m, x: (x > -1).all(), [normal(B, 3, 4)], 0, False, True),
    "count_nonzero": (lambda m, x: (x > 0).count_nonzero(0), [normal(4, B, 3)], 1, False, True),
    "nansum": (lambda m, x: x.nansum(1), [with_nans(B, 3, 4)], 0, True, True),
    "nanmean_all": (lambda m, x: x.nanmean(), [with_nans(B, 3, 4)], 0, True, True),
    "isnan_nan_to_num": (
        lambda m, x: (x.isnan(), x.nan_to_num(1.5)),
        [with_nans(B, 4)],
        0,
        False,
        True,
    ),
    "fmax": (lambda m, x, y: x.fmax(y), [with_nans(B, 4), with_nans(4)], (0, None), True, True),
    "scatter_reduce_amax": (
        lambda m, x, i, s: x.scatter_reduce(1, i, s, "amax", include_self=False),
        [normal(3, 5), indices(5, B, 3, 4), normal(B, 3, 4)],
        (None, 0, 0),
        True,
        True,
    ),
    "scatter_reduce_mean": (
        lambda m, x, i, s: x.scatter_reduce(0, i, s, "mean"),
        [normal(B, 4, 2), indices(4, 3, B, 2), normal(3, 2)],
        (0, 1, None),
        True,
        True,
    ),
    "scatter_reduce_prod": (
        lambda m, x, i, s: x.scatter_reduce(0, i, s, "prod"),
        [normal(B, 4), indices(4, B, 6), normal(B, 6)],
        0,
        True,
        True,
    ),
    "scatter_add_reduce": (
        lambda m, x, i, s: x.scatter(1, i, s, reduce="add"),
        [normal(2, 5), indices(5, B, 2, 3), normal(B, 2, 3)],
        (None, 0, 0),
        True,
        True,
    ),
    "masked_scatter": (
        lambda m, x, k, s: x.masked_scatter(k, s),
        [normal(3, 4), mask(B, 3, 4), normal(B, 12)],
        (None, 0, 0),
        True,
        True,
    ),
    "masked_scatter_broadcast_mask": (
        lambda m, x, k, s: x.masked_scatter(k, s),
        [normal(B, 3, 4), mask(4), normal(2, 5, B)],
        (0, None, 2),
        True,
        True,
    ),
    "bincount": (lambda m, i: m.bincount(i, minlength=6), [indices(6, B, 8)], 0, False, False),
    "bincount_weights": (
        lambda m, i, w: m.bincount(i, w, minlength=5),
        [indices(5, 8), normal(B, 8)],
        (None, 0),
        False,
        False,
    ),
    "index_put": (
        lambda m, x, i, v: x.index_put((i,), v),
        [normal(5, 3), picks(5, 2), normal(B, 2, 3)],
        (None, 0, 0),
        True,
        True,
    ),
    "index_put_accumulate": (
        lambda m, x, i, j, v: x.index_put((i, j), v, accumulate=True),
        [normal(B, 4, 3), indices(4, B, 5), indices(3, 5), normal(B, 5)],
        (0, 0, None, 0),
        True,
        True,
    ),
    "index_put_negative": (
        lambda m, x, i, v: x.index_put((i,), v),
        [normal(B, 5), picks(5, 3) - 5, normal(3)],
        (0, 0, None),
        True,
        True,
    ),
    "index_fill_negative": (
        lambda m, x, i: x.index_fill(1, i, -1.0),
        [normal(B, 2, 5), indices(5, B, 3) - 5],
        0,
        True,
        False,  # torch.func.vmap (2.13) fills other positions than its own loop does here
    ),
    "index_add_ints": (
        lambda m, x, i, s: x.index_add(0, i, s),
        [indices(9, 4, 2), indices(4, B, 3), indices(9, B, 3, 2)],
        (None, 0, 0),
        False,
        True,
    ),
    "index_copy_ints": (
        lambda m, x, i, s: x.index_copy(1, i, s),
        [indices(9, B, 2, 4), picks(4, 2), indices(9, 2, 2)],
        (0, 0, None),
        False,
        True,
    ),
    "scatter_ints": (
        lambda m, x, i, s: x.scatter(0, i, s),
        [indices(9, 4), picks(4, 3), indices(9, B, 3)],
        (None, 0, 0),
        False,
        True,
    ),
}


def _dims(name):
    arrays, dims = CASES[name][1], CASES[name][2]
    return dims if isinstance(dims, tuple) else (dims,) * len(arrays)


def _sample(array, dim, b):
    return array if dim is None else np.take(array, b, axis=dim)


def _outputs(result):
    return result if isinstance(result, tuple) else (result,)


def _loop(name, arrays):
    """The reference: the function on each sample alone, outputs stacked."""
    fn, dims = CASES[name][0], _dims(name)
    size = next(a.shape[d] for a, d in zip(arrays, dims, strict=True) if d is not None)
    rows = [
        _outputs(fn(tg, *(tg.tensor(_sample(a, d, b)) for a, d in zip(arrays, dims))))
        for b in range(size)
    ]
    return [np.stack([row[i].numpy() for row in rows]) for i in range(len(rows[0]))]


def _looped_count():
    return sum(batching.state.looped.values())


def _assert_equal(got, want):
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        assert g.shape == w.shape and g.dtype == w.dtype
        np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-12, equal_nan=True)


@pytest.mark.parametrize("name", list(CASES))
def test_vmap_equals_a_loop_over_the_batch_without_the_fallback(name):
    fn, arrays, dims = CASES[name][:3]
    before = _looped_count()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a fallback would warn
        got = func.vmap(lambda *xs: fn(tg, *xs), in_dims=dims)(*map(tg.tensor, arrays))
    assert _looped_count() == before
    _assert_equal([o.numpy() for o in _outputs(got)], _loop(name, arrays))


@pytest.mark.parametrize("name", list(CASES))
def test_nested_vmap_equals_a_double_loop(name):
    """An outer level of two over every mapped argument (the second variant each array
    reversed along its batch axis, so its values stay valid): vmap of vmap, against the
    inner loop once per outer sample."""
    fn, arrays = CASES[name][:2]
    outer = [
        a if d is None else np.stack([a, np.flip(a, axis=d)])
        for a, d in zip(arrays, _dims(name), strict=True)
    ]
    outer_dims = tuple(None if d is None else 0 for d in _dims(name))
    inner_dims = tuple(None if d is None else d for d in _dims(name))
    before = _looped_count()
    got = func.vmap(func.vmap(lambda *xs: fn(tg, *xs), in_dims=inner_dims), in_dims=outer_dims)(
        *map(tg.tensor, outer)
    )
    assert _looped_count() == before
    want = [
        _loop(name, [a if d is None else a[o] for a, d in zip(outer, outer_dims, strict=True)])
        for o in range(2)
    ]
    _assert_equal([o.numpy() for o in _outputs(got)], [np.stack(column) for column in zip(*want)])


GRAD_CASES = [name for name, case in CASES.items() if case[3]]


@pytest.mark.parametrize("name", GRAD_CASES)
def test_per_sample_gradients_equal_one_backward_per_sample(name):
    """``vmap(grad)`` of ``Σ w · out`` (the first output) with respect to every float
    argument, against one backward call per sample."""
    fn, arrays, dims = CASES[name][:3]
    dims = _dims(name)
    floats = tuple(i for i, a in enumerate(arrays) if a.dtype.kind == "f")
    weight = np.random.default_rng(1).standard_normal(_loop(name, arrays)[0].shape[1:])

    def loss(*xs):
        out = _outputs(fn(tg, *xs))[0]
        return (out * tg.tensor(weight)).nan_to_num(0.0).sum()

    before = _looped_count()
    got = func.vmap(func.grad(loss, argnums=floats), in_dims=dims)(*map(tg.tensor, arrays))
    assert _looped_count() == before
    size = next(a.shape[d] for a, d in zip(arrays, dims, strict=True) if d is not None)
    for b in range(size):
        leaves = [
            tg.tensor(_sample(a, d, b), requires_grad=i in floats)
            for i, (a, d) in enumerate(zip(arrays, dims, strict=True))
        ]
        loss(*leaves).backward()
        for g, i in zip(got, floats, strict=True):
            want = np.zeros(leaves[i].shape) if leaves[i].grad is None else leaves[i].grad.numpy()
            np.testing.assert_allclose(g.numpy()[b], want, rtol=1e-10, atol=1e-10)


def test_cases_that_the_forms_leave_out_still_loop_and_are_right(monkeypatch):
    """An empty bincount, one whose samples need different lengths (an error, as
    PyTorch's), a maximum over nothing and an out-of-range index: the per-sample way, with
    its warning or its error."""
    monkeypatch.setattr(batching.state, "warned", set())
    with pytest.warns(UserWarning, match="bincount"):
        got = func.vmap(lambda i: i.bincount(minlength=4))(tg.tensor(np.zeros((B, 0), int)))
    np.testing.assert_array_equal(got.numpy(), np.zeros((B, 4)))
    assert got.dtype == np.int64
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        with pytest.raises(RuntimeError, match="different shapes"):
            func.vmap(lambda i: i.bincount())(tg.tensor(np.array([[0, 1], [0, 3], [2, 2]])))
        with pytest.raises(IndexError, match="max: cannot reduce over dimension 1 of size 0"):
            func.vmap(lambda s: s.max(1))(tg.tensor(np.zeros((B, 2, 0))))
        with pytest.raises(IndexError, match="out of bounds"):
            func.vmap(lambda i: tg.zeros(3).index_put((i,), tg.tensor(1.0)))(
                tg.tensor(np.array([[0], [5], [1]]))
            )


TORCH_CASES = [name for name, case in CASES.items() if case[4]]


@pytest.mark.parametrize("name", TORCH_CASES)
def test_vmap_equals_torch_func_vmap(name):
    torch = pytest.importorskip("torch")
    fn, arrays, dims = CASES[name][:3]
    ours = func.vmap(lambda *xs: fn(tg, *xs), in_dims=dims)(*map(tg.tensor, arrays))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # its own fallback's, its deprecations
        theirs = torch.func.vmap(lambda *xs: fn(torch, *xs), in_dims=dims)(
            *(torch.tensor(a) for a in arrays)
        )
    _assert_equal([o.numpy() for o in _outputs(ours)], [t.numpy() for t in _outputs(theirs)])
