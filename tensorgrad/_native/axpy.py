"""``y += alpha * x`` in place and in one pass, for optimizer updates: BLAS ``axpy``.

Why: NumPy has no fused multiply-add for arrays: ``y -= lr * x`` writes ``lr * x`` to a temporary
and reads it back, two passes over memory where BLAS ``axpy`` makes one. On an MLP's weights
that is a measurable share of a training step (docs/performance.md). So, for float32 and
float64 arrays in C order, the update calls ``axpy`` from the BLAS that NumPy itself loaded,
through ``ctypes``: the same library and thread pool as NumPy's matmul. (SciPy's
``scipy.linalg.blas`` would be the public route, but SciPy ships its own copy of OpenBLAS
with its own threads, and on a two-core machine the two pools spinning against each other
made a training step several times slower.)

Off-switch: ``TENSORGRAD_NO_BLAS=1`` in the environment. Then, or where that BLAS cannot be
found (NumPy built against another BLAS, :mod:`tensorgrad._native.openblas`), or where the
arrays do not qualify, the same update runs in NumPy through a scratch array.
"""

from __future__ import annotations

import ctypes
import os
from collections.abc import Callable, Sequence

import numpy as np

from tensorgrad._native import openblas, threads

#: ``?axpy`` in the 64-bit-integer OpenBLAS that NumPy's wheels bundle: NumPy 2, then 1.x
_SYMBOLS = ("scipy_cblas_{}axpy64_", "cblas_{}axpy64_")
_LETTERS = {
    np.dtype(np.float32): ("s", ctypes.c_float),
    np.dtype(np.float64): ("d", ctypes.c_double),
}

_functions: dict[np.dtype, Callable[..., None]] | None = None  # found on first use


def _load() -> dict[np.dtype, Callable[..., None]]:
    """``{dtype: axpy}`` from NumPy's BLAS, each checked on a small array; empty without one."""
    if os.environ.get("TENSORGRAD_NO_BLAS"):
        return {}
    for library in openblas.libraries():
        for pattern in _SYMBOLS:
            functions = _bind(library, pattern)
            if functions and all(_works(f, dtype) for dtype, f in functions.items()):
                return functions
    return {}


def _bind(library: ctypes.CDLL, pattern: str) -> dict[np.dtype, Callable[..., None]]:
    """The ``axpy`` of each dtype under the names ``pattern`` gives, or {} if one is missing."""
    functions = {}
    for dtype, (letter, scalar) in _LETTERS.items():
        function = getattr(library, pattern.format(letter), None)
        if function is None:
            return {}
        n = ctypes.c_int64  # lengths and strides: the library's 64-bit integers
        function.argtypes = [n, scalar, ctypes.c_void_p, n, ctypes.c_void_p, n]
        function.restype = None
        functions[dtype] = function
    return functions


def _works(function: Callable[..., None], dtype: np.dtype) -> bool:
    """Whether ``function`` computes ``y += alpha * x`` (a guard against a mismatched ABI)."""
    x = np.arange(1.0, 8.0, dtype=dtype)
    y = np.ones(7, dtype=dtype)
    function(7, -2.0, _address(x), 1, _address(y), 1)
    return bool(np.array_equal(y, 1.0 - 2.0 * x))


def _address(array: np.ndarray) -> int:
    return array.__array_interface__["data"][0]


def _blas_for(x: np.ndarray, y: np.ndarray) -> Callable[..., None] | None:
    """The BLAS ``axpy`` that can do ``y += alpha * x`` in place, or None."""
    global _functions
    if _functions is None:
        _functions = _load()
    function = _functions.get(y.dtype)
    if function is None or not (
        type(x) is np.ndarray  # not another array module's (device) memory
        and type(y) is np.ndarray
        and x.dtype == y.dtype
        and x.shape == y.shape
        and x.flags.c_contiguous
        and y.flags.c_contiguous
        and y.flags.writeable
        and not np.may_share_memory(x, y)
    ):
        return None
    return function


class Axpy:
    """``ys[i] += alpha * xs[i]`` for fixed pairs of same-shaped arrays, prepared once and
    run by calling it with ``alpha`` as often as needed: each pair through BLAS where
    ``axpy`` alone would take it there, else through NumPy. It holds the arrays, so the
    memory it writes stays valid."""

    def __init__(self, xs: Sequence[np.ndarray], ys: Sequence[np.ndarray]) -> None:
        self.xs, self.ys = list(xs), list(ys)
        self._pairs = []  # (blas, size, x's address, y's address, x, y, scratch) per pair
        for x, y in zip(self.xs, self.ys, strict=True):
            blas = _blas_for(x, y)
            if blas is not None:
                self._pairs.append((blas, y.size, _address(x), _address(y), x, y, None))
            else:
                self._pairs.append((None, 0, 0, 0, x, y, np.empty_like(y)))
        self.uses_blas = [pair[0] is not None for pair in self._pairs]

    def __call__(self, alpha: float) -> None:
        for y in self.ys:  # checked each time: flags can change
            if not y.flags.writeable:
                raise ValueError("cannot update a read-only array in place (nothing was updated)")
        for blas, size, x_address, y_address, x, y, scratch in self._pairs:
            if blas is not None:
                _call(blas, size, alpha, x_address, y_address, y.itemsize)
            else:
                np.multiply(x, alpha, out=scratch)
                np.add(y, scratch, out=y)


def axpy(alpha: float, x: np.ndarray, y: np.ndarray, scratch: np.ndarray) -> None:
    """``y += alpha * x`` in place, once; ``scratch`` (shaped like ``y``) is used when BLAS
    is not."""
    blas = _blas_for(x, y)
    if blas is not None:
        _call(blas, y.size, alpha, _address(x), _address(y), y.itemsize)
    else:
        np.multiply(x, alpha, out=scratch)
        np.add(y, scratch, out=y)


def _call(
    blas: Callable[..., None], size: int, alpha: float, x: int, y: int, itemsize: int
) -> None:
    """``blas`` on ``size`` elements at addresses ``x`` and ``y``; while tensorgrad's threads
    are in use, split over them with BLAS held to one thread, as matrix products are then
    (``threads.own_threads_active`` says why: a BLAS thread woken here would spin through
    the next step's convolutions)."""
    if not threads.own_threads_active():
        blas(size, alpha, x, 1, y, 1)
        return

    def part(lo: int, hi: int) -> None:
        blas(hi - lo, alpha, x + lo * itemsize, 1, y + lo * itemsize, 1)

    threads.split_batch(part, size, size, blas=True, mark=False)
