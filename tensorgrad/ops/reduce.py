"""Reductions over ``axis`` (None, an int or a tuple) with ``keepdims``."""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np

from tensorgrad.ops import object_arrays
from tensorgrad.ops.base import (
    Op,
    call,
    expand_reduced,
    linear_jvp,
    normalize_axis,
    reduction_axes,
    shape_of,
)


class _Reduction(Op):
    batching = "reduction"

    def __init__(self, axis: Any = None, keepdims: bool = False):
        self.axis, self.keepdims = axis, keepdims

    def _axes(self, x) -> tuple[int, ...]:
        """The reduced axes; a 0-d tensor takes dim 0 or -1, as PyTorch's (and keeps its
        one element)."""
        self.axes = reduction_axes(self.axis, len(shape_of(x)), self.name)
        return self.axes

    def _count(self, x) -> int:
        return int(np.prod([shape_of(x)[a] for a in self.axes], dtype=np.int64))

    def _reduce(self, values):
        """``values`` (of the input's shape) summed over the reduced axes, shaped like the
        output: how a JVP adds up its elements' contributions."""
        return values.sum(axis=self.axes, keepdims=self.keepdims)

    def _expand(self, grad, x):
        """The upstream gradient with reduced axes restored, broadcastable to ``x``."""
        return expand_reduced(grad, shape_of(x), self.axes, self.keepdims)


class Sum(_Reduction):
    uses_inputs = False

    def forward(self, x):
        return x.sum(axis=self._axes(x), keepdims=self.keepdims)

    def backward(self, grad, out, x):
        return (np.broadcast_to(self._expand(grad, x), shape_of(x)),)

    jvp = linear_jvp  # linear in its input: the op itself maps the tangent


class Mean(_Reduction):
    """The mean over ``axis``; of no elements, NaN without NumPy's warnings ("Mean of empty
    slice", 0/0), as PyTorch's (``x[mask].mean()`` with an empty mask)."""

    uses_inputs = False

    def forward(self, x):
        axes = self._axes(x)
        if not np.size(x) and not self._count(x):
            with np.errstate(invalid="ignore"):
                return np.true_divide(x.sum(axis=axes, keepdims=self.keepdims), 0)
        return x.mean(axis=axes, keepdims=self.keepdims)

    def backward(self, grad, out, x):
        count = max(
            self._count(x), 1
        )  # an empty mean is NaN; its (empty) gradient needs no division
        return (np.broadcast_to(self._expand(grad, x) / count, shape_of(x)),)

    jvp = linear_jvp  # linear in its input: the op itself maps the tangent


def _variance(x: Any, axes: tuple[int, ...], keepdims: bool, correction: int, count: int) -> Any:
    """NumPy's ``var``; with no degrees of freedom left (one element, correction 1), NaN or
    inf without NumPy's "Degrees of freedom <= 0" warning."""
    if count - correction > 0:
        return x.var(axis=axes, keepdims=keepdims, ddof=correction)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return x.var(axis=axes, keepdims=keepdims, ddof=correction)


class Var(_Reduction):
    """Variance with ``correction`` (1: the unbiased estimate, PyTorch's default; 0: NumPy's)."""

    def __init__(self, axis: Any = None, keepdims: bool = False, correction: int = 1):
        super().__init__(axis, keepdims)
        self.correction = correction

    def forward(self, x):
        return _variance(x, self._axes(x), self.keepdims, self.correction, self._count(x))

    def scalar_forward(self, x):
        objects = object_arrays.objects  # (ndarray.var calls conjugate, which values lack)
        axes, count = self._axes(x), self._count(x)
        centered = objects(x - objects(x).sum(axis=axes, keepdims=True) / count)
        squares = objects(centered * centered)
        out = objects(squares.sum(axis=axes, keepdims=True) / (count - self.correction))
        return out if self.keepdims else np.squeeze(out, axis=axes)

    def backward(self, grad, out, x):
        centered = x - x.mean(axis=self.axes, keepdims=True)
        dof = self._count(x) - self.correction
        scale = 2 / dof if dof > 0 else float("nan")  # as the forward: no variance to speak of
        return (self._expand(grad, x) * centered * scale,)

    def jvp(self, tangents, out, x):
        centered = x - x.mean(axis=self.axes, keepdims=True)
        dof = self._count(x) - self.correction
        scale = 2 / dof if dof > 0 else float("nan")
        return self._reduce(centered * tangents[0]) * scale


class Std(_Reduction):
    """Standard deviation with ``correction``. Where it is 0 (a constant slice) the gradient
    is 0, as in PyTorch, instead of the 0/0 that ``sqrt(var)`` would give."""

    uses_output = True

    def __init__(self, axis: Any = None, keepdims: bool = False, correction: int = 1):
        super().__init__(axis, keepdims)
        self.correction = correction

    def forward(self, x):
        axes = self._axes(x)
        return np.sqrt(_variance(x, axes, self.keepdims, self.correction, self._count(x)))

    def scalar_forward(self, x):
        """sqrt(var), except where the variance is exactly 0 (a constant slice, or one
        element with correction 0): there the result is 0 with a zero gradient, PyTorch's
        convention, where sqrt's slope would be 1/0."""
        var = Var(self.axis, self.keepdims, self.correction).scalar_forward(x)
        return object_arrays.elementwise(lambda v: v * 0.0 if v.data == 0 else v.sqrt(), var)

    def backward(self, grad, out, x):
        centered = x - x.mean(axis=self.axes, keepdims=True)
        dof = self._count(x) - self.correction
        std = self._expand(out, x)
        safe = np.where(std == 0, 1.0, std)
        scale = np.where(std == 0, 0.0, self._expand(grad, x) / safe)
        # no degrees of freedom: NaN, in the input's shape (centered's, not the output's)
        return (scale * centered / dof if dof > 0 else scale * centered * float("nan"),)

    def jvp(self, tangents, out, x):
        centered = x - x.mean(axis=self.axes, keepdims=True)
        dof = self._count(x) - self.correction
        safe = np.where(out == 0, 1.0, out)
        slope = self._reduce(centered * tangents[0]) / (dof if dof > 0 else float("nan"))
        return np.where(out == 0, 0.0, slope / safe)


class Norm(_Reduction):
    """The vector p-norm over ``axis`` (PyTorch's ``norm``/``linalg.vector_norm``): p = 2 by
    default, any p > 0, ``inf`` and ``-inf`` (max and min of |x|), and 0 (the count of
    non-zeros, which has no gradient). Where the norm is 0 the gradient is 0, as in PyTorch;
    ties for ±inf share the gradient evenly."""

    uses_output = True

    def __init__(self, p: float = 2.0, axis: Any = None, keepdims: bool = False):
        super().__init__(axis, keepdims)
        self.p = float(p)

    def forward(self, x):
        axes, p = self._axes(x), self.p
        if (p < 0 or p == math.inf) and self._count(x) == 0:
            raise RuntimeError(
                f"norm: cannot compute the {p:g} norm over no elements (shape {shape_of(x)}, "
                f"dim {self.axis}): the max, the min and negative powers have no identity"
            )
        a = np.abs(x)
        if p != 0 and self._count(x) == 1:  # |x| itself, as PyTorch's: x² of 1e30 overflows
            return a.sum(axis=axes, keepdims=self.keepdims)
        if p == math.inf:
            return a.max(axis=axes, keepdims=self.keepdims, initial=0)
        if p == -math.inf:
            return a.min(axis=axes, keepdims=self.keepdims, initial=math.inf)
        if p == 0:
            return (a != 0).sum(axis=axes, keepdims=self.keepdims).astype(np.result_type(x))
        if p == 2:
            return np.sqrt((x * x).sum(axis=axes, keepdims=self.keepdims))
        return ((a**p).sum(axis=axes, keepdims=self.keepdims)) ** (1 / p)

    def scalar_forward(self, x):
        """max/min of |x| for ±inf, (Σ|x|^p)^(1/p) otherwise; p = 0 (a count) and norms of
        nothing are constants."""
        objects = object_arrays.objects
        axes, p = self._axes(x), self.p
        if p == 0 or np.size(x) == 0:
            return self.forward(object_arrays.values_of(x))
        magnitudes = objects(np.abs(objects(x)))
        if abs(p) == math.inf:
            extreme = np.maximum if p > 0 else np.minimum
            out = objects(extreme.reduce(magnitudes, axis=axes, keepdims=True))
        else:
            out = objects(objects(magnitudes**p).sum(axis=axes, keepdims=True) ** (1 / p))
        return out if self.keepdims else np.squeeze(out, axis=axes)

    def backward(self, grad, out, x):
        p, norm, g = self.p, self._expand(out, x), self._expand(grad, x)
        if p == 0:
            return (x * 0.0,)
        if abs(p) == math.inf:
            winners = np.abs(x) == norm
            count = winners.sum(axis=self.axes, keepdims=True)
            return (np.sign(x) * winners * g / np.where(count == 0, 1, count),)
        safe = np.where(norm == 0, 1.0, norm)
        if p == 2:  # x / norm first: g / norm overflows for a subnormal norm, x / norm is ≤ 1
            return (np.where(norm == 0, 0.0, g) * (x / safe),)
        scale = np.where(norm == 0, 0.0, g / safe ** (p - 1))
        return (scale * np.sign(x) * np.abs(x) ** (p - 1),)

    def jvp(self, tangents, out, x):
        p, norm, t = self.p, self._expand(out, x), tangents[0]
        if p == 0:
            return np.zeros_like(out)
        if abs(p) == math.inf:
            winners = np.abs(x) == norm
            count = winners.sum(axis=self.axes, keepdims=True)
            return self._reduce(np.sign(x) * winners * t / np.where(count == 0, 1, count))
        safe = np.where(out == 0, 1.0, out)
        if p == 2:
            return np.where(out == 0, 0.0, self._reduce(x * t) / safe)
        slope = self._reduce(np.sign(x) * np.abs(x) ** (p - 1) * t)
        return np.where(out == 0, 0.0, slope / safe ** (p - 1))


class Prod(_Reduction):
    """The product over ``axis``, in the input's dtype. Its VJP is, for each element, the
    product of the others in its slice: ``out / x`` where the input has no zero (PyTorch's
    form); where it has zeros, from the product of the non-zero elements, so that it is
    exact there (one zero: the product of the others; two or more: 0) and its own
    derivative, the second derivative, is too."""

    uses_output = True

    def forward(self, x):
        axes = self._axes(x)
        with np.errstate(over="ignore"):  # beyond the dtype's range: ±inf, as PyTorch's
            return np.prod(x, axis=axes, keepdims=self.keepdims, dtype=np.result_type(x))

    def backward(self, grad, out, x):
        if not np.ndim(x):  # the product of one 0-d element: the identity (PyTorch's, at inf too)
            return (grad,)
        g = self._expand(grad, x)
        zero = x == 0
        if not np.any(zero):
            return (g * (self._expand(out, x) / x),)
        axes = self.axes
        count = zero.sum(axis=axes, keepdims=True)  # zeros per slice
        safe = np.where(zero, 1.0, x)
        nonzero_product = call(Prod, safe, axis=axes, keepdims=True)
        # the slice's zeros, summed: 0, but its derivative reaches each of them
        zeros = np.where(zero, x, 0.0).sum(axis=axes, keepdims=True)
        # the product of a slice's zeros, and for each zero the product of the other zeros,
        # to first order in them (the order backward's own derivative can see)
        all_zeros = np.where(count == 0, 1.0, np.where(count == 1, zeros, 0.0))
        other_zeros = np.where(count == 1, 1.0, np.where(count == 2, zeros - x, 0.0))
        others = np.where(zero, nonzero_product * other_zeros, nonzero_product * all_zeros / safe)
        return (g * others,)

    def jvp(self, tangents, out, x):
        """Σᵢ (the product of the others) · ṫᵢ per slice: the VJP's slopes, dotted with ṫ."""
        (others,) = self.backward(np.ones(out.shape, out.dtype), out, x)
        return self._reduce(others * tangents[0])


class Cumsum(Op):
    """Running sums along ``axis``; the VJP is the running sum of the gradient from the end."""

    batching = "along_axis"

    uses_inputs = False

    def __init__(self, axis: int):
        self.axis = axis

    def forward(self, x):
        self.axis = normalize_axis(self.axis, max(len(shape_of(x)), 1), self.name)
        return np.cumsum(x, axis=self.axis if np.ndim(x) else None).reshape(np.shape(x))

    def backward(self, grad, out, x):
        if not np.ndim(grad):
            return (grad,)
        return (np.flip(np.cumsum(np.flip(grad, self.axis), axis=self.axis), self.axis),)

    jvp = linear_jvp  # linear in its input: the op itself maps the tangent


class _Extremum(_Reduction):
    """Max or min (PyTorch's ``amax``/``amin``, and ``max()`` without a dim). Tied extreme
    elements share the gradient evenly, so it sums to the upstream gradient whatever the
    ties; a NaN is the extreme (it propagates), and takes the gradient, as in PyTorch."""

    uses_output = True

    def backward(self, grad, out, x):
        extreme = self._expand(out, x)
        winners = (x == extreme) | (np.isnan(x) & np.isnan(extreme))
        count = winners.sum(axis=self.axes, keepdims=True).astype(grad.dtype)
        return (winners * (self._expand(grad, x) / count),)

    def jvp(self, tangents, out, x):
        extreme = self._expand(out, x)
        winners = (x == extreme) | (np.isnan(x) & np.isnan(extreme))
        count = winners.sum(axis=self.axes, keepdims=True).astype(out.dtype)
        return self._reduce(winners * tangents[0] / count)


class Max(_Extremum):
    def forward(self, x):
        return x.max(axis=self._axes(x), keepdims=self.keepdims)


class Min(_Extremum):
    def forward(self, x):
        return x.min(axis=self._axes(x), keepdims=self.keepdims)


class LogSumExp(_Reduction):
    """``log(sum(exp(x)))`` computed stably by shifting by the maximum."""

    dtypes = "float"
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

    def scalar_forward(self, x):
        objects = object_arrays.objects  # (np.isfinite does not take values)
        axes = self._axes(x)
        if np.size(x) == 0:  # nothing to differentiate: the constant result (-inf or empty)
            return self.forward(np.zeros(np.shape(x)))
        shift = object_arrays.values_of(x).max(axis=axes, keepdims=True)
        total = objects(objects(np.exp(objects(x - shift))).sum(axis=axes, keepdims=True))
        out = objects(np.log(total) + shift)
        return out if self.keepdims else np.squeeze(out, axis=axes)

    def backward(self, grad, out, x):
        with np.errstate(invalid="ignore"):  # a slice of -inf: exp(-inf − -inf), NaN (PyTorch's)
            return (self._expand(grad, x) * np.exp(x - self._expand(out, x)),)

    def jvp(self, tangents, out, x):
        with np.errstate(invalid="ignore"):
            return self._reduce(np.exp(x - self._expand(out, x)) * tangents[0])
