"""Remainders with gradients: ``remainder`` (Python's ``%``, the sign of the divisor) and
``fmod`` (C's, the sign of the dividend). Both are ``x − q·y`` for a quotient q that is
constant almost everywhere, so x's slope is 1 and y's is ``−q`` (PyTorch's VJPs).

A float divisor of 0 gives NaN, and y's slope there ±inf (or NaN), silently as PyTorch's:
an integer divisor of 0 is PyTorch's error instead."""

from __future__ import annotations

import numpy as np

from tensorgrad.ops import object_arrays
from tensorgrad.ops.base import Op, add_tangents, shape_of, sum_to


def _check_divisor(name: str, x, y) -> None:
    """PyTorch's error for an integer remainder by zero (NumPy gives 0 and a warning); none
    where the result has no element (PyTorch computes nothing)."""
    kind = np.result_type(x, y).kind
    if kind not in "biu":
        return
    try:
        if 0 in np.broadcast_shapes(np.shape(x), np.shape(y)):
            return
    except ValueError:
        return  # the op itself reports the shapes
    if np.any(np.asarray(y) == 0):
        raise RuntimeError(f"{name}: ZeroDivisionError (integer division by zero)")


class Remainder(Op):
    batching = "elementwise"

    def forward(self, x, y):
        _check_divisor(self.name, x, y)
        with np.errstate(invalid="ignore"):
            return np.remainder(x, y)

    def backward(self, grad, out, x, y):
        nx, ny = self.needs_input_grad
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            return (
                sum_to(grad, shape_of(x)) if nx else None,
                sum_to(-grad * np.floor(x / y), shape_of(y)) if ny else None,
            )

    def scalar_forward(self, x, y):
        return _with_constant_quotient(np.floor, x, y)

    def jvp(self, tangents, out, x, y):
        tx, ty = tangents
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            return add_tangents(tx, None if ty is None else -ty * np.floor(x / y))


class Fmod(Op):
    batching = "elementwise"

    def forward(self, x, y):
        _check_divisor(self.name, x, y)
        with np.errstate(invalid="ignore"):
            return np.fmod(x, y)

    def backward(self, grad, out, x, y):
        nx, ny = self.needs_input_grad
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            return (
                sum_to(grad, shape_of(x)) if nx else None,
                sum_to(-grad * np.trunc(x / y), shape_of(y)) if ny else None,
            )

    def scalar_forward(self, x, y):
        return _with_constant_quotient(np.trunc, x, y)

    def jvp(self, tangents, out, x, y):
        tx, ty = tangents
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            return add_tangents(tx, None if ty is None else -ty * np.trunc(x / y))


def _with_constant_quotient(rounding, x, y):
    """``x − q·y`` on scalar values, the rounded quotient q a constant (from the values)."""
    quotient = rounding(object_arrays.values_of(x) / object_arrays.values_of(y))
    return object_arrays.objects(x - object_arrays.objects(quotient * y))
