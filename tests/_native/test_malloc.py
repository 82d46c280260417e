"""glibc's malloc kept from giving freed arrays back to the kernel (``_native/malloc.py``),
and left alone under ``TENSORGRAD_KEEP_MEMORY=0``."""

from __future__ import annotations

import ctypes
import os
import subprocess
import sys

import pytest

_FAULTS = """
import resource, numpy as np
from tensorgrad._native import malloc

def cycle():
    arrays = [np.ones(1 << 21, np.float32) for _ in range(4)]  # 4 x 8 MiB, then freed
    del arrays

cycle(); cycle()
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(10):
    cycle()
print(malloc.kept_freed_memory, resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
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
