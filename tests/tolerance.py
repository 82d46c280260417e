"""Comparing float32 results that are sums, with a tolerance that scales with what was summed.

An elementwise relative tolerance fails on an element where a sum cancels (a result near 0
made of large terms), by an amount that depends on the order the terms were added in, which
changes with the BLAS kernel, the blocking, and which thread added which share. Comparing
normwise bounds the error by the size of the terms instead: for sums of at most ``terms``
terms, ``‖actual − expected‖ ≤ c·terms·eps·‖expected‖``, whatever the order.
"""

from __future__ import annotations

from typing import Any

import numpy as np


def assert_sums_close(
    actual: Any, expected: Any, terms: int, dtype: Any = np.float32, err_msg: str = ""
) -> None:
    """``actual`` equals ``expected`` up to the rounding of ``dtype`` sums of ``terms`` terms
    (compared normwise; NaN and infinities must sit at the same places)."""
    a = np.asarray(actual, dtype=np.float64)
    e = np.asarray(expected, dtype=np.float64)
    assert a.shape == e.shape, f"{err_msg}: shape {a.shape}, expected {e.shape}"
    finite = np.isfinite(e)
    np.testing.assert_array_equal(a[~finite], e[~finite], err_msg=err_msg)
    eps = float(np.finfo(dtype).eps)
    error = float(np.linalg.norm(a[finite] - e[finite]))
    bound = 4 * max(terms, 1) * eps * (float(np.linalg.norm(e[finite])) + eps)
    assert error <= bound, (
        f"{err_msg}: normwise error {error:.3g} exceeds {bound:.3g} "
        f"(sums of {terms} terms in {np.dtype(dtype).name})"
    )
