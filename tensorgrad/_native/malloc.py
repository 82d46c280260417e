"""glibc's malloc asked to keep the memory of freed arrays for the next ones.

Why: by default glibc gives a freed array of more than 128 KiB back to the kernel, and the
next array of that size faults its pages in again, one 4 KiB page at a time (a few µs each
in a virtual machine). A training step allocates and frees the same large arrays every step:
on the CNN of ``bench/cnn.py`` that was ~4,700 page faults and 20 ms of kernel time in a
85 ms step. So ``import tensorgrad`` calls :func:`keep_freed_memory` once.

Off-switch: ``TENSORGRAD_KEEP_MEMORY=0`` in the environment leaves malloc as it is;
elsewhere than glibc nothing is changed.
"""

from __future__ import annotations

import ctypes
import os
import sys

#: ``mallopt`` parameters (glibc's malloc.h)
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3
#: arrays up to this size are kept for reuse when freed (glibc caps it at 32 MiB on older
#: versions: then that)
KEEP_BELOW: int = 1 << 28
#: whether :func:`keep_freed_memory` changed malloc's settings in this process
kept_freed_memory = False


def keep_freed_memory() -> bool:
    """Raise the size below which glibc's malloc keeps freed memory in the process (and
    the free memory malloc keeps, twice that, as glibc's own adaptive rule does). The price:
    the process keeps its peak memory instead of shrinking after it. Process-wide, and done
    once. Returns whether the settings were made (False under ``TENSORGRAD_KEEP_MEMORY=0``
    and off glibc)."""
    global kept_freed_memory
    if kept_freed_memory:
        return True
    if os.environ.get("TENSORGRAD_KEEP_MEMORY", "1") == "0" or not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None)
        if not hasattr(libc, "gnu_get_libc_version"):  # not glibc: its mallopt differs
            return False
        mallopt = libc.mallopt
    except (AttributeError, OSError):
        return False
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    for size in (KEEP_BELOW, 1 << 25):
        if mallopt(_M_MMAP_THRESHOLD, size):
            kept_freed_memory = bool(mallopt(_M_TRIM_THRESHOLD, 2 * size))
            return kept_freed_memory
    return False
