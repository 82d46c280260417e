"""``y += alpha * x`` for optimizer updates (``_native/axpy.py``): BLAS where NumPy's own
BLAS serves it, else NumPy; split over tensorgrad's threads while they are in use."""

import numpy as np
import pytest

from tensorgrad._native import axpy as _axpy
from tensorgrad._native import openblas, threads
from tensorgrad._native.axpy import Axpy, axpy


@pytest.fixture
def numpy_only(monkeypatch):
    """As on a NumPy without a BLAS that tensorgrad can call."""
    monkeypatch.setattr(_axpy, "_functions", {})


def two_roundings(alpha, x, y):
    """NumPy's ``y + (alpha * x)``, rounded after the product and after the sum."""
    return y + np.multiply(x, alpha).astype(y.dtype)


SHAPES = [(), (1,), (0,), (5,), (3, 4), (2, 3, 5), (300, 70)]


@pytest.mark.skipif(not openblas.bundled_files(), reason="this NumPy bundles no OpenBLAS")
def test_numpy_s_bundled_blas_is_found_for_both_float_dtypes(monkeypatch):
    monkeypatch.delenv("TENSORGRAD_NO_BLAS", raising=False)
    functions = _axpy._load()
    assert set(functions) == {np.dtype(np.float32), np.dtype(np.float64)}


def test_without_numpy_s_openblas_there_is_no_axpy(monkeypatch):
    monkeypatch.delenv("TENSORGRAD_NO_BLAS", raising=False)
    monkeypatch.setattr(openblas, "bundled_files", list)
    assert _axpy._load() == {}


def test_the_environment_variable_turns_blas_off(monkeypatch):
    monkeypatch.setenv("TENSORGRAD_NO_BLAS", "1")
    assert _axpy._load() == {}


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", SHAPES)
def test_axpy_adds_alpha_times_x_in_place(shape, dtype):
    rng = np.random.default_rng(0)
    x, y = (rng.standard_normal(shape).astype(dtype) for _ in range(2))
    y0 = y.astype(np.float64)
    expected = y0 - 0.3 * x.astype(np.float64)
    target = y  # the very array is updated
    axpy(-0.3, x, y, np.empty_like(y))
    assert y is target and y.dtype == dtype
    # alpha rounded to the dtype, then one rounding (a fused multiply-add) or two, as NumPy:
    # within an ulp or two of what was summed (an error relative to the result alone would
    # fail where y and alpha·x cancel)
    summed = np.abs(y0) + 0.3 * np.abs(x.astype(np.float64))
    assert np.all(np.abs(y - expected) <= 2 * np.finfo(dtype).eps * summed)


@pytest.mark.parametrize("shape", SHAPES)
def test_without_blas_the_result_is_numpy_s_bit_for_bit(numpy_only, shape):
    rng = np.random.default_rng(1)
    x, y = (rng.standard_normal(shape).astype(np.float32) for _ in range(2))
    expected = two_roundings(-0.3, x, y)
    prepared = Axpy([x], [y])
    assert not any(prepared.uses_blas)
    prepared(-0.3)
    np.testing.assert_array_equal(y, expected)


def _transposed_target(rng):
    return rng.standard_normal((4, 3)), rng.standard_normal((3, 4)).T


def _mixed_dtypes(rng):
    return rng.standard_normal((3, 4)), rng.standard_normal((3, 4)).astype(np.float32)


def _float16(rng):
    return (rng.standard_normal((3, 4)).astype(np.float16) for _ in range(2))


def _overlapping(rng):
    base = rng.standard_normal(10)
    return base[:6], base[4:]


class _Subclass(np.ndarray):
    """Stands for arrays that only look like NumPy's (another array module's)."""


def _not_plain_ndarrays(rng):
    return (rng.standard_normal((3, 4)).view(_Subclass) for _ in range(2))


@pytest.mark.parametrize(
    "arrays", [_transposed_target, _mixed_dtypes, _float16, _overlapping, _not_plain_ndarrays]
)
def test_arrays_that_blas_cannot_take_are_updated_by_numpy(arrays):
    x, y = arrays(np.random.default_rng(2))
    expected = two_roundings(-0.5, x, y)
    prepared = Axpy([x], [y])
    assert not any(prepared.uses_blas)
    prepared(-0.5)
    np.testing.assert_array_equal(y, expected)


def test_prepared_pairs_are_updated_each_call_with_that_call_s_alpha():
    rng = np.random.default_rng(3)
    xs = [rng.standard_normal(s).astype(np.float32) for s in ((4, 3), (4,), ())]
    ys = [rng.standard_normal(s).astype(np.float32) for s in ((4, 3), (4,), ())]
    expected = [y.astype(np.float64) for y in ys]
    summed = [np.zeros_like(e) for e in expected]  # what the updates' roundings scale with
    prepared = Axpy(xs, ys)
    for alpha in (0.5, -2.0, 0.0):
        prepared(alpha)
        for i, x in enumerate(xs):
            summed[i] = summed[i] + np.abs(expected[i]) + abs(alpha) * np.abs(x)
            expected[i] = expected[i] + alpha * x.astype(np.float64)
    eps = np.finfo(np.float32).eps
    for y, e, s in zip(ys, expected, summed):
        assert np.all(np.abs(y - e) <= 2 * eps * s)  # an ulp or two per update, of its terms


def test_one_pair_that_blas_cannot_take_leaves_the_others_to_blas_as_one_call_would():
    """A prepared update gives each pair the result that ``axpy`` on that pair alone gives,
    so the flat and the per-parameter optimizer steps agree bit for bit."""
    rng = np.random.default_rng(4)
    xs = [rng.standard_normal((5, 3)).astype(np.float32) for _ in range(2)]
    ys = [rng.standard_normal((5, 3)).astype(np.float32), rng.standard_normal((3, 5)).T]
    alone = [ys[0].copy(), ys[1].T.copy().T]  # the same layouts
    for x, y in zip(xs, alone):
        axpy(-0.7, x, y, np.empty_like(y))
    Axpy(xs, ys)(-0.7)
    for y, a in zip(ys, alone):
        np.testing.assert_array_equal(y, a)


def test_a_target_made_read_only_after_preparing_is_refused_before_anything_changes():
    rng = np.random.default_rng(5)
    xs = [rng.standard_normal(4).astype(np.float32) for _ in range(2)]
    ys = [rng.standard_normal(4).astype(np.float32) for _ in range(2)]
    prepared = Axpy(xs, ys)
    ys[1].flags.writeable = False
    before = [y.copy() for y in ys]
    with pytest.raises(ValueError, match=r"^cannot update a read-only array in place \(nothing"):
        prepared(0.5)
    for y, b in zip(ys, before):  # not even the writeable one
        np.testing.assert_array_equal(y, b)


# --------------------------------------------------------------------------- on the threads
def test_optimizer_updates_split_over_the_threads_with_blas_held(active, blas_threads):
    get = blas_threads
    calls = []

    def fake_axpy(n, alpha, x, incx, y, incy):
        calls.append((n, get()))

    _axpy._call(fake_axpy, 10, -0.5, 1000, 2000, 4)
    assert sorted(calls) == [(5, 1), (5, 1)]
    calls.clear()
    threads.THREADS = 1  # undone by the fixture's monkeypatch
    _axpy._call(fake_axpy, 10, -0.5, 1000, 2000, 4)
    assert calls == [(10, get())]  # BLAS's own threads, as it likes


def test_an_update_split_over_threads_equals_one_call(active):
    rng = np.random.default_rng(0)
    x = rng.standard_normal(100_001)
    y = rng.standard_normal(100_001)
    expected = y - 0.25 * x  # 0.25·x is exact: one rounding, as axpy's, so the same bits
    _axpy.axpy(-0.25, x, y, np.empty_like(y))
    np.testing.assert_array_equal(y, expected)
