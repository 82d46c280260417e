"""The OpenBLAS that NumPy itself loaded, reached through ``ctypes``, and holding it to one
thread.

Why: NumPy's matmul hands big products to OpenBLAS, which runs them on its own pool of
threads; tensorgrad's threads (:mod:`tensorgrad._native.threads`) each multiply a share of
the work at once, and if every share started BLAS's pool too, four busy threads would share
two cores (several times slower, measured). OpenBLAS can be told how many threads to use,
but NumPy does not expose that, so this module finds the library NumPy loaded and calls
``openblas_set_num_threads`` on it. The axpy of :mod:`tensorgrad._native.axpy` comes from the
same library.

Only the copy NumPy loaded is used: the files bundled in NumPy's wheel that the process has
mapped already (on Linux, ``/proc/self/maps`` tells). Loading another copy, SciPy's say,
would start a second pool of BLAS threads spinning against NumPy's. Where no such OpenBLAS is
found (NumPy built against another BLAS), :func:`thread_functions` is None, and the callers
keep their work in one thread.

Off-switch: none of its own; ``TENSORGRAD_THREADS=1`` leaves BLAS's threads as they are, and
``TENSORGRAD_NO_BLAS=1`` keeps the optimizers off its axpy.
"""

from __future__ import annotations

import ctypes
import glob
import os
from collections.abc import Iterator
from typing import Any

import numpy as np


def bundled_files() -> list[str]:
    """The OpenBLAS files bundled with NumPy (wheels for Linux and Windows; macOS on x86-64),
    sorted."""
    package = os.path.dirname(np.__file__)
    places = [os.path.join(package + ".libs", "*openblas*")]
    places.append(os.path.join(package, ".dylibs", "*openblas*"))
    return sorted(path for place in places for path in glob.glob(place))


def loaded(path: str) -> bool:
    """Whether the process has this file loaded already, where Linux can tell: loading a copy
    NumPy does not use would start a second BLAS thread pool."""
    try:
        with open("/proc/self/maps", encoding="utf-8") as maps:
            return os.path.realpath(path) in maps.read()
    except OSError:  # not Linux: the file found in NumPy's own folder is the one it uses
        return True


def libraries() -> Iterator[ctypes.CDLL]:
    """NumPy's own OpenBLAS, opened through ``ctypes`` (already loaded: the same library and
    thread pool as NumPy's matmul); nothing where there is none."""
    for path in filter(loaded, bundled_files()):
        try:
            yield ctypes.CDLL(path)
        except OSError:
            continue


# --------------------------------------------------------------------------- its threads
_thread_functions: tuple[Any, Any] | bool | None = False  # False: not looked for yet


def thread_functions() -> tuple[Any, Any] | None:
    """``(get_num_threads, set_num_threads)`` of the OpenBLAS NumPy loaded, or None; looked
    for once."""
    global _thread_functions
    if _thread_functions is not False:
        return _thread_functions  # type: ignore[return-value]
    _thread_functions = None
    for library in libraries():
        for prefix, suffix in (("scipy_", "64_"), ("", "64_"), ("", "")):
            get = getattr(library, f"{prefix}openblas_get_num_threads{suffix}", None)
            set_ = getattr(library, f"{prefix}openblas_set_num_threads{suffix}", None)
            if get is not None and set_ is not None:
                get.restype, get.argtypes = ctypes.c_int, []
                set_.restype, set_.argtypes = None, [ctypes.c_int]
                _thread_functions = (get, set_)
                return _thread_functions
    return None


def set_threads(threads: int) -> None:
    """Tell NumPy's OpenBLAS to use ``threads`` threads, where it can be told."""
    functions = thread_functions()
    if functions is not None:
        functions[1](threads)


class OneThread:
    """``with OneThread() as alone:`` holds BLAS to one thread (process-wide: OpenBLAS has
    no per-thread setting) inside the block; ``alone`` is False where that is not possible.
    A class rather than a generator: it runs around every matrix product."""

    __slots__ = ("before", "functions")

    def __enter__(self) -> bool:
        self.functions = functions = thread_functions()
        if functions is None:
            return False
        self.before = functions[0]()
        if self.before != 1:
            functions[1](1)
        return True

    def __exit__(self, *exc_info: object) -> None:
        if self.functions is not None and self.before != 1:
            self.functions[1](self.before)
