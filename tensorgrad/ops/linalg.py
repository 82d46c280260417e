"""Matrix multiplication: 1-D, 2-D and batched, with broadcast batch dimensions."""

from __future__ import annotations

import numpy as np

from tensorgrad.ops.base import Op, add_tangents, shape_of, sum_to


class MatMul(Op):
    """``x @ y`` with NumPy's rules.

    For Z = X W the VJPs are dX = dZ Wᵀ and dW = Xᵀ dZ. A 1-D operand is treated as a row
    (left) or a column (right) matrix, and batch dimensions that broadcast are summed back.
    """

    def reads_input(self, i, needs):
        return needs[1 - i]  # dX reads W, dW reads X

    def forward(self, x, y):
        xs, ys = shape_of(x), shape_of(y)
        if not xs or not ys:
            raise ValueError(
                f"matmul: both operands need at least 1 dimension, got shapes {xs} and {ys}"
            )
        try:
            return np.matmul(x, y)
        except ValueError:
            inner_x, inner_y = xs[-1], ys[-2] if len(ys) > 1 else ys[0]
            if inner_x != inner_y:
                reason = f"inner dimensions differ ({inner_x} vs {inner_y})"
            else:
                reason = "batch dimensions do not broadcast"
            raise ValueError(
                f"matmul: shapes {xs} and {ys} cannot be multiplied: {reason}"
            ) from None

    def backward(self, grad, out, x, y):
        nx, ny = self.needs_input_grad
        xs, ys = shape_of(x), shape_of(y)
        x2 = x.reshape(1, -1) if len(xs) == 1 else x
        y2 = y.reshape(-1, 1) if len(ys) == 1 else y
        if len(xs) == 1 and len(ys) == 1:
            grad = grad.reshape(1, 1)
        elif len(xs) == 1:
            grad = grad.reshape((*shape_of(grad)[:-1], 1, shape_of(grad)[-1]))
        elif len(ys) == 1:
            grad = grad.reshape((*shape_of(grad), 1))
        dx = dy = None
        if nx:
            dx = sum_to(grad @ y2.swapaxes(-1, -2), shape_of(x2)).reshape(xs)
        if ny:
            dy = sum_to(x2.swapaxes(-1, -2) @ grad, shape_of(y2)).reshape(ys)
        return dx, dy

    def jvp(self, tangents, out, x, y):
        tx, ty = tangents
        return add_tangents(None if tx is None else tx @ y, None if ty is None else x @ ty)
