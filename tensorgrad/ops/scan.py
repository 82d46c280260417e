"""Cumulative ops beyond ``cumsum``: ``cumprod`` and ``logcumsumexp`` (``cummax``/``cummin``
need no op: their values are a ``gather`` at the running arg-extreme)."""

from __future__ import annotations

import numpy as np

from tensorgrad.ops import object_arrays
from tensorgrad.ops.base import Op, call, normalize_axis, shape_of


def _reverse_cumsum(a, axis: int):
    return np.flip(np.cumsum(np.flip(a, axis), axis=axis), axis)


class Cumprod(Op):
    """Running products along ``axis``. The VJP is ``revcumsum(g·out) / x`` before the first
    zero of a slice and 0 after it; at the first zero itself, the products with that factor
    left out (PyTorch's rule, so zeros give exact gradients, not 0/0)."""

    batching = "along_axis"

    uses_output = True

    def __init__(self, axis: int):
        self.axis = axis

    def forward(self, x):
        self.axis = normalize_axis(self.axis, max(len(shape_of(x)), 1), self.name)
        if not np.ndim(x):
            return np.array(x, copy=True)
        with np.errstate(over="ignore"):  # beyond the dtype's range: ±inf, as PyTorch's
            return np.cumprod(x, axis=self.axis)

    def backward(self, grad, out, x):
        if not np.ndim(x) or not np.size(x) or np.shape(x)[self.axis] == 1:
            return (grad,)  # one element per scan: the identity (exact at inf, PyTorch's)
        axis = self.axis
        # the masks come from x's values (constants); the arithmetic runs on arrays, or on
        # Tensors when the backward is recorded (create_graph), by the same code
        values = np.asarray(x)
        zero = values == 0
        if not zero.any():
            return (_reverse_cumsum(grad * out, axis) / x,)
        if not isinstance(x, np.ndarray):
            return (self._recorded_vjp_at_zeros(grad, x),)
        seen = np.cumsum(zero, axis=axis)  # zeros so far, this element included
        before = seen == 0
        first = zero & (seen == 1)
        safe = np.where(before, x, 1)
        # the outputs from the first zero on are 0 (or 0 · inf) and add nothing before it
        before_zero = np.where(before, grad * out, 0)
        result = np.where(before, _reverse_cumsum(before_zero, axis) / safe, 0)
        # at the first zero: Σ_{j ≥ z} g_j · Π_{i ≤ j, i ≠ z} x_i, the zero replaced by 1
        partial = np.where(seen >= 1, call(Cumprod, np.where(first, 1, x), axis=axis), 0)
        at_first = (grad * partial).sum(axis=axis, keepdims=True)
        return (np.where(first, at_first, result),)

    def jvp(self, tangents, out, x):
        (t,) = tangents
        if not np.ndim(x) or not np.size(x) or np.shape(x)[self.axis] == 1:
            return t
        axis = self.axis
        if not (x == 0).any():
            return out * np.cumsum(t / x, axis=axis)
        # d out_j = Σ_{k ≤ j} Π_{i ≤ j} (x with x_k replaced by t_k)_i, one copy per k
        xs, ts = np.swapaxes(x, axis, -1), np.swapaxes(t, axis, -1)
        n = xs.shape[-1]
        eye = np.eye(n, dtype=bool)
        copies = np.where(eye, ts[..., None, :], xs[..., None, :])  # [..., k, j]
        earlier = np.triu(np.ones((n, n), dtype=bool))  # k ≤ j
        return np.swapaxes((call(Cumprod, copies, axis=-1) * earlier).sum(axis=-2), axis, -1)

    def _recorded_vjp_at_zeros(self, grad, x):
        """On Tensors with zeros, the VJP as the definition, ``Σ_{j ≥ k} g_j Π_{i ≤ j, i ≠ k}
        x_i``, through the running products of n copies of each slice (copy k with x_k set
        to 1): quadratic in the slice's length, but every dependence on x is recorded, so
        second derivatives are exact at the zeros too."""
        axis = self.axis
        xs = np.swapaxes(x, axis, -1)
        gs = np.swapaxes(grad, axis, -1)
        n = np.shape(xs)[-1]
        copies = np.where(np.eye(n, dtype=bool), 1, xs[..., None, :])  # [..., k, j]
        products = call(Cumprod, copies, axis=-1)
        later = np.triu(np.ones((n, n), dtype=bool))  # j ≥ k
        result = (gs[..., None, :] * products * later).sum(axis=-1)
        return np.swapaxes(result, axis, -1)


class LogCumSumExp(Op):
    """``log(cumsum(exp(x)))`` along ``axis``, stably (``np.logaddexp.accumulate``). The VJP
    ``Σ_{j ≥ k} g_j exp(x_k − out_j)`` is computed in log space, positive and negative
    parts of g apart, as PyTorch does, so it neither overflows nor underflows."""

    dtypes = "floating"
    batching = "along_axis"

    uses_output = True

    def __init__(self, axis: int):
        self.axis = axis

    def forward(self, x):
        self.axis = normalize_axis(self.axis, max(len(shape_of(x)), 1), self.name)
        if not np.ndim(x):
            return np.array(x, copy=True)
        return np.logaddexp.accumulate(x, axis=self.axis)

    def backward(self, grad, out, x):
        if not np.ndim(x) or not np.size(x) or np.shape(x)[self.axis] == 1:
            return (grad,)  # one element per scan: the identity (exact at inf, PyTorch's)
        axis = self.axis
        if not isinstance(x, np.ndarray):  # on Tensors (create_graph): the formula recorded,
            # shifted by the largest output (a constant) so that the exponentials stay finite
            shift = np.max(np.asarray(out), axis=axis, keepdims=True)
            weights = _reverse_cumsum(grad * np.exp(shift - out), axis)
            return (weights * np.exp(x - shift),)
        with np.errstate(divide="ignore", invalid="ignore"):
            result = np.zeros_like(grad)
            for sign in (1.0, -1.0):
                part = np.where(grad * sign > 0, grad * sign, 0)
                logs = np.log(part) - out
                reverse = np.flip(np.logaddexp.accumulate(np.flip(logs, axis), axis=axis), axis)
                result = result + sign * np.exp(reverse + x)
        return (result,)

    def scalar_forward(self, x):
        self.axis = normalize_axis(self.axis, max(len(shape_of(x)), 1), self.name)
        if not np.ndim(x) or not np.size(x):
            return object_arrays.objects(np.array(x, dtype=object, copy=True))
        shift = float(object_arrays.values_of(x).max())
        exps = object_arrays.objects(np.exp(object_arrays.objects(x - shift)))
        return object_arrays.objects(
            np.log(object_arrays.objects(np.cumsum(exps, axis=self.axis))) + shift
        )

    def jvp(self, tangents, out, x):
        (t,) = tangents
        if not np.ndim(x) or not np.size(x) or np.shape(x)[self.axis] == 1:
            return t
        shift = np.max(x, axis=self.axis, keepdims=True)
        shift = np.where(np.isfinite(shift), shift, 0)
        return np.cumsum(t * np.exp(x - shift), axis=self.axis) * np.exp(shift - out)
