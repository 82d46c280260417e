"""tensorgrad's own threads (``ops/parallel.py``): splitting work over them, holding BLAS to
one thread meanwhile, and running products and optimizer updates on them while they are in
use (and only then)."""

from __future__ import annotations

import ctypes
import os
import subprocess
import sys
import time

import numpy as np
import pytest

from tensorgrad.ops import parallel
from tensorgrad.optim import _axpy


@pytest.fixture
def active(monkeypatch):
    """Two threads, marked in use, and small products split."""
    monkeypatch.setattr(parallel, "THREADS", 2)
    monkeypatch.setattr(parallel, "MIN_PRODUCT", 1)
    monkeypatch.setattr(parallel, "MIN_ELEMENTS", 1)
    monkeypatch.setattr(parallel, "_last_shared", time.monotonic())
    monkeypatch.setattr(parallel, "ACTIVE_SECONDS", 3600.0)


def _blas_get():
    functions = parallel._openblas_thread_functions()
    if functions is None:
        pytest.skip("NumPy's BLAS is not an OpenBLAS this can find")
    return functions[0]


def test_threads_split_a_batch_and_report_a_workers_error(monkeypatch):
    monkeypatch.setattr(parallel, "THREADS", 2)
    seen = []
    assert parallel.split_batch(lambda lo, hi: seen.append((lo, hi)) or hi - lo, 5, 10**9) == [2, 3]
    assert sorted(seen) == [(0, 2), (2, 5)]

    def fail(lo, hi):
        if lo == 0:
            raise RuntimeError("worker failed")
        return hi

    with pytest.raises(RuntimeError, match="worker failed"):
        parallel.split_batch(fail, 4, 10**9)
    assert parallel.split_batch(lambda lo, hi: (lo, hi), 4, 10) == [(0, 4)]  # small: one call
    monkeypatch.setattr(parallel, "THREADS", 1)
    assert parallel.split_batch(lambda lo, hi: (lo, hi), 4, 10**9) == [(0, 4)]


def test_blas_is_back_to_its_threads_after_a_split(monkeypatch):
    functions = parallel._openblas_thread_functions()
    if functions is None:
        pytest.skip("NumPy's BLAS is not an OpenBLAS this can find")
    get, _ = functions
    before = get()
    monkeypatch.setattr(parallel, "THREADS", 2)
    inside = parallel.split_batch(lambda lo, hi: get(), 4, 10**9, blas=True)
    assert inside == [1, 1]
    assert get() == before


def test_the_thread_pool_follows_the_thread_count(monkeypatch):
    monkeypatch.setattr(parallel, "THREADS", 2)
    pool = parallel._executor()
    assert parallel._executor() is pool
    monkeypatch.setattr(parallel, "THREADS", 4)
    bigger = parallel._executor()
    assert bigger is not pool and bigger._max_workers == 3
    seen = parallel.split_batch(lambda lo, hi: (lo, hi), 8, 10**9)
    assert seen == [(0, 2), (2, 4), (4, 6), (6, 8)]


def test_the_thread_pool_is_made_again_after_a_fork(monkeypatch):
    pool = parallel._executor()
    monkeypatch.setattr(parallel, "_pool_pid", -1)  # as a forked child sees it
    assert parallel._executor() is not pool


def test_the_thread_count_comes_from_the_environment(monkeypatch):
    monkeypatch.setenv("TENSORGRAD_THREADS", "1")
    assert parallel._default_threads() == 1
    monkeypatch.setenv("TENSORGRAD_THREADS", "two")
    with pytest.raises(
        ValueError, match="TENSORGRAD_THREADS must be a positive integer, got 'two'"
    ):
        parallel._default_threads()
    monkeypatch.delenv("TENSORGRAD_THREADS")
    assert parallel._default_threads() == len(os.sched_getaffinity(0))


def test_a_split_marks_the_threads_in_use_unless_told_not_to(monkeypatch):
    monkeypatch.setattr(parallel, "THREADS", 2)
    monkeypatch.setattr(parallel, "_last_shared", 0.0)
    assert not parallel.own_threads_active()
    parallel.split_batch(lambda lo, hi: None, 4, 10**9, mark=False)
    assert not parallel.own_threads_active()
    parallel.split_batch(lambda lo, hi: None, 4, 10)  # small: one call, no threads used
    assert not parallel.own_threads_active()
    parallel.split_batch(lambda lo, hi: None, 4, 10**9)
    assert parallel.own_threads_active()
    monkeypatch.setattr(parallel, "ACTIVE_SECONDS", 0.0)
    assert not parallel.own_threads_active()  # the window has passed
    monkeypatch.setattr(parallel, "ACTIVE_SECONDS", 3600.0)
    monkeypatch.setattr(parallel, "THREADS", 1)
    assert not parallel.own_threads_active()


@pytest.mark.parametrize(
    "m, k, n", [(64, 300, 8), (8, 300, 64), (2, 3, 1), (1, 5, 1), (7, 0, 5), (0, 4, 3), (5, 4, 0)]
)
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex128])
def test_matmul_split_over_threads_equals_numpy(active, m, k, n, dtype):
    rng = np.random.default_rng(m * 100 + n)
    a = rng.standard_normal((m, k)).astype(dtype)
    b = rng.standard_normal((n, k)).astype(dtype).T  # a transposed view, as the VJPs pass
    result = parallel.matmul(a, b)
    assert result.shape == (m, n) and result.dtype == np.result_type(a, b)
    np.testing.assert_allclose(result, a @ b, rtol=1e-5 if dtype == np.float32 else 1e-12)


def test_matmul_leaves_what_it_cannot_split_to_numpy(active):
    ints = np.arange(12).reshape(3, 4)
    assert parallel.matmul(ints, ints.T).dtype == (ints @ ints.T).dtype
    np.testing.assert_array_equal(parallel.matmul(ints, ints.T), ints @ ints.T)
    batched = np.ones((2, 3, 4))
    np.testing.assert_array_equal(
        parallel.matmul(batched, np.ones((4, 5))), np.full((2, 3, 5), 4.0)
    )
    with pytest.raises(ValueError):  # NumPy's own error for shapes that do not multiply
        parallel.matmul(np.ones((2, 3)), np.ones((4, 5)))


def test_products_hold_blas_to_one_thread_while_the_threads_are_in_use(active, monkeypatch):
    get = _blas_get()
    before = get()
    seen = []
    real = np.matmul

    def spy(*args, **kwargs):
        seen.append(get())
        return real(*args, **kwargs)

    monkeypatch.setattr(parallel.np, "matmul", spy)
    parallel.matmul(np.ones((40, 30)), np.ones((30, 20)))
    assert seen == [1, 1]  # a share in each thread, BLAS on one thread in both
    assert get() == before


def test_optimizer_updates_split_over_the_threads_with_blas_held(active):
    get = _blas_get()
    calls = []

    def fake_axpy(n, alpha, x, incx, y, incy):
        calls.append((n, get()))

    _axpy._call(fake_axpy, 10, -0.5, 1000, 2000, 4)
    assert sorted(calls) == [(5, 1), (5, 1)]
    calls.clear()
    parallel.THREADS = 1  # undone by the fixture's monkeypatch
    _axpy._call(fake_axpy, 10, -0.5, 1000, 2000, 4)
    assert calls == [(10, get())]  # BLAS's own threads, as it likes


def test_an_update_split_over_threads_equals_one_call(active):
    rng = np.random.default_rng(0)
    x = rng.standard_normal(100_001)
    y, expected = rng.standard_normal(100_001), None
    expected = y - 0.25 * x
    _axpy.axpy(-0.25, x, y, np.empty_like(y))
    np.testing.assert_allclose(y, expected, rtol=1e-15)


_FAULTS = """
import resource, numpy as np
from tensorgrad import array_backend

def cycle():
    arrays = [np.ones(1 << 21, np.float32) for _ in range(4)]  # 4 x 8 MiB, then freed
    del arrays

cycle(); cycle()
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(10):
    cycle()
print(array_backend.kept_freed_memory, resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc settings")
@pytest.mark.parametrize("keep", ["1", "0"])
def test_freed_memory_is_kept_for_the_next_arrays_unless_told_not_to(keep):
    env = {**os.environ, "TENSORGRAD_KEEP_MEMORY": keep}
    done = subprocess.run(
        [sys.executable, "-c", _FAULTS], env=env, capture_output=True, text=True, check=True
    )
    kept, faults = done.stdout.split()
    if keep == "0":
        assert kept == "False"
        assert int(faults) >= 10 * 4  # each 8 MiB array faults its pages in again, every time
    else:
        if not hasattr(ctypes.CDLL(None), "gnu_get_libc_version"):
            pytest.skip("this C library's malloc is not glibc's")
        assert kept == "True"
        assert int(faults) < 10  # its pages kept: none faults again


def test_over_chunks_hands_each_chunk_to_exactly_one_thread(monkeypatch):
    monkeypatch.setattr(parallel, "THREADS", 2)
    seen = []

    def work(chunks):
        mine = list(chunks)
        if mine and mine[0][0] == 0:
            time.sleep(0.02)  # the thread with the first chunk is slow: the other takes more
        seen.append(mine)

    parallel.over_chunks(work, 23, 2, 10**9)
    claimed = sorted(c for mine in seen for c in mine)
    assert claimed == [(k, 2 * k, min(2 * k + 2, 23)) for k in range(12)]
    assert len(seen) == 2


def test_over_chunks_in_one_thread_and_on_nothing(monkeypatch):
    seen = []
    monkeypatch.setattr(parallel, "THREADS", 1)
    parallel.over_chunks(lambda chunks: seen.append(list(chunks)), 5, 2, 10**9)
    assert seen == [[(0, 0, 2), (1, 2, 4), (2, 4, 5)]]
    seen.clear()
    monkeypatch.setattr(parallel, "THREADS", 2)
    parallel.over_chunks(lambda chunks: seen.append(list(chunks)), 0, 2, 10**9)
    assert seen == [[]]  # an empty batch: one call, no chunks
