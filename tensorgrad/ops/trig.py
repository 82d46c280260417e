"""Inverse trigonometric and hyperbolic functions: asin … atanh, sinh, cosh, and ``atan2``.

Each VJP is written with operators and the ufuncs Tensors share (``np.sqrt``), or through
``call`` for the ones they do not (``cosh`` for ``sinh``'s slope), so second derivatives work.

At the ends of their domains (asin's ±1, atanh's ±1, acosh's 1), outside them and where they
overflow (sinh of 100 in float32), the values and slopes are IEEE's ±inf and NaN, given
silently as PyTorch gives them: each forward, VJP and JVP that can produce them from finite
inputs runs under ``np.errstate`` (:data:`_QUIET`'s flags), and only those.
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


#: the floating-point flags the functions here raise at and beyond their domains' ends
_QUIET = {"divide": "ignore", "invalid": "ignore", "over": "ignore"}

_asin_value = first_order(math.asin, lambda v: 1 / math.sqrt(1 - v * v))
_acos_value = first_order(math.acos, lambda v: -1 / math.sqrt(1 - v * v))
_atan_value = first_order(math.atan, lambda v: 1 / (1 + v * v))


class Asin(Op):
    dtypes = "float"
    batching = "elementwise"

    def forward(self, x):
        with np.errstate(**_QUIET):
            return np.arcsin(x)

    def backward(self, grad, out, x):
        with np.errstate(**_QUIET):
            return (grad / np.sqrt(1 - x * x),)

    def scalar_forward(self, x):
        return _asin_value(x)

    def jvp(self, tangents, out, x):
        with np.errstate(**_QUIET):
            return tangents[0] / np.sqrt(1 - x * x)


class Acos(Op):
    dtypes = "float"
    batching = "elementwise"

    def forward(self, x):
        with np.errstate(**_QUIET):
            return np.arccos(x)

    def backward(self, grad, out, x):
        with np.errstate(**_QUIET):
            return (-grad / np.sqrt(1 - x * x),)

    def scalar_forward(self, x):
        return _acos_value(x)

    def jvp(self, tangents, out, x):
        with np.errstate(**_QUIET):
            return -tangents[0] / np.sqrt(1 - x * x)


class Atan(Op):
    dtypes = "float"
    batching = "elementwise"

    def forward(self, x):
        return np.arctan(x)

    def backward(self, grad, out, x):
        with np.errstate(over="ignore"):  # x² overflows for |x| > 1.8e19 in float32: slope 0
            return (grad / (1 + x * x),)

    def scalar_forward(self, x):
        return _atan_value(x)

    def jvp(self, tangents, out, x):
        with np.errstate(over="ignore"):
            return tangents[0] / (1 + x * x)


class Sinh(Op):
    dtypes = "float"
    batching = "elementwise"

    def forward(self, x):
        with np.errstate(over="ignore"):
            return np.sinh(x)

    def backward(self, grad, out, x):
        with np.errstate(invalid="ignore"):  # a zero gradient times an overflowed cosh
            return (grad * call(Cosh, x),)

    def scalar_forward(self, x):
        return (np.exp(x) - np.exp(-x)) * 0.5

    def jvp(self, tangents, out, x):
        with np.errstate(over="ignore", invalid="ignore"):
            return tangents[0] * call(Cosh, x)


class Cosh(Op):
    dtypes = "float"
    batching = "elementwise"

    def forward(self, x):
        with np.errstate(over="ignore"):
            return np.cosh(x)

    def backward(self, grad, out, x):
        with np.errstate(invalid="ignore"):  # a zero gradient times an overflowed sinh
            return (grad * call(Sinh, x),)

    def scalar_forward(self, x):
        return (np.exp(x) + np.exp(-x)) * 0.5

    def jvp(self, tangents, out, x):
        with np.errstate(over="ignore", invalid="ignore"):
            return tangents[0] * call(Sinh, x)


class Asinh(Op):
    dtypes = "float"
    batching = "elementwise"

    def forward(self, x):
        return np.arcsinh(x)

    def backward(self, grad, out, x):
        with np.errstate(over="ignore"):  # x² overflows for |x| > 1.8e19 in float32: slope 0
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
        with np.errstate(over="ignore"):
            return tangents[0] / np.sqrt(x * x + 1)


class Acosh(Op):
    dtypes = "float"
    batching = "elementwise"

    def forward(self, x):
        with np.errstate(**_QUIET):
            return np.arccosh(x)

    def backward(self, grad, out, x):
        with np.errstate(**_QUIET):
            return (grad / np.sqrt(x * x - 1),)

    def scalar_forward(self, x):
        return np.log(x + (x * x - 1) ** 0.5)

    def jvp(self, tangents, out, x):
        with np.errstate(**_QUIET):
            return tangents[0] / np.sqrt(x * x - 1)


class Atanh(Op):
    dtypes = "float"
    batching = "elementwise"

    def forward(self, x):
        with np.errstate(**_QUIET):
            return np.arctanh(x)

    def backward(self, grad, out, x):
        with np.errstate(**_QUIET):
            return (grad / (1 - x * x),)

    def scalar_forward(self, x):
        return np.log((1 + x) / (1 - x)) * 0.5

    def jvp(self, tangents, out, x):
        with np.errstate(**_QUIET):
            return tangents[0] / (1 - x * x)


def _inverse_square_radius(y: Any, x: Any) -> Any:
    """``1 / (x² + y²)``, and 0 where x² + y² is 0 (the origin, or a radius whose square
    underflows): PyTorch 2.13's atan2 slopes are 0 there, not 0 · inf."""
    r2 = x * x + y * y
    return 1 / np.where(r2 == 0, np.inf, r2)


class Hypot(Op):
    """``sqrt(x² + y²)`` without overflow or underflow on the way (NumPy's ``hypot``, as
    PyTorch's: 1e30 and 1e30 in float32 give 1.4e30, not inf). Its slopes are ``x / out``
    and ``y / out``: NaN at the origin, PyTorch's."""

    batching = "elementwise"
    uses_output = True

    def forward(self, x, y):
        return np.hypot(x, y)

    def scalar_forward(self, x, y):
        return object_arrays.objects(object_arrays.objects(x * x + y * y) ** 0.5)

    def backward(self, grad, out, x, y):
        nx, ny = self.needs_input_grad
        scale = grad / out
        return (
            sum_to(scale * x, shape_of(x)) if nx else None,
            sum_to(scale * y, shape_of(y)) if ny else None,
        )

    def jvp(self, tangents, out, x, y):
        tx, ty = tangents
        return add_tangents(
            None if tx is None else tx * x / out, None if ty is None else ty * y / out
        )


class LogAddExp(Op):
    """``log(exp(x) + exp(y))``, NumPy's (no overflow on the way). Its slopes are PyTorch's
    ``1 / (1 + exp(y − x))`` and ``1 / (1 + exp(x − y))``: 1 and 0 for ``x = inf`` beside
    a finite ``y``, where a composition of exp and log meets ``inf / inf``."""

    batching = "elementwise"
    #: ``log`` of the base (``logaddexp2``'s is ln 2): the slopes' ``exp`` scales by it
    log_base = 1.0

    def forward(self, x, y):
        return np.logaddexp(x, y)

    def scalar_forward(self, x, y):
        c = self.log_base
        return np.log(np.exp(x * c) + np.exp(y * c)) / c

    def _slopes(self, x, y):
        c = self.log_base
        with np.errstate(**_QUIET):
            return 1 / (1 + np.exp((y - x) * c)), 1 / (1 + np.exp((x - y) * c))

    def backward(self, grad, out, x, y):
        nx, ny = self.needs_input_grad
        sx, sy = self._slopes(x, y)
        return (
            sum_to(grad * sx, shape_of(x)) if nx else None,
            sum_to(grad * sy, shape_of(y)) if ny else None,
        )

    def jvp(self, tangents, out, x, y):
        tx, ty = tangents
        sx, sy = self._slopes(x, y)
        return add_tangents(None if tx is None else tx * sx, None if ty is None else ty * sy)


class LogAddExp2(LogAddExp):
    """``log2(2^x + 2^y)``, NumPy's; slopes as :class:`LogAddExp`'s, in base 2."""

    log_base = math.log(2)

    def forward(self, x, y):
        return np.logaddexp2(x, y)


class Atan2(Op):
    """The angle of the point (x, y): ``atan2(y, x)``, broadcasting. Its slopes are
    ``x / (x² + y²)`` for y and ``−y / (x² + y²)`` for x, and 0 at the origin (PyTorch's)."""

    batching = "elementwise"

    def forward(self, y, x):
        return np.arctan2(y, x)

    def backward(self, grad, out, y, x):
        ny, nx = self.needs_input_grad
        with np.errstate(over="ignore", invalid="ignore"):  # x² of 1e20 in float32: inf
            scale = grad * _inverse_square_radius(y, x)
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
        with np.errstate(over="ignore", invalid="ignore"):
            recip = _inverse_square_radius(y, x)
            return add_tangents(
                None if ty is None else ty * x * recip, None if tx is None else -tx * y * recip
            )
