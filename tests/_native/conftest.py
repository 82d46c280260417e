"""What the tests of the tricks below NumPy share."""

from __future__ import annotations

import time

import pytest

from tensorgrad._native import openblas, threads


@pytest.fixture
def active(monkeypatch):
    """Two threads, marked in use, and small products split."""
    monkeypatch.setattr(threads, "THREADS", 2)
    monkeypatch.setattr(threads, "MIN_PRODUCT", 1)
    monkeypatch.setattr(threads, "MIN_ELEMENTS", 1)
    monkeypatch.setattr(threads, "_last_shared", time.monotonic())
    monkeypatch.setattr(threads, "ACTIVE_SECONDS", 3600.0)


@pytest.fixture
def blas_threads():
    """NumPy's OpenBLAS's ``get_num_threads``; the test skips where it is not found."""
    functions = openblas.thread_functions()
    if functions is None:
        pytest.skip("NumPy's BLAS is not an OpenBLAS this can find")
    return functions[0]
