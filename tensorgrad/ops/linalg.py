"""Matrix multiplication: 1-D, 2-D and batched, with broadcast batch dimensions."""

from __future__ import annotations

import numpy as np

from tensorgrad.ops.base import Op, add_tangents, shape_of, sum_to

#: three shortcuts for stacks of products, where NumPy's matmul makes one small BLAS call per
#: stack element (vmap's per-sample products): a right operand that is one matrix broadcast
#: over its stack axes (all their strides 0: per-sample copies of a weight) is multiplied as
#: one matrix, so is such a left operand times a stack of columns (a per-sample weight times
#: each sample's vector), and a product of columns by rows (inner size 1: per-sample outer
#: products) is an einsum of outer products (a broadcast multiplication for long rows).
#: Off: ``STACKED_SHORTCUTS = False``.
STACKED_SHORTCUTS = True


def _matmul(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    if type(x) is not np.ndarray or type(y) is not np.ndarray:  # Tensors: a recorded backward
        return x @ y
    if not STACKED_SHORTCUTS or x.ndim < 3 or y.ndim < 2 or not x.size or not y.size:
        return np.matmul(x, y)
    if x.shape[-1] == 1 and y.shape[-2] == 1:
        if y.shape[-1] >= 1024:  # long rows: a broadcast product, faster than einsum there
            return np.multiply(x, y)
        return np.einsum("...i,...j->...ij", x[..., 0], y[..., 0, :])
    if (
        y.ndim > 2
        and x.ndim == y.ndim
        and not any(y.strides[:-2])
        and x.shape[:-2] == y.shape[:-2]
        and x.shape[-1] == y.shape[-2]
    ):
        matrix = y[(0,) * (y.ndim - 2)]
        rows = x.reshape(-1, x.shape[-1]) @ matrix
        return rows.reshape(*x.shape[:-1], matrix.shape[-1])
    if (
        y.shape[-1] == 1
        and x.ndim == y.ndim
        and not any(x.strides[:-2])
        and x.shape[:-2] == y.shape[:-2]
        and x.shape[-1] == y.shape[-2]
    ):
        matrix = x[(0,) * (x.ndim - 2)]
        columns = matrix @ y.reshape(-1, y.shape[-2]).T  # every column at once
        return np.ascontiguousarray(columns.T).reshape(*y.shape[:-2], matrix.shape[0], 1)
    return np.matmul(x, y)


class MatMul(Op):
    """``x @ y`` with NumPy's rules.

    For Z = X W the VJPs are dX = dZ Wᵀ and dW = Xᵀ dZ. A 1-D operand is treated as a row
    (left) or a column (right) matrix, and batch dimensions that broadcast are summed back.
    """

    batching = "matmul"

    def reads_input(self, i, needs):
        return needs[1 - i]  # dX reads W, dW reads X

    def forward(self, x, y):
        xs, ys = shape_of(x), shape_of(y)
        if not xs or not ys:
            raise ValueError(
                f"matmul: both operands need at least 1 dimension, got shapes {xs} and {ys}"
            )
        try:
            return _matmul(x, y)
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
            dx = sum_to(_matmul(grad, y2.swapaxes(-1, -2)), shape_of(x2))
            dx = dx.reshape(xs) if len(xs) == 1 else dx  # (a view would be copied when stored)
        if ny:
            dy = sum_to(_matmul(x2.swapaxes(-1, -2), grad), shape_of(y2))
            dy = dy.reshape(ys) if len(ys) == 1 else dy
        return dx, dy

    def jvp(self, tangents, out, x, y):
        tx, ty = tangents
        return add_tangents(None if tx is None else tx @ y, None if ty is None else x @ ty)
