"""Elementwise ops. Binary ops broadcast, so their VJPs sum back with ``sum_to``."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from tensorgrad.ops.base import Op, call, shape_of, sum_to


class Add(Op):
    uses_inputs = False

    def forward(self, x, y):
        return x + y

    def backward(self, grad, out, x, y):
        nx, ny = self.needs_input_grad
        return (
            sum_to(grad, shape_of(x)) if nx else None,
            sum_to(grad, shape_of(y)) if ny else None,
        )


class Sub(Op):
    uses_inputs = False

    def forward(self, x, y):
        return x - y

    def backward(self, grad, out, x, y):
        nx, ny = self.needs_input_grad
        return (
            sum_to(grad, shape_of(x)) if nx else None,
            sum_to(-grad, shape_of(y)) if ny else None,
        )


class Mul(Op):
    def forward(self, x, y):
        return x * y

    def backward(self, grad, out, x, y):
        nx, ny = self.needs_input_grad
        return (
            sum_to(grad * y, shape_of(x)) if nx else None,
            sum_to(grad * x, shape_of(y)) if ny else None,
        )


class Div(Op):
    def forward(self, x, y):
        return x / y

    def backward(self, grad, out, x, y):
        nx, ny = self.needs_input_grad
        return (
            sum_to(grad / y, shape_of(x)) if nx else None,
            sum_to(-grad * x / (y * y), shape_of(y)) if ny else None,
        )


class Neg(Op):
    uses_inputs = False

    def forward(self, x):
        return -x

    def backward(self, grad, out, x):
        return (-grad,)


class Pow(Op):
    """``x ** y``. With a constant exponent only the base gets a gradient.

    Conventions (PyTorch's): a constant exponent of 0 gives a zero gradient everywhere (even at
    x = 0); the gradient with respect to the exponent is 0 where x = 0, and NaN where x < 0.
    """

    uses_output = True

    def forward(self, x, y):
        return x**y

    def backward(self, grad, out, x, y):
        nx, ny = self.needs_input_grad
        dx = dy = None
        if nx:
            if isinstance(y, (int, float)):
                dx = grad * 0.0 if y == 0 else grad * (y * x ** (y - 1))
            else:
                dx = sum_to(grad * (y * x ** (y - 1)), shape_of(x))
        if ny:
            positive = x > 0
            log_x = np.where(
                positive, np.log(np.where(positive, x, 1.0)), np.where(x == 0, 0.0, np.nan)
            )
            dy = sum_to(grad * out * log_x, shape_of(y))
        return dx, dy


class Exp(Op):
    uses_inputs = False
    uses_output = True

    def forward(self, x):
        return np.exp(x)

    def backward(self, grad, out, x):
        return (grad * out,)


class Log(Op):
    def forward(self, x):
        return np.log(x)

    def backward(self, grad, out, x):
        return (grad / x,)


class Sqrt(Op):
    uses_inputs = False
    uses_output = True

    def forward(self, x):
        return np.sqrt(x)

    def backward(self, grad, out, x):
        return (grad / (out * 2),)


class Abs(Op):
    """``|x|``; its derivative at 0 is taken as 0 (the subgradient PyTorch uses)."""

    def forward(self, x):
        return np.abs(x)

    def backward(self, grad, out, x):
        return (grad * np.sign(x),)


class Sin(Op):
    def forward(self, x):
        return np.sin(x)

    def backward(self, grad, out, x):
        return (grad * np.cos(x),)


class Cos(Op):
    def forward(self, x):
        return np.cos(x)

    def backward(self, grad, out, x):
        return (-grad * np.sin(x),)


class Tanh(Op):
    uses_inputs = False
    uses_output = True

    def forward(self, x):
        return np.tanh(x)

    def backward(self, grad, out, x):
        return (grad * (1 - out * out),)


class Sigmoid(Op):
    """The logistic function, computed without overflow: exp is only taken of -|x|."""

    uses_inputs = False
    uses_output = True

    def forward(self, x):
        e = np.exp(-np.abs(x))
        return np.where(x >= 0, 1 / (1 + e), e / (1 + e))

    def backward(self, grad, out, x):
        return (grad * (out * (1 - out)),)


class Relu(Op):
    """``max(x, 0)``; its derivative at 0 is taken as 0, as in PyTorch."""

    def forward(self, x):
        return np.maximum(x, 0)

    def backward(self, grad, out, x):
        if self.grad_is_free:
            grad *= x > 0
            return (grad,)
        return (grad * (x > 0),)


class LeakyRelu(Op):
    name = "leaky_relu"

    def __init__(self, negative_slope: float = 0.01):
        self.negative_slope = negative_slope

    def forward(self, x):
        return np.where(x > 0, x, x * self.negative_slope)

    def backward(self, grad, out, x):
        return (grad * np.where(x > 0, 1.0, self.negative_slope).astype(grad.dtype),)


class Erf(Op):
    """The error function (SciPy's, imported on first use: SciPy comes with scikit-learn)."""

    def forward(self, x):
        from scipy.special import erf

        return erf(x)

    def backward(self, grad, out, x):
        return (grad * (2 / math.sqrt(math.pi)) * np.exp(-(x * x)),)


_SQRT_2_OVER_PI = math.sqrt(2 / math.pi)
_INV_SQRT_2 = 1 / math.sqrt(2)
_INV_SQRT_2PI = 1 / math.sqrt(2 * math.pi)


class Gelu(Op):
    """GELU, ``x * Φ(x)``: exact (``approximate="none"``, with erf) or the tanh approximation."""

    def __init__(self, approximate: str = "none"):
        if approximate not in ("none", "tanh"):
            raise ValueError(f"gelu: approximate must be 'none' or 'tanh', got {approximate!r}")
        self.approximate = approximate

    def forward(self, x):
        if self.approximate == "tanh":
            return 0.5 * x * (1 + np.tanh(_SQRT_2_OVER_PI * (x + 0.044715 * x**3)))
        return 0.5 * x * (1 + call(Erf, x * _INV_SQRT_2))

    def backward(self, grad, out, x):
        if self.approximate == "tanh":
            t = np.tanh(_SQRT_2_OVER_PI * (x + 0.044715 * x**3))
            dt = _SQRT_2_OVER_PI * (1 + 3 * 0.044715 * x * x)
            return (grad * (0.5 * (1 + t) + 0.5 * x * (1 - t * t) * dt),)
        cdf = 0.5 * (1 + call(Erf, x * _INV_SQRT_2))
        pdf = np.exp(-0.5 * x * x) * _INV_SQRT_2PI
        return (grad * (cdf + x * pdf),)


class Clip(Op):
    """Clamp to ``[low, high]`` (either may be None). The gradient passes where
    ``low <= x <= high``, boundaries included, as in PyTorch's clamp."""

    def __init__(self, low: Any = None, high: Any = None):
        if low is None and high is None:
            raise ValueError("clip: at least one of min and max must be given")
        self.low, self.high = low, high

    def forward(self, x):
        return np.clip(x, self.low, self.high)

    def backward(self, grad, out, x):
        if self.low is None:
            inside = x <= self.high
        elif self.high is None:
            inside = x >= self.low
        else:
            inside = (x >= self.low) * (x <= self.high)
        return (grad * inside,)


def _tie_weights(x: Any, y: Any, grad: Any) -> Any:
    """1 where x wins, 0 where y wins, 1/2 on ties: tied inputs split the gradient evenly."""
    return ((x > y) + (x == y) * 0.5).astype(grad.dtype)


class Maximum(Op):
    """Elementwise maximum; on ties each input gets half the gradient."""

    def forward(self, x, y):
        return np.maximum(x, y)

    def backward(self, grad, out, x, y):
        nx, ny = self.needs_input_grad
        w = _tie_weights(x, y, grad)
        return (
            sum_to(grad * w, shape_of(x)) if nx else None,
            sum_to(grad * (1 - w), shape_of(y)) if ny else None,
        )


class Minimum(Op):
    """Elementwise minimum; on ties each input gets half the gradient."""

    def forward(self, x, y):
        return np.minimum(x, y)

    def backward(self, grad, out, x, y):
        nx, ny = self.needs_input_grad
        w = _tie_weights(y, x, grad)
        return (
            sum_to(grad * w, shape_of(x)) if nx else None,
            sum_to(grad * (1 - w), shape_of(y)) if ny else None,
        )


class Where(Op):
    """``cond ? x : y``. ``cond`` is a constant; x and y broadcast against it."""

    def forward(self, cond, x, y):
        return np.where(cond, x, y)

    def backward(self, grad, out, cond, x, y):
        _, nx, ny = self.needs_input_grad
        return (
            None,
            sum_to(np.where(cond, grad, 0), shape_of(x)) if nx else None,
            sum_to(np.where(cond, 0, grad), shape_of(y)) if ny else None,
        )


class Cast(Op):
    """Change the dtype; the gradient is cast back to the input's dtype."""

    uses_inputs = False

    def __init__(self, dtype: Any):
        self.dtype = np.dtype(dtype)

    def forward(self, x):
        return x.astype(self.dtype)

    def backward(self, grad, out, x):
        return (grad.astype(x.dtype),)
