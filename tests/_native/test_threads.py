"""tensorgrad's own threads (``_native/threads.py``): splitting work over them, holding BLAS
to one thread meanwhile, and running products on them while they are in use (and only then).
The optimizers' updates on them: tests/_native/test_axpy.py."""

from __future__ import annotations

import os
import time

import numpy as np
import pytest

from tensorgrad._native import threads


def test_threads_split_a_batch_and_report_a_workers_error(monkeypatch):
    monkeypatch.setattr(threads, "THREADS", 2)
    seen = []
    assert threads.split_batch(lambda lo, hi: seen.append((lo, hi)) or hi - lo, 5, 10**9) == [2, 3]
    assert sorted(seen) == [(0, 2), (2, 5)]

    def fail(lo, hi):
        if lo == 0:
            raise RuntimeError("worker failed")
        return hi

    with pytest.raises(RuntimeError, match="worker failed"):
        threads.split_batch(fail, 4, 10**9)
    assert threads.split_batch(lambda lo, hi: (lo, hi), 4, 10) == [(0, 4)]  # small: one call
    monkeypatch.setattr(threads, "THREADS", 1)
    assert threads.split_batch(lambda lo, hi: (lo, hi), 4, 10**9) == [(0, 4)]


def test_blas_is_back_to_its_threads_after_a_split(monkeypatch, blas_threads):
    get = blas_threads
    before = get()
    monkeypatch.setattr(threads, "THREADS", 2)
    inside = threads.split_batch(lambda lo, hi: get(), 4, 10**9, blas=True)
    assert inside == [1, 1]
    assert get() == before


def test_the_thread_pool_follows_the_thread_count(monkeypatch):
    monkeypatch.setattr(threads, "THREADS", 2)
    pool = threads._executor()
    assert threads._executor() is pool
    monkeypatch.setattr(threads, "THREADS", 4)
    bigger = threads._executor()
    assert bigger is not pool and bigger._max_workers == 3
    seen = threads.split_batch(lambda lo, hi: (lo, hi), 8, 10**9)
    assert seen == [(0, 2), (2, 4), (4, 6), (6, 8)]


def test_the_thread_pool_is_made_again_after_a_fork(monkeypatch):
    pool = threads._executor()
    monkeypatch.setattr(threads, "_pool_pid", -1)  # as a forked child sees it
    assert threads._executor() is not pool


def test_the_thread_count_comes_from_the_environment(monkeypatch):
    monkeypatch.setenv("TENSORGRAD_THREADS", "1")
    assert threads._default_threads() == 1
    monkeypatch.setenv("TENSORGRAD_THREADS", "two")
    with pytest.raises(
        ValueError, match="TENSORGRAD_THREADS must be a positive integer, got 'two'"
    ):
        threads._default_threads()
    monkeypatch.delenv("TENSORGRAD_THREADS")
    assert threads._default_threads() == len(os.sched_getaffinity(0))


def test_a_split_marks_the_threads_in_use_unless_told_not_to(monkeypatch):
    monkeypatch.setattr(threads, "THREADS", 2)
    monkeypatch.setattr(threads, "_last_shared", 0.0)
    assert not threads.own_threads_active()
    threads.split_batch(lambda lo, hi: None, 4, 10**9, mark=False)
    assert not threads.own_threads_active()
    threads.split_batch(lambda lo, hi: None, 4, 10)  # small: one call, no threads used
    assert not threads.own_threads_active()
    threads.split_batch(lambda lo, hi: None, 4, 10**9)
    assert threads.own_threads_active()
    monkeypatch.setattr(threads, "ACTIVE_SECONDS", 0.0)
    assert not threads.own_threads_active()  # the window has passed
    monkeypatch.setattr(threads, "ACTIVE_SECONDS", 3600.0)
    monkeypatch.setattr(threads, "THREADS", 1)
    assert not threads.own_threads_active()


@pytest.mark.parametrize(
    "m, k, n", [(64, 300, 8), (8, 300, 64), (2, 3, 1), (1, 5, 1), (7, 0, 5), (0, 4, 3), (5, 4, 0)]
)
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex128])
def test_matmul_split_over_threads_equals_numpy(active, m, k, n, dtype):
    rng = np.random.default_rng(m * 100 + n)
    a = rng.standard_normal((m, k)).astype(dtype)
    b = rng.standard_normal((n, k)).astype(dtype).T  # a transposed view, as the VJPs pass
    result = threads.matmul(a, b)
    assert result.shape == (m, n) and result.dtype == np.result_type(a, b)
    assert_products_agree(result, a @ b, a, b)


def assert_products_agree(got, expected, a, b):
    """Two computations of ``a @ b`` that may sum each entry's ``k`` terms in other orders
    (BLAS splits and blocks the work by the threads it runs on) agree to the rounding of
    such sums. Each is within ``√2·(k+2)·u·(|a|·|b|)`` of the exact product, entry by entry
    (the classic bound for a dot product of ``k`` terms, u = eps/2, with complex products'
    extra rounding), so the two differ by at most ``2·(k+2)·eps·(|a|·|b|)``: never flaky,
    however the sums are split. A tolerance relative to the entry itself fails where terms
    cancel; a wrong share (a row or column missed, or added twice) is off by the order of
    ``|a|·|b|`` itself."""
    k = a.shape[1]
    eps = np.finfo(np.result_type(a, b)).eps
    scale = np.abs(a).astype(np.float64) @ np.abs(b).astype(np.float64)
    excess = np.abs(got - expected) - 2 * (k + 2) * eps * scale
    assert not np.any(excess > 0), f"off by up to {excess.max()} beyond the rounding bound"


def test_matmul_leaves_what_it_cannot_split_to_numpy(active):
    ints = np.arange(12).reshape(3, 4)
    assert threads.matmul(ints, ints.T).dtype == (ints @ ints.T).dtype
    np.testing.assert_array_equal(threads.matmul(ints, ints.T), ints @ ints.T)
    batched = np.ones((2, 3, 4))
    np.testing.assert_array_equal(threads.matmul(batched, np.ones((4, 5))), np.full((2, 3, 5), 4.0))
    with pytest.raises(ValueError):  # NumPy's own error for shapes that do not multiply
        threads.matmul(np.ones((2, 3)), np.ones((4, 5)))


def test_products_hold_blas_to_one_thread_while_the_threads_are_in_use(
    active, monkeypatch, blas_threads
):
    get = blas_threads
    before = get()
    seen = []
    real = np.matmul

    def spy(*args, **kwargs):
        seen.append(get())
        return real(*args, **kwargs)

    monkeypatch.setattr(threads.np, "matmul", spy)
    threads.matmul(np.ones((40, 30)), np.ones((30, 20)))
    assert seen == [1, 1]  # a share in each thread, BLAS on one thread in both
    assert get() == before


def test_over_chunks_hands_each_chunk_to_exactly_one_thread(monkeypatch):
    monkeypatch.setattr(threads, "THREADS", 2)
    seen = []

    def work(chunks):
        mine = list(chunks)
        if mine and mine[0][0] == 0:
            time.sleep(0.02)  # the thread with the first chunk is slow: the other takes more
        seen.append(mine)

    threads.over_chunks(work, 23, 2, 10**9)
    claimed = sorted(c for mine in seen for c in mine)
    assert claimed == [(k, 2 * k, min(2 * k + 2, 23)) for k in range(12)]
    assert len(seen) == 2


def test_over_chunks_in_one_thread_and_on_nothing(monkeypatch):
    seen = []
    monkeypatch.setattr(threads, "THREADS", 1)
    threads.over_chunks(lambda chunks: seen.append(list(chunks)), 5, 2, 10**9)
    assert seen == [[(0, 0, 2), (1, 2, 4), (2, 4, 5)]]
    seen.clear()
    monkeypatch.setattr(threads, "THREADS", 2)
    threads.over_chunks(lambda chunks: seen.append(list(chunks)), 0, 2, 10**9)
    assert seen == [[]]  # an empty batch: one call, no chunks
