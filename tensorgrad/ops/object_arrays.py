"""Helpers for an op's ``scalar_forward``: its forward on NumPy object arrays of scalar values.

The scalar-engine oracle (``tensorgrad.autograd.scalar_oracle``) replays a recorded graph on
object arrays whose elements are scalar values: objects with arithmetic operators, the
methods NumPy's ufuncs call on object arrays (``exp``, ``log``, ``tanh``, ``sqrt``, ...) and
their float value in ``.data``, as ``tensorgrad.scalar.Value`` has. Ops never import that
class; these helpers rely on nothing but that protocol (duck typing), so the layering holds.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

__all__ = ["element", "elementwise", "holds_values", "objects", "values_of"]


def objects(x: Any) -> np.ndarray:
    """``x`` as an object array (NumPy turns 0-d object results into bare scalars)."""
    return np.asarray(x, dtype=object)


def holds_values(x: Any) -> bool:
    """Whether ``x`` is an object array (of scalar values), not an array of numbers."""
    return isinstance(x, np.ndarray) and x.dtype == object


def elementwise(function: Callable[[Any], Any], x: Any) -> np.ndarray:
    """``function`` applied to every element of ``x``, as an object array."""
    return objects(np.frompyfunc(function, 1, 1)(x))


def _number(value: Any) -> float:
    return float(value) if isinstance(value, (int, float, np.number)) else float(value.data)


def values_of(x: Any) -> np.ndarray:
    """The float values of an object array of scalar values (and numbers): constants, for
    what a forward only looks at (a shift, a branch), not differentiates."""
    return np.vectorize(_number, otypes=[float])(x)


def element(value: Any) -> Any:
    """A 0-d object array as the value it holds: NumPy would store the array itself in an
    object array's element (``out[()] = value``), not the value inside it."""
    return value[()] if holds_values(value) and value.ndim == 0 else value
