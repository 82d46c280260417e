"""Inverse trigonometric and hyperbolic functions: asin … atanh, sinh, cosh, and ``atan2``.

Each VJP is written with operators and the ufuncs Tensors share (``np.sqrt``), or through
``call`` for the ones they do not (``cosh`` for ``sinh``'s slope), so second derivatives work.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from tensorgrad.ops import object_arrays
from tensorgrad.ops.base import Op, add_tangents, call, shape_of, sum_to


def first_order(value: Callable[[float], float], slope: Callable[[float], float]) -> Callable:
    """A scalar reference for a function the values' operations cannot spell (asin, lgamma):
    ``f(x₀) + f'(x₀)·(x − x₀)`` at the element's own value x₀, from ``math``/SciPy. Exact in
    value at x₀, with ``f'`` as its slope, and made of the values' arithmetic only."""

    def element(x: Any) -> Any:
        if isinstance(x, (int, float, np.number)):
            return value(float(x))
        x0 = float(x.data)
        return (x - x0) * slope(x0) + value(x0)

    return lambda x: object_arrays.elementwise(element, x)


_asin_value = first_order(math.asin, lambda v: 1 / math.sqrt(1 - v * v))
_acos_value = first_order(math.acos, lambda v: -1 / math.sqrt(1 - v * v))
_atan_value = first_order(math.atan, lambda v: 1 / (1 + v * v))


class Asin(Op):
    batching = "elementwise"

    def forward(self, x):
        return np.arcsin(x)

    def backward(self, grad, out, x):
        return (grad / np.sqrt(1 - x * x),)

    def scalar_forward(self, x):
        return _asin_value(x)

    def jvp(self, tangents, out, x):
        return tangents[0] / np.sqrt(1 - x * x)


class Acos(Op):
    batching = "elementwise"

    def forward(self, x):
        return np.arccos(x)

    def backward(self, grad, out, x):
        return (-grad / np.sqrt(1 - x * x),)

    def scalar_forward(self, x):
        return _acos_value(x)

    def jvp(self, tangents, out, x):
        return -tangents[0] / np.sqrt(1 - x * x)


class Atan(Op):
    batching = "elementwise"

    def forward(self, x):
        return np.arctan(x)

    def backward(self, grad, out, x):
        return (grad / (1 + x * x),)

    def scalar_forward(self, x):
        return _atan_value(x)

    def jvp(self, tangents, out, x):
        return tangents[0] / (1 + x * x)


class Sinh(Op):
    batching = "elementwise"

    def forward(self, x):
        return np.sinh(x)

    def backward(self, grad, out, x):
        return (grad * call(Cosh, x),)

    def scalar_forward(self, x):
        return (np.exp(x) - np.exp(-x)) * 0.5

    def jvp(self, tangents, out, x):
        return tangents[0] * np.cosh(x)


class Cosh(Op):
    batching = "elementwise"

    def forward(self, x):
        return np.cosh(x)

    def backward(self, grad, out, x):
        return (grad * call(Sinh, x),)

    def scalar_forward(self, x):
        return (np.exp(x) + np.exp(-x)) * 0.5

    def jvp(self, tangents, out, x):
        return tangents[0] * np.sinh(x)


class Asinh(Op):
    batching = "elementwise"

    def forward(self, x):
        return np.arcsinh(x)

    def backward(self, grad, out, x):
        return (grad / np.sqrt(x * x + 1),)

    def scalar_forward(self, x):
        # log(x + √(x² + 1)), by symmetry from |x| so no cancellation for x < 0
        return object_arrays.elementwise(
            lambda v: (
                (v + (v * v + 1) ** 0.5).log() if v >= 0 else -((-v + (v * v + 1) ** 0.5).log())
            ),
            x,
        )

    def jvp(self, tangents, out, x):
        return tangents[0] / np.sqrt(x * x + 1)


class Acosh(Op):
    batching = "elementwise"

    def forward(self, x):
        return np.arccosh(x)

    def backward(self, grad, out, x):
        return (grad / np.sqrt(x * x - 1),)

    def scalar_forward(self, x):
        return np.log(x + (x * x - 1) ** 0.5)

    def jvp(self, tangents, out, x):
        return tangents[0] / np.sqrt(x * x - 1)


class Atanh(Op):
    batching = "elementwise"

    def forward(self, x):
        return np.arctanh(x)

    def backward(self, grad, out, x):
        return (grad / (1 - x * x),)

    def scalar_forward(self, x):
        return np.log((1 + x) / (1 - x)) * 0.5

    def jvp(self, tangents, out, x):
        return tangents[0] / (1 - x * x)


class Atan2(Op):
    """The angle of the point (x, y): ``atan2(y, x)``, broadcasting. Its slopes are
    ``x / (x² + y²)`` for y and ``−y / (x² + y²)`` for x (NaN at the origin, as PyTorch)."""

    batching = "elementwise"

    def forward(self, y, x):
        return np.arctan2(y, x)

    def backward(self, grad, out, y, x):
        ny, nx = self.needs_input_grad
        scale = grad / (x * x + y * y)
        return (
            sum_to(scale * x, shape_of(y)) if ny else None,
            sum_to(-scale * y, shape_of(x)) if nx else None,
        )

    def scalar_forward(self, y, x):
        def element(a: Any, b: Any) -> Any:
            a0, b0 = (float(getattr(v, "data", v)) for v in (a, b))
            r2 = a0 * a0 + b0 * b0
            return (a - a0) * (b0 / r2) + (b - b0) * (-a0 / r2) + math.atan2(a0, b0)

        return object_arrays.objects(np.frompyfunc(element, 2, 1)(y, x))

    def jvp(self, tangents, out, y, x):
        ty, tx = tangents
        r2 = x * x + y * y
        return add_tangents(
            None if ty is None else ty * x / r2, None if tx is None else -tx * y / r2
        )
