"""Reductions over ``axis`` (None, an int or a tuple) with ``keepdims``."""

from __future__ import annotations

from typing import Any

import numpy as np

from tensorgrad.ops.base import Op, expand_reduced, normalize_axes, shape_of


class _Reduction(Op):
    def __init__(self, axis: Any = None, keepdims: bool = False):
        self.axis, self.keepdims = axis, keepdims

    def _axes(self, x) -> tuple[int, ...]:
        self.axes = normalize_axes(self.axis, len(shape_of(x)), self.name)
        return self.axes

    def _count(self, x) -> int:
        return int(np.prod([shape_of(x)[a] for a in self.axes], dtype=np.int64))

    def _expand(self, grad, x):
        """The upstream gradient with reduced axes restored, broadcastable to ``x``."""
        return expand_reduced(grad, shape_of(x), self.axes, self.keepdims)


class Sum(_Reduction):
    uses_inputs = False

    def forward(self, x):
        return x.sum(axis=self._axes(x), keepdims=self.keepdims)

    def backward(self, grad, out, x):
        return (np.broadcast_to(self._expand(grad, x), shape_of(x)),)


class Mean(_Reduction):
    uses_inputs = False

    def forward(self, x):
        return x.mean(axis=self._axes(x), keepdims=self.keepdims)

    def backward(self, grad, out, x):
        count = max(
            self._count(x), 1
        )  # an empty mean is NaN; its (empty) gradient needs no division
        return (np.broadcast_to(self._expand(grad, x) / count, shape_of(x)),)


class Var(_Reduction):
    """Variance with ``correction`` (1: the unbiased estimate, PyTorch's default; 0: NumPy's)."""

    def __init__(self, axis: Any = None, keepdims: bool = False, correction: int = 1):
        super().__init__(axis, keepdims)
        self.correction = correction

    def forward(self, x):
        return x.var(axis=self._axes(x), keepdims=self.keepdims, ddof=self.correction)

    def backward(self, grad, out, x):
        centered = x - x.mean(axis=self.axes, keepdims=True)
        dof = self._count(x) - self.correction
        scale = 2 / dof if dof > 0 else float("nan")  # as the forward: no variance to speak of
        return (self._expand(grad, x) * centered * scale,)


class _Extremum(_Reduction):
    """Max or min. Tied extreme elements share the gradient evenly (as in HIPS autograd and
    tinygrad), so the gradient sums to the upstream gradient whatever the ties."""

    uses_output = True

    def backward(self, grad, out, x):
        winners = x == self._expand(out, x)
        count = winners.sum(axis=self.axes, keepdims=True).astype(grad.dtype)
        return (winners * (self._expand(grad, x) / count),)


class Max(_Extremum):
    def forward(self, x):
        return x.max(axis=self._axes(x), keepdims=self.keepdims)


class Min(_Extremum):
    def forward(self, x):
        return x.min(axis=self._axes(x), keepdims=self.keepdims)


class LogSumExp(_Reduction):
    """``log(sum(exp(x)))`` computed stably by shifting by the maximum."""

    uses_output = True

    def forward(self, x):
        axes = self._axes(x)
        if x.size == 0:
            shift = np.zeros([1 if i in axes else n for i, n in enumerate(x.shape)], x.dtype)
        else:
            shift = x.max(axis=axes, keepdims=True)
            shift = np.where(np.isfinite(shift), shift, 0).astype(x.dtype)
        total = np.exp(x - shift).sum(axis=axes, keepdims=True)
        with np.errstate(divide="ignore"):  # the log-sum-exp of nothing (or of -inf) is -inf
            out = np.log(total) + shift
        return out if self.keepdims else np.squeeze(out, axis=axes)

    def backward(self, grad, out, x):
        return (self._expand(grad, x) * np.exp(x - self._expand(out, x)),)
