"""Inverse trigonometric and hyperbolic functions: asin … atanh, sinh, cosh, and ``atan2``.

Each VJP is written with operators and the ufuncs Tensors share (``np.sqrt``), or through
``call`` for the ones they do not (``cosh`` for ``sinh``'s slope), so second derivatives work.
"""

from __future__ import annotations

import numpy as np

from tensorgrad.ops.base import Op, call, shape_of, sum_to


class Asin(Op):
    def forward(self, x):
        return np.arcsin(x)

    def backward(self, grad, out, x):
        return (grad / np.sqrt(1 - x * x),)


class Acos(Op):
    def forward(self, x):
        return np.arccos(x)

    def backward(self, grad, out, x):
        return (-grad / np.sqrt(1 - x * x),)


class Atan(Op):
    def forward(self, x):
        return np.arctan(x)

    def backward(self, grad, out, x):
        return (grad / (1 + x * x),)


class Sinh(Op):
    def forward(self, x):
        return np.sinh(x)

    def backward(self, grad, out, x):
        return (grad * call(Cosh, x),)


class Cosh(Op):
    def forward(self, x):
        return np.cosh(x)

    def backward(self, grad, out, x):
        return (grad * call(Sinh, x),)


class Asinh(Op):
    def forward(self, x):
        return np.arcsinh(x)

    def backward(self, grad, out, x):
        return (grad / np.sqrt(x * x + 1),)


class Acosh(Op):
    def forward(self, x):
        return np.arccosh(x)

    def backward(self, grad, out, x):
        return (grad / np.sqrt(x * x - 1),)


class Atanh(Op):
    def forward(self, x):
        return np.arctanh(x)

    def backward(self, grad, out, x):
        return (grad / (1 - x * x),)


class Atan2(Op):
    """The angle of the point (x, y): ``atan2(y, x)``, broadcasting. Its slopes are
    ``x / (x² + y²)`` for y and ``−y / (x² + y²)`` for x (NaN at the origin, as PyTorch)."""

    def forward(self, y, x):
        return np.arctan2(y, x)

    def backward(self, grad, out, y, x):
        ny, nx = self.needs_input_grad
        scale = grad / (x * x + y * y)
        return (
            sum_to(scale * x, shape_of(y)) if ny else None,
            sum_to(-scale * y, shape_of(x)) if nx else None,
        )
