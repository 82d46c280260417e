"""Finding the OpenBLAS NumPy itself loaded (``_native/openblas.py``), and holding it to one
thread."""

from __future__ import annotations

import os
import shutil

import pytest

from tensorgrad._native import axpy, openblas


@pytest.mark.skipif(not os.path.exists("/proc/self/maps"), reason="Linux tells what is loaded")
def test_a_blas_file_the_process_has_not_loaded_is_not_used(monkeypatch, tmp_path):
    """Loading another copy would start a second BLAS thread pool next to NumPy's."""
    copy = tmp_path / "libscipy_openblas64_-copy.so"
    for original in openblas.bundled_files()[:1]:
        shutil.copyfile(original, copy)
    monkeypatch.setattr(openblas, "bundled_files", lambda: [str(copy)])
    monkeypatch.setattr(openblas, "_thread_functions", False)  # to be looked for again
    monkeypatch.delenv("TENSORGRAD_NO_BLAS", raising=False)
    assert not openblas.loaded(str(copy))
    assert list(openblas.libraries()) == []
    assert openblas.thread_functions() is None
    assert axpy._load() == {}
    with openblas.OneThread() as alone:
        assert not alone  # nothing to hold: the callers keep their work in one thread


def test_one_thread_holds_blas_inside_the_block_and_restores_it(blas_threads):
    before = blas_threads()
    with openblas.OneThread() as alone:
        assert alone and blas_threads() == 1
    assert blas_threads() == before
    openblas.set_threads(1)
    try:
        with openblas.OneThread() as alone:  # already one: nothing to change or restore
            assert alone and blas_threads() == 1
        assert blas_threads() == 1
    finally:
        openblas.set_threads(before)
    assert blas_threads() == before
