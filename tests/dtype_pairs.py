"""What the tests of PyTorch's dtype rules for products share (tests/core/test_product_dtypes.py,
tests/nn/test_mixed_dtypes.py): the dtype pairs they try, and a call's result or error."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

#: (input or first dtype, other dtype): every kind against another, and each with itself
DTYPE_PAIRS = [
    ("float32", "float32"),
    ("float64", "float64"),
    ("float16", "float16"),
    ("int64", "int64"),
    ("int32", "int32"),
    ("uint8", "uint8"),
    ("bool", "bool"),
    ("float32", "float64"),
    ("float64", "float32"),
    ("float16", "float32"),
    ("float32", "int64"),
    ("int64", "float32"),
    ("int32", "int64"),
    ("bool", "float32"),
    ("float32", "bool"),
    ("int64", "bool"),
]


def outcome(call: Callable[[], Any]) -> Any:
    """The call's result, or the exception it raised."""
    try:
        return call()
    except Exception as exc:  # compared with the other library's
        return exc
