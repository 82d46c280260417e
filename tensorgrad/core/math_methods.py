"""The Tensor's math: pointwise functions, arithmetic by name, comparisons, reductions and
casts, with PyTorch's names and semantics (``dim``/``keepdim``; NumPy's ``axis``/``keepdims``
accepted, see ``args.numpy_names``).

Most methods are one op; the rest are composed from other methods (``std`` aside, which needs
PyTorch's rule at zero), so they need no VJP of their own and are checked for free.
"""

from __future__ import annotations

import math
from collections import namedtuple
from typing import Any

import numpy as np

from tensorgrad import array_backend, grad_mode, ops
from tensorgrad.core import engine, functions
from tensorgrad.core.args import numpy_names
from tensorgrad.core.engine import apply, apply_inplace, binary, wrap
from tensorgrad.core.product_dtypes import check_kernel, check_matmul_dtypes, check_same_dtype
from tensorgrad.ops.base import reduction_axes

#: what ``max(dim)``, ``min(dim)``, ``sort`` and ``topk`` return, as PyTorch's return types
ValuesIndices = namedtuple("ValuesIndices", ["values", "indices"])


def _all_if_empty(dim: Any) -> Any:
    """PyTorch's reductions read ``dim=()`` (or ``[]``) as every dimension, as None."""
    return None if isinstance(dim, (tuple, list)) and not dim else dim


def _dims(dim: Any, ndim: int, name: str) -> Any:
    """A ``dim`` argument (None, an int or a sequence) checked against ``ndim``; a 0-d
    tensor takes 0 or -1 (or a tuple of them), as in PyTorch."""
    if dim is None:
        return None
    if not ndim:
        ops.normalize_axes(dim, 1, name)
        return None
    return ops.normalize_axes(dim, ndim, name) if not isinstance(dim, int) else dim


def _copy_back(name: str) -> Any:
    """The in-place form ``x.<name>_(...)`` of a composed function: its result written back
    with ``copy_`` (recorded as PyTorch records an in-place change; no VJP of its own)."""

    def method(self: Any, *args: Any, **kwargs: Any) -> Any:
        return self.copy_(getattr(self, name)(*args, **kwargs))

    method.__name__ = method.__qualname__ = f"{name}_"
    method.__doc__ = f"``{name}`` in place: ``x.{name}_(...)`` writes ``x.{name}(...)`` into x."
    return method


class MathMethods:
    """Pointwise math, arithmetic, comparisons, reductions and casts (mixed into Tensor)."""

    __slots__ = ()

    # ----------------------------------------------------------------- pointwise
    def exp(self) -> Any:
        return apply(ops.Exp(), _floating_input(self))

    def log(self) -> Any:
        return apply(ops.Log(), _floating_input(self))

    def log1p(self) -> Any:
        return apply(ops.Log1p(), _floating_input(self))

    def expm1(self) -> Any:
        return apply(ops.Expm1(), _floating_input(self))

    def log2(self) -> Any:
        return self.log() * (1 / math.log(2))

    def log10(self) -> Any:
        return self.log() * (1 / math.log(10))

    def sqrt(self) -> Any:
        return apply(ops.Sqrt(), _floating_input(self))

    def rsqrt(self) -> Any:
        return 1 / self.sqrt()

    def abs(self) -> Any:
        return apply(ops.Abs(), no_bool_kernel("abs", self))

    absolute = abs

    def neg(self) -> Any:
        return apply(ops.Neg(), self)

    negative = neg

    def sin(self) -> Any:
        return apply(ops.Sin(), _floating_input(self))

    def cos(self) -> Any:
        return apply(ops.Cos(), _floating_input(self))

    def tan(self) -> Any:
        return self.sin() / self.cos()

    def tanh(self) -> Any:
        return apply(ops.Tanh(), _floating_input(self))

    def sigmoid(self) -> Any:
        return apply(ops.Sigmoid(), _floating_input(self))

    def relu(self) -> Any:
        return apply(ops.Relu(), self)

    def leaky_relu(self, negative_slope: float = 0.01) -> Any:
        return apply(ops.LeakyRelu(negative_slope), floating_kernel("leaky_relu", self))

    def gelu(self, approximate: str = "none") -> Any:
        return apply(ops.Gelu(approximate), floating_kernel("gelu", self))

    def square(self) -> Any:
        return self * self if self.dtype != np.bool_ else self.long() * self.long()

    def reciprocal(self) -> Any:
        return 1 / self

    @numpy_names
    def softmax(self, dim: int = -1, dtype: Any = None) -> Any:
        x = self if dtype is None else self.to(dtype)
        if _valid_dim(dim, x.ndim):  # PyTorch checks dim first (the op words that error)
            floating_kernel("softmax", x)
        return apply(ops.Softmax(dim), x)

    @numpy_names
    def log_softmax(self, dim: int = -1, dtype: Any = None) -> Any:
        x = self if dtype is None else self.to(dtype)
        if _valid_dim(dim, x.ndim):
            floating_kernel("log_softmax", x)
        return apply(ops.LogSoftmax(dim), x)

    def clamp(self, min: Any = None, max: Any = None) -> Any:
        """Clamp into ``[min, max]``; bounds are numbers or tensors (broadcast). The gradient
        passes where ``min <= x <= max``; a tensor bound gets it where it is the result."""
        low, high = _bound(min), _bound(max)
        if low is None and high is None:
            raise ValueError("clamp: at least one of min and max must be given")
        bounds = [_raw(b) for b in (low, high) if b is not None]
        dtype = array_backend.result_type(self._data, *bounds)  # PyTorch's: int with 2.5 is float32
        if dtype != self.dtype or any(getattr(b, "dtype", dtype) != dtype for b in bounds):
            x, low, high = (engine._cast(v, dtype) for v in (self, low, high))
            return apply(ops.Clip(), x, low, high)
        return apply(ops.Clip(), self, low, high)

    clip = clamp

    def clamp_min(self, min: Any) -> Any:
        return self.clamp(min=min)

    def clamp_max(self, max: Any) -> Any:
        return self.clamp(max=max)

    def pow(self, exponent: Any) -> Any:
        return self**exponent

    def maximum(self, other: Any) -> Any:
        return binary(ops.Maximum, self, _tensor_argument("maximum", other))

    def minimum(self, other: Any) -> Any:
        return binary(ops.Minimum, self, _tensor_argument("minimum", other))

    def where(self, condition: Any, other: Any) -> Any:
        """``self`` where ``condition`` holds, else ``other`` (PyTorch's ``x.where(c, y)``)."""
        return functions.where(condition, self, other)

    def masked_fill(self, mask: Any, value: Any) -> Any:
        """``value`` where ``mask`` (a bool tensor, broadcast) is True, else ``self``."""
        mask_array = mask._data if isinstance(mask, engine.Tensor) else np.asarray(mask)
        if mask_array.dtype != np.bool_:
            raise array_backend.DtypeError(
                f"masked_fill: mask must be a bool tensor, got {mask_array.dtype}"
            )
        if isinstance(value, engine.Tensor) and value.ndim:
            raise RuntimeError(
                f"masked_fill: value must be a number or a 0-d tensor, got shape {value.shape}"
            )
        result = functions.where(mask_array, value, self)
        return result if result.dtype == self.dtype else result.to(self.dtype)

    # ----------------------------------------------------------------- arithmetic by name
    def add(self, other: Any, alpha: float = 1) -> Any:
        alpha = _check_alpha("add", self, other, alpha)
        if alpha is True or alpha == 1:
            return self + other
        out = self + other * alpha  # in PyTorch's dtype for self + other: bool * 2 is int64
        dtype = array_backend.result_type(self._data, _raw(engine.operand(other)))
        return out if out.dtype == dtype else out.to(dtype)

    def sub(self, other: Any, alpha: float = 1) -> Any:
        if alpha != 1:  # other * alpha would make a bool a number that Sub no longer refuses
            ops.Sub.refuse_bools("sub", self, other)
        _check_alpha("sub", self, other, alpha)
        return self - (other if alpha == 1 else other * alpha)

    subtract = sub

    def mul(self, other: Any) -> Any:
        return self * other

    multiply = mul

    def div(self, other: Any, rounding_mode: str | None = None) -> Any:
        if rounding_mode is None:
            return self / other
        if rounding_mode not in ("trunc", "floor"):
            raise ValueError(
                f"div: rounding_mode must be None, 'trunc' or 'floor', got {rounding_mode!r}"
            )
        return rounded_division(self, other, rounding_mode)

    divide = true_divide = div

    def matmul(self, other: Any) -> Any:
        return _product("matmul", self, _tensor_argument("matmul", other), ("input", "other"))

    def mm(self, mat2: Any) -> Any:
        """Matrix product of two 2-D tensors (no broadcasting, as PyTorch's ``mm``)."""
        _tensor_argument("mm", mat2, "mat2")
        _check_ndim("mm", self, 2, "self")
        _check_ndim("mm", mat2, 2, "mat2")
        return _product("mm", self, mat2, ("self", "mat2"))

    def bmm(self, mat2: Any) -> Any:
        """Batched matrix product of two 3-D tensors with the same batch size."""
        _tensor_argument("bmm", mat2, "mat2")
        _check_ndim("bmm", self, 3, "self")
        _check_ndim("bmm", mat2, 3, "mat2")
        if self.shape[0] != mat2.shape[0]:
            raise RuntimeError(f"bmm: batch sizes differ: {self.shape} and {tuple(mat2.shape)}")
        return _product("bmm", self, mat2, ("self", "mat2"))

    def dot(self, other: Any) -> Any:
        _tensor_argument("dot", other, "tensor")
        _check_ndim("dot", self, 1, "self")
        _check_ndim("dot", other, 1, "other")
        return _product("dot", self, other, ("self", "other"))

    # ----------------------------------------------------------------- comparisons
    def eq(self, other: Any) -> Any:
        return self == other

    def ne(self, other: Any) -> Any:
        return self != other

    def lt(self, other: Any) -> Any:
        return self < other

    def le(self, other: Any) -> Any:
        return self <= other

    def gt(self, other: Any) -> Any:
        return self > other

    def ge(self, other: Any) -> Any:
        return self >= other

    @engine.reads_values
    def isnan(self) -> Any:
        return wrap(np.isnan(self._data))

    @engine.reads_values
    def isinf(self) -> Any:
        return wrap(np.isinf(self._data))

    @engine.reads_values
    def isfinite(self) -> Any:
        return wrap(np.isfinite(self._data))

    @engine.reads_values
    def logical_not(self) -> Any:
        return wrap(np.logical_not(self._data))

    def logical_and(self, other: Any) -> Any:
        return _logical(np.logical_and, self, other)

    def logical_or(self, other: Any) -> Any:
        return _logical(np.logical_or, self, other)

    def logical_xor(self, other: Any) -> Any:
        return _logical(np.logical_xor, self, other)

    # piecewise constant: the result requires grad, and the gradient is 0 (PyTorch's)
    def sign(self) -> Any:
        return apply(ops.Rounding("sign", _sign), self)

    def floor(self) -> Any:
        return apply(
            ops.Rounding("floor", _integers_unchanged(np.floor)), no_bool_kernel("floor", self)
        )

    def ceil(self) -> Any:
        return apply(
            ops.Rounding("ceil", _integers_unchanged(np.ceil)), no_bool_kernel("ceil", self)
        )

    def round(self, decimals: int = 0) -> Any:
        if decimals and self.dtype.kind != "f":  # PyTorch rounds integers to digits only whole
            raise NotImplementedError(f'"round" with decimals not implemented for {self.dtype}')

        def round_half_even(x: np.ndarray) -> np.ndarray:
            return x.copy() if x.dtype.kind in "biu" and decimals >= 0 else np.round(x, decimals)

        return apply(ops.Rounding("round", round_half_even), no_bool_kernel("round", self))

    def trunc(self) -> Any:
        return apply(
            ops.Rounding("trunc", _integers_unchanged(np.trunc)), no_bool_kernel("trunc", self)
        )

    @engine.reads_values
    def equal(self, other: Any) -> bool:
        """True when ``other`` has the same shape and elements (PyTorch's ``equal``)."""
        other_array = _raw(_tensor_argument("equal", other))
        return bool(np.shape(other_array) == self.shape and np.array_equal(self._data, other_array))

    @engine.reads_values
    def allclose(
        self, other: Any, rtol: float = 1e-5, atol: float = 1e-8, equal_nan: bool = False
    ) -> bool:
        check_same_dtype("allclose", ("self", self), ("other", _tensor_argument("allclose", other)))
        try:
            return bool(np.allclose(self._data, _raw(other), rtol, atol, equal_nan))
        except ValueError as exc:  # a failed broadcast
            raise engine.named_error("allclose", exc) from exc

    @engine.reads_values
    def isclose(
        self, other: Any, rtol: float = 1e-5, atol: float = 1e-8, equal_nan: bool = False
    ) -> Any:
        """Elementwise ``|self − other| ≤ atol + rtol·|other|`` (a bool tensor, no gradient)."""
        check_same_dtype("isclose", ("self", self), ("other", _tensor_argument("isclose", other)))
        try:
            return wrap(np.isclose(self._data, _raw(other), rtol, atol, equal_nan))
        except ValueError as exc:
            raise engine.named_error("isclose", exc) from exc

    @engine.reads_values
    def nonzero(self, *, as_tuple: bool = False) -> Any:
        """The indices of the nonzero elements: a (count, ndim) int64 tensor, or with
        ``as_tuple`` one 1-D tensor per dimension (a 0-d tensor counts as 1-D)."""
        if as_tuple:
            return tuple(wrap(i.astype(np.int64)) for i in np.nonzero(np.atleast_1d(self._data)))
        return wrap(np.argwhere(self._data).astype(np.int64))

    def outer(self, vec2: Any) -> Any:
        """The outer product of two 1-D tensors: ``self[i] · vec2[j]``."""
        other = engine.as_tensor(vec2)
        for name, t in (("self", self), ("vec2", other)):
            if t.ndim != 1:
                raise RuntimeError(f"outer: Expected 1-D argument {name}, but got {t.ndim}-D")
        return self.reshape(-1, 1) * other.reshape(1, -1)

    def tril(self, diagonal: int = 0) -> Any:
        """The lower triangle of the last two dimensions (elements at or below the
        ``diagonal``-th diagonal), the rest 0."""
        return self.masked_fill(~_triangle(self, np.tril, "tril", diagonal), 0)

    def triu(self, diagonal: int = 0) -> Any:
        """The upper triangle of the last two dimensions, the rest 0."""
        return self.masked_fill(~_triangle(self, np.triu, "triu", diagonal), 0)

    # ----------------------------------------------------------------- reductions
    @numpy_names
    def sum(self, dim: Any = None, keepdim: bool = False, *, dtype: Any = None) -> Any:
        x = _accumulated(self) if dtype is None else _reduction_input("sum", self, dtype, dim)
        return _in_dtype(apply(ops.Sum(_all_if_empty(dim), keepdim), x), dtype)

    @numpy_names
    def mean(self, dim: Any = None, keepdim: bool = False, *, dtype: Any = None) -> Any:
        x = self if dtype is None else self.to(dtype)
        _floating("mean", x)
        return apply(ops.Mean(_all_if_empty(dim), keepdim), x)

    @numpy_names
    def prod(self, dim: int | None = None, keepdim: bool = False, *, dtype: Any = None) -> Any:
        """The product of all elements, or over one dimension ``dim`` (an int, as PyTorch's);
        integers and bools multiply in int64 unless ``dtype`` says otherwise. The gradient
        is exact where elements are 0 (one zero: the product of the others; more: 0)."""
        if dim is not None and (not isinstance(dim, (int, np.integer)) or isinstance(dim, bool)):
            raise TypeError(f"prod: dim must be an int, got {dim!r}")
        x = _accumulated(self) if dtype is None else self.to(dtype)
        return apply(ops.Prod(dim, keepdim), x)

    @numpy_names
    def var(
        self,
        dim: Any = None,
        unbiased: bool | None = None,
        keepdim: bool = False,
        *,
        correction: int | None = None,
    ) -> Any:
        """Variance; ``correction=1`` (the default, as ``unbiased=True``) divides by N − 1.
        ``var(True)`` is ``var(unbiased=True)``, as in PyTorch."""
        if isinstance(dim, bool):
            dim, unbiased = None, dim
        _floating("var", self)
        correction = _correction(unbiased, correction)
        return apply(ops.Var(_all_if_empty(dim), keepdim, correction), self)

    @numpy_names
    def std(
        self,
        dim: Any = None,
        unbiased: bool | None = None,
        keepdim: bool = False,
        *,
        correction: int | None = None,
    ) -> Any:
        """Standard deviation; its gradient is 0 where it is 0 (a constant slice)."""
        if isinstance(dim, bool):
            dim, unbiased = None, dim
        _floating("std", self)
        correction = _correction(unbiased, correction)
        return apply(ops.Std(_all_if_empty(dim), keepdim, correction), self)

    @numpy_names
    def norm(self, p: Any = "fro", dim: Any = None, keepdim: bool = False) -> Any:
        """The vector p-norm over ``dim`` (all elements by default; ``"fro"`` is p = 2)."""
        _floating("norm", self)
        if p == "fro" or p is None:
            p = 2.0
        if isinstance(p, str):
            raise ValueError(f"norm: p must be a number or 'fro', got {p!r}")
        return apply(ops.Norm(p, _all_if_empty(dim), keepdim), self)

    @numpy_names
    def logsumexp(self, dim: Any, keepdim: bool = False) -> Any:
        """``log(sum(exp(x)))`` over ``dim`` (required, as in PyTorch), computed stably."""
        return apply(ops.LogSumExp(_all_if_empty(dim), keepdim), _floating_input(self))

    @numpy_names
    def amax(self, dim: Any = None, keepdim: bool = False) -> Any:
        """The maximum over ``dim``; tied maxima share the gradient evenly."""
        _nonempty_dims("amax", self, dim)
        return apply(ops.Max(_all_if_empty(dim), keepdim), self)

    @numpy_names
    def amin(self, dim: Any = None, keepdim: bool = False) -> Any:
        """The minimum over ``dim``; tied minima share the gradient evenly."""
        _nonempty_dims("amin", self, dim)
        return apply(ops.Min(_all_if_empty(dim), keepdim), self)

    @numpy_names
    def max(self, dim: Any = None, keepdim: bool = False) -> Any:
        """PyTorch's three ``max``: of all elements (ties share the gradient); with ``dim``,
        ``(values, indices)`` (the gradient goes to the first maximum, at the index); with a
        tensor, the elementwise maximum."""
        if dim is None:
            return self.amax()
        if isinstance(dim, engine.Tensor):
            return self.maximum(dim)
        return self._select(np.argmax, dim, keepdim)

    @numpy_names
    def min(self, dim: Any = None, keepdim: bool = False) -> Any:
        """As :meth:`max`, for the minimum."""
        if dim is None:
            return self.amin()
        if isinstance(dim, engine.Tensor):
            return self.minimum(dim)
        return self._select(np.argmin, dim, keepdim)

    @engine.reads_values
    def _select(self, argfunction: Any, dim: int, keepdim: bool) -> Any:
        axis = ops.normalize_axis(dim, max(self.ndim, 1), argfunction.__name__[3:])
        if not self.ndim:
            return ValuesIndices(self, wrap(np.zeros((), np.int64)))
        if self.shape[axis] == 0:
            raise IndexError(
                f"{argfunction.__name__[3:]}: cannot reduce over dimension {axis} of size 0"
            )
        index = argfunction(self._data, axis=axis, keepdims=True)
        values = self.gather(axis, wrap(index))
        if not keepdim:
            values, index = values.squeeze(axis), np.squeeze(index, axis)
        return ValuesIndices(values, wrap(index))

    @engine.reads_values
    @numpy_names
    def argmax(self, dim: Any = None, keepdim: bool = False) -> Any:
        """Index of the maximum (int64, no gradient); of the flattened tensor without dim."""
        return _index_reduction(
            np.argmax, no_bool_kernel("argmax", self, RuntimeError), dim, keepdim
        )

    @engine.reads_values
    @numpy_names
    def argmin(self, dim: Any = None, keepdim: bool = False) -> Any:
        return _index_reduction(
            np.argmin, no_bool_kernel("argmin", self, RuntimeError), dim, keepdim
        )

    @engine.reads_values
    @numpy_names
    def any(self, dim: Any = None, keepdim: bool = False) -> Any:
        """Whether any element is nonzero: bool, but uint8 for a uint8 tensor (PyTorch's
        legacy rule, from when masks were uint8)."""
        found = np.any(self._data, axis=_dims(dim, self.ndim, "any"), keepdims=keepdim)
        return wrap(_truth_values(self, found))

    @engine.reads_values
    @numpy_names
    def all(self, dim: Any = None, keepdim: bool = False) -> Any:
        """Whether every element is nonzero (uint8 for a uint8 tensor, as :meth:`any`)."""
        found = np.all(self._data, axis=_dims(dim, self.ndim, "all"), keepdims=keepdim)
        return wrap(_truth_values(self, found))

    @numpy_names
    def cumsum(self, dim: int, *, dtype: Any = None) -> Any:
        x = _accumulated(self) if dtype is None else _reduction_input("cumsum", self, dtype, dim)
        return _in_dtype(apply(ops.Cumsum(dim), x), dtype)

    @engine.reads_values
    @numpy_names
    def argsort(self, dim: int = -1, descending: bool = False, stable: bool = False) -> Any:
        axis = ops.normalize_axis(dim, max(self.ndim, 1), "argsort")
        data = self._data if self.ndim else self._data.reshape(1)
        if descending and data.dtype.kind == "f" and np.isnan(data).any():
            # PyTorch orders NaN as the largest value: first when descending
            order = np.lexsort((_descending_key(data), ~np.isnan(data)), axis=axis)
        else:
            key = _descending_key(data) if descending else data
            order = np.argsort(key, axis=axis, kind="stable")
        return wrap(order.reshape(self.shape))

    @numpy_names
    def sort(self, dim: int = -1, descending: bool = False, stable: bool = False) -> Any:
        """``(values, indices)`` sorted along ``dim``; ties keep their order (stable)."""
        indices = self.argsort(dim, descending)
        if not self.ndim:
            return ValuesIndices(self, indices)
        return ValuesIndices(self.gather(dim, indices), indices)

    @numpy_names
    def topk(self, k: int, dim: int = -1, largest: bool = True, sorted: bool = True) -> Any:
        """The ``k`` largest (or smallest) elements along ``dim``, and their indices."""
        axis = ops.normalize_axis(dim, max(self.ndim, 1), "topk")
        no_bool_kernel("topk", self, RuntimeError)
        size = self.shape[axis] if self.ndim else 1
        if not 0 <= k <= size:
            raise RuntimeError(f"topk: k ({k}) is out of range for dimension {axis} of size {size}")
        indices = self.argsort(axis, descending=largest)
        if self.ndim:
            indices = indices[(slice(None),) * axis + (slice(0, k),)]
            return ValuesIndices(self.gather(axis, indices), indices)
        return ValuesIndices(self, indices)

    def msort(self) -> Any:
        """The values sorted along dimension 0 (``sort(dim=0).values``)."""
        return self.sort(0).values

    @engine.reads_values
    def unique(
        self,
        sorted: bool = True,
        return_inverse: bool = False,
        return_counts: bool = False,
        dim: int | None = None,
    ) -> Any:
        """The distinct elements (``dim=None``, flattened) or distinct slices along ``dim``,
        sorted; with ``return_inverse`` also where each element (slice) went, with
        ``return_counts`` how often each occurs. NaNs are not merged, as in PyTorch. The result
        is sorted for ``sorted=False`` too, which PyTorch allows. No gradient."""
        data = self._data
        if dim is None:
            values, inverse, counts = np.unique(
                data.reshape(-1), return_inverse=True, return_counts=True, equal_nan=False
            )
            inverse = inverse.reshape(self.shape)
        else:
            axis = ops.normalize_axis(dim, max(self.ndim, 1), "unique")
            data = data.reshape(1) if not self.ndim else data
            if data.size == 0 and data.shape[axis] != 0:
                raise RuntimeError(
                    "unique: There are 0 sized dimensions, and they aren't selected, so unique "
                    f"cannot be applied (shape {self.shape}, dim {dim})"
                )
            if data.shape[axis] == 0:
                values = data
                inverse = counts = np.zeros(0, dtype=np.int64)
            else:
                values, inverse, counts = np.unique(
                    data, return_inverse=True, return_counts=True, axis=axis
                )
                inverse = inverse.reshape(-1)
        return _unique_result(values, inverse, counts, return_inverse, return_counts)

    @engine.reads_values
    def unique_consecutive(
        self, return_inverse: bool = False, return_counts: bool = False, dim: int | None = None
    ) -> Any:
        """Collapse each run of equal consecutive elements (or slices along ``dim``) to one,
        as ``uniq`` does; ``return_inverse``/``return_counts`` as in :meth:`unique`."""
        if dim is None:
            data = self._data.reshape(-1)
            changes = data[1:] != data[:-1]
        else:
            axis = ops.normalize_axis(dim, max(self.ndim, 1), "unique_consecutive")
            data = np.moveaxis(self._data.reshape(1) if not self.ndim else self._data, axis, 0)
            changes = np.any((data[1:] != data[:-1]).reshape(max(len(data) - 1, 0), -1), axis=1)
        starts = np.concatenate([[True], changes]) if len(data) else np.zeros(0, dtype=bool)
        values = data[starts]
        inverse = np.cumsum(starts) - 1
        counts = np.diff(np.append(np.flatnonzero(starts), len(data)))
        if dim is None:
            inverse = inverse.reshape(self.shape)
        else:
            values = np.moveaxis(values, 0, axis)
        return _unique_result(values, inverse, counts, return_inverse, return_counts)

    @engine.reads_values
    def bincount(self, weights: Any = None, minlength: int = 0) -> Any:
        """How often each value of this 1-D tensor of non-negative integers occurs: int64
        counts in ``max + 1`` bins, or ``minlength`` if that is more. With ``weights`` (one
        per element) each bin holds the sum of its elements' weights instead, float32 for
        float32 weights and float64 for any other. PyTorch's rules throughout, also where
        they surprise: an empty input gives ``minlength`` int64 zeros even with weights, and
        weights that require grad give a result that requires grad, whose backward refuses
        (PyTorch defines no derivative; ``scatter_add`` is the differentiable way)."""
        if isinstance(minlength, bool) or not isinstance(minlength, (int, np.integer)):
            raise TypeError(
                f"bincount(): argument 'minlength' must be int, not {type(minlength).__name__}"
            )
        if self.dtype.kind not in "iu":
            raise NotImplementedError(
                f'"bincount" not implemented for {self.dtype} tensors: it counts non-negative '
                "integers (convert with .long())"
            )
        if minlength < 0:
            raise RuntimeError(f"bincount: minlength should be >= 0, got {minlength}")
        if self.shape == (0,):
            return wrap(np.zeros(int(minlength), dtype=np.int64))
        if self.ndim != 1:
            raise RuntimeError(
                "bincount only supports 1-d non-negative integral inputs: got a tensor of "
                f"{self.ndim} dimensions (shape {self.shape})"
            )
        smallest = self._data.min()
        if smallest < 0:
            raise RuntimeError(
                "bincount only supports 1-d non-negative integral inputs: got the negative "
                f"value {smallest}"
            )
        op = ops.Bincount(int(minlength))
        if weights is None:
            return apply(op, self)
        weights = engine.as_tensor(weights)
        if weights.shape != self.shape:
            raise RuntimeError(
                "bincount: weights should be 1-d and have the same length as input: got "
                f"weights of shape {weights.shape} for an input of shape {self.shape}"
            )
        return apply(op, self, weights)

    # ----------------------------------------------------------------- casts
    def to(self, *args: Any, **kwargs: Any) -> Any:
        """PyTorch's ``to``: a dtype, a device, another tensor (its dtype and device), or
        both as keywords. The CPU is the only device; any other is refused by name."""
        dtype = kwargs.pop("dtype", None)
        device = kwargs.pop("device", None)
        kwargs.pop("non_blocking", None)
        copy = kwargs.pop("copy", False)
        kwargs.pop("memory_format", None)
        if kwargs:
            raise TypeError(f"to() got unexpected keyword arguments {sorted(kwargs)}")
        for arg in args:
            if isinstance(arg, engine.Tensor):
                dtype = arg.dtype
            elif (isinstance(arg, (str, array_backend.device)) and not _is_dtype_name(arg)) or (
                isinstance(arg, int) and not isinstance(arg, bool)
            ):
                device = arg
            else:
                dtype = arg
        if device is not None:
            array_backend.as_device(device)
        result = self.astype(dtype) if dtype is not None else self
        return result.clone() if copy and result is self else result

    def astype(self, dtype: Any) -> Any:
        """This tensor converted to ``dtype`` (differentiable between float types; a cast to
        an integer or bool type gives a tensor without gradient)."""
        try:
            dtype = array_backend.as_dtype(dtype)
        except array_backend.UnsupportedError:
            raise  # it names the dtype and the porting guide already, and stays catchable
        except TypeError as exc:
            raise engine.named_error("to", exc) from exc
        if dtype == self.dtype:
            return self
        if self.requires_grad and not array_backend.is_floating(dtype):
            return apply(ops.Cast(dtype), self.detach())
        return apply(ops.Cast(dtype), self)

    def type(self, dtype: Any = None, non_blocking: bool = False, **kwargs: Any) -> Any:
        """Without ``dtype``, PyTorch's type string (``'torch.FloatTensor'`` for float32,
        so ported comparisons hold); with one (a dtype, or such a string), this tensor cast
        to it, as ``to(dtype)``."""
        if dtype is None:
            return _TYPE_NAMES.get(self.dtype, f"torch.{self.dtype}")
        if isinstance(dtype, type) and isinstance(getattr(dtype, "dtype", None), np.dtype):
            dtype = dtype.dtype  # a legacy type: x.type(torch.LongTensor) (core/legacy_types.py)
        if isinstance(dtype, str) and dtype.endswith("Tensor"):
            module, _, name = dtype.rpartition(".")
            if module.endswith("cuda"):
                raise array_backend.UnsupportedError(
                    f"type({dtype!r}): tensorgrad runs on the CPU only (see docs/porting.md)"
                )
            if module not in ("torch", "tensorgrad") or name not in _TYPE_DTYPES:
                raise ValueError(f"invalid type: {dtype!r}")
            dtype = _TYPE_DTYPES[name]
        return self.astype(dtype)

    def type_as(self, other: Any) -> Any:
        """This tensor in ``other``'s dtype (``other`` must be a tensor, as in PyTorch)."""
        if not isinstance(other, engine.Tensor):
            raise TypeError(f"type_as: other must be a Tensor, got {type(other).__name__}")
        return self.astype(other.dtype)

    def float(self) -> Any:
        return self.astype(array_backend.float32)

    def double(self) -> Any:
        return self.astype(array_backend.float64)

    def half(self) -> Any:
        return self.astype(array_backend.float16)

    def long(self) -> Any:
        return self.astype(array_backend.int64)

    def int(self) -> Any:
        return self.astype(array_backend.int32)

    def short(self) -> Any:
        return self.astype(array_backend.int16)

    def byte(self) -> Any:
        return self.astype(array_backend.uint8)

    def bool(self) -> Any:
        return self.astype(array_backend.bool_)

    # ----------------------------------------------------------------- more of PyTorch's math
    # (issue 22's missing names: inverse trig and hyperbolic, special functions, remainders,
    # two-operand math, bitwise ops, scans and order statistics)
    def asin(self) -> Any:
        return apply(ops.Asin(), _floating_input(self))

    def acos(self) -> Any:
        return apply(ops.Acos(), _floating_input(self))

    def atan(self) -> Any:
        return apply(ops.Atan(), _floating_input(self))

    def sinh(self) -> Any:
        return apply(ops.Sinh(), _floating_input(self))

    def cosh(self) -> Any:
        return apply(ops.Cosh(), _floating_input(self))

    def asinh(self) -> Any:
        return apply(ops.Asinh(), _floating_input(self))

    def acosh(self) -> Any:
        return apply(ops.Acosh(), _floating_input(self))

    def atanh(self) -> Any:
        return apply(ops.Atanh(), _floating_input(self))

    arcsin, arccos, arctan = asin, acos, atan
    arcsinh, arccosh, arctanh = asinh, acosh, atanh

    def atan2(self, other: Any) -> Any:
        """The angle of (other, self): ``atan2(self, other)``, broadcasting, in float."""
        return _float_binary(ops.Atan2, self, other)

    arctan2 = atan2

    def erf(self) -> Any:
        return apply(ops.Erf(), _floating_input(self))

    def erfc(self) -> Any:
        return apply(ops.Erfc(), _floating_input(self))

    def erfinv(self) -> Any:
        return apply(ops.Erfinv(), _floating_input(self))

    def lgamma(self) -> Any:
        return apply(ops.Lgamma(), _floating_input(self))

    def digamma(self) -> Any:
        return apply(ops.Polygamma(0), _floating_input(self))

    def polygamma(self, n: int) -> Any:
        """The n-th derivative of digamma (``x.polygamma(n)``, ``tg.polygamma(n, x)``)."""
        if int(n) < 0:
            raise RuntimeError(f"polygamma(n, x) does not support negative n, got {n}")
        return apply(ops.Polygamma(int(n)), _floating_input(self))

    def i0(self) -> Any:
        return apply(ops.I0(), _floating_input(self))

    def sinc(self) -> Any:
        """The normalized sinc ``sin(πx)/(πx)``, 1 at 0."""
        return apply(ops.Sinc(), _floating_input(self))

    def exp2(self) -> Any:
        return 2.0 ** _floating_input(self)

    def logit(self, eps: float | None = None) -> Any:
        """``log(p / (1 − p))``, with p clamped into ``[eps, 1 − eps]`` when ``eps`` is given.
        Composed as ``log p − log1p(−p)``, whose slope ``1/p + 1/(1 − p)`` is PyTorch's inf at
        0 and 1 (the quotient's chain rule gives ∞ · 0 there: NaN)."""
        p = _floating_input(self)
        if eps is not None:
            p = p.clamp(eps, 1 - eps)
        return p.log() - (-p).log1p()

    def deg2rad(self) -> Any:
        return _floating_input(self) * (math.pi / 180)

    def rad2deg(self) -> Any:
        return _floating_input(self) * (180 / math.pi)

    def frac(self) -> Any:
        """``x − trunc(x)``: the gradient passes unchanged, as in PyTorch."""
        floating_kernel("frac", self)
        return self - self.trunc()

    def fix(self) -> Any:
        if self.dtype == np.bool_:
            raise NotImplementedError("\"trunc_cpu\" not implemented for 'Bool'")
        return self.trunc()

    def sgn(self) -> Any:
        return self.clone() if self.dtype == np.bool_ else self.sign()

    @engine.reads_values
    def signbit(self) -> Any:
        return wrap(np.signbit(self._data))

    @engine.reads_values
    def isposinf(self) -> Any:
        return wrap(np.isposinf(self._data))

    @engine.reads_values
    def isneginf(self) -> Any:
        return wrap(np.isneginf(self._data))

    def isreal(self) -> Any:
        return wrap(np.ones(self.shape, dtype=bool))

    @engine.reads_values
    def nan_to_num(
        self, nan: float = 0.0, posinf: float | None = None, neginf: float | None = None
    ):
        """NaN, +inf and −inf replaced (by 0 and the dtype's largest and smallest finite
        values by default); the gradient passes where the input is finite."""
        if self.dtype.kind != "f":
            return self.clone()
        info = np.finfo(self.dtype)
        data = self._data
        finite = np.isfinite(data)
        high = info.max if posinf is None else posinf
        low = info.min if neginf is None else neginf
        fill = np.where(np.isnan(data), nan, np.where(data > 0, high, low)).astype(self.dtype)
        return functions.where(finite, self, fill)

    def remainder(self, other: Any) -> Any:
        """Python's ``%``: the remainder with the divisor's sign; x's gradient is 1, the
        divisor's ``−floor(x / y)``."""
        return binary(ops.Remainder, self, other)

    def fmod(self, other: Any) -> Any:
        """C's ``fmod``: the remainder with the dividend's sign; the divisor's gradient is
        ``−trunc(x / y)``."""
        return binary(ops.Fmod, self, other)

    def floor_divide(self, other: Any) -> Any:
        return self.div(other, rounding_mode="floor")

    @engine.reads_values
    def copysign(self, other: Any) -> Any:
        """``|self|`` with the sign of ``other`` (its sign bit: −0.0 counts as negative)."""
        x, y = _float_operands(self, other)
        negative = np.signbit(_raw(y))
        out = x.abs() * np.where(negative, -1.0, 1.0).astype(x.dtype)
        if y.requires_grad:  # PyTorch gives ``other`` a zero gradient: route one through
            out = functions.where(np.zeros(out.shape, dtype=bool), y, out)
        return out

    def hypot(self, other: Any) -> Any:
        floating_kernel("hypot", self, other)
        x, y = _float_operands(self, other)
        return (x * x + y * y).sqrt()

    @engine.reads_values
    def logaddexp(self, other: Any) -> Any:
        """``log(exp(x) + exp(y))``, shifted by the larger operand so it does not overflow."""
        floating_kernel("logaddexp", self, other)
        x, y = _float_operands(self, other)
        shift = np.maximum(_raw(x), _raw(y))
        shift = np.where(np.isfinite(shift), shift, 0).astype(x.dtype)
        return ((x - shift).exp() + (y - shift).exp()).log() + shift

    def logaddexp2(self, other: Any) -> Any:
        floating_kernel("logaddexp2", self, other)
        return (self * math.log(2)).logaddexp(other * math.log(2)) * (1 / math.log(2))

    @engine.reads_values
    def xlogy(self, other: Any) -> Any:
        """``x · log(y)``, and 0 where x is 0 (unless y is NaN). PyTorch's gradients: x's is
        ``log(y)`` (0 where x is 0 and y ≤ 0), y's ``x / y``."""
        x, y = _float_operands(self, other)
        ax, ay = np.broadcast_arrays(_raw(x), _raw(y))
        cut = (ax == 0) & (ay <= 0)  # log would be -inf or NaN: the product is taken as 0
        log_y = functions.where(cut, 0.0, functions.where(cut, 1.0, y).log())
        out = x * log_y.to(x.dtype)
        overflow = (ax == 0) & (ay == np.inf)  # 0 · inf: 0, as PyTorch
        return functions.where(overflow, 0.0, out).to(x.dtype) if overflow.any() else out

    @engine.reads_values
    def heaviside(self, values: Any) -> Any:
        """0 where x < 0, ``values`` where x == 0, 1 where x > 0 (no gradient, as PyTorch)."""
        other = engine.as_tensor(values)
        if other.dtype != self.dtype:
            raise RuntimeError(
                f"heaviside is not yet implemented for tensors with different dtypes: "
                f"{self.dtype} and {other.dtype}"
            )
        data = self._data  # PyTorch's rule: ``values`` at 0, else ``x > 0`` (0 for NaN)
        return wrap(np.where(data == 0, other._data, data > 0).astype(self.dtype))

    @engine.reads_values
    def nextafter(self, other: Any) -> Any:
        """The next representable float after x towards ``other``; the gradient passes to x
        unchanged, as PyTorch's."""
        other = engine.as_tensor(other)
        floating_kernel("nextafter", self, other)
        dtype = array_backend.result_type(self._data, other._data)
        x = engine._cast(self, dtype)
        after = np.nextafter(x._data, other._data.astype(dtype))
        step = np.where(np.isfinite(after) & np.isfinite(x._data), after - x._data, 0)
        exact = np.isfinite(step) & (x._data + step == after)
        return functions.where(exact, x + wrap(step.astype(dtype)), wrap(after))

    def float_power(self, exponent: Any) -> Any:
        """``self ** exponent`` in float64 (PyTorch's ``float_power``)."""
        base = self.double()
        if isinstance(exponent, engine.Tensor):
            exponent = exponent.double()
        return base**exponent

    @engine.reads_values
    def fmax(self, other: Any) -> Any:
        """The elementwise maximum ignoring NaN; on ties the gradient goes to ``self``."""
        x, y = _same_dtype_operands(self, other)
        ax, ay = _raw(x), _raw(y)
        return functions.where((ax >= ay) | np.isnan(ay), x, y)

    @engine.reads_values
    def fmin(self, other: Any) -> Any:
        """The elementwise minimum ignoring NaN; on ties the gradient goes to ``self``."""
        x, y = _same_dtype_operands(self, other)
        ax, ay = _raw(x), _raw(y)
        return functions.where((ax <= ay) | np.isnan(ay), x, y)

    @engine.reads_values
    def lerp(self, end: Any, weight: Any) -> Any:
        """``self + weight · (end − self)``, by PyTorch's two formulas (exact at weight 1)."""
        if not isinstance(end, engine.Tensor):
            raise TypeError(f"lerp(): argument 'end' must be Tensor, not {type(end).__name__}")
        if end.dtype != self.dtype:
            raise RuntimeError(
                f"lerp: expected dtype {self.dtype} for `end` but got dtype {end.dtype}"
            )
        w = _raw(weight)
        low = (np.abs(w) < 0.5) if np.ndim(w) or isinstance(w, np.ndarray) else abs(w) < 0.5
        diff = end - self
        small = self + weight * diff
        large = end - diff * (1 - weight)
        if isinstance(low, bool):
            return small if low else large
        return functions.where(low, small, large)

    def bitwise_and(self, other: Any) -> Any:
        return _bitwise(np.bitwise_and, "bitwise_and", self, other)

    def bitwise_or(self, other: Any) -> Any:
        return _bitwise(np.bitwise_or, "bitwise_or", self, other)

    def bitwise_xor(self, other: Any) -> Any:
        return _bitwise(np.bitwise_xor, "bitwise_xor", self, other)

    def bitwise_left_shift(self, other: Any) -> Any:
        return _bitwise(np.left_shift, "bitwise_left_shift", self, other)

    def bitwise_right_shift(self, other: Any) -> Any:
        return _bitwise(np.right_shift, "bitwise_right_shift", self, other)

    @engine.reads_values
    def bitwise_not(self) -> Any:
        if self.dtype.kind not in "biu":
            raise NotImplementedError(f'"bitwise_not_cpu" not implemented for {self.dtype}')
        return wrap(np.invert(self._data))

    # in-place forms of the one-op functions above
    def asin_(self) -> Any:
        return apply_inplace(ops.Asin(), self)

    def acos_(self) -> Any:
        return apply_inplace(ops.Acos(), self)

    def atan_(self) -> Any:
        return apply_inplace(ops.Atan(), self)

    def sinh_(self) -> Any:
        return apply_inplace(ops.Sinh(), self)

    def cosh_(self) -> Any:
        return apply_inplace(ops.Cosh(), self)

    def asinh_(self) -> Any:
        return apply_inplace(ops.Asinh(), self)

    def acosh_(self) -> Any:
        return apply_inplace(ops.Acosh(), self)

    def atanh_(self) -> Any:
        return apply_inplace(ops.Atanh(), self)

    def erf_(self) -> Any:
        return apply_inplace(ops.Erf(), self)

    def erfc_(self) -> Any:
        return apply_inplace(ops.Erfc(), self)

    def erfinv_(self) -> Any:
        return apply_inplace(ops.Erfinv(), self)

    def lgamma_(self) -> Any:
        return apply_inplace(ops.Lgamma(), self)

    def digamma_(self) -> Any:
        return apply_inplace(ops.Polygamma(0), self)

    def i0_(self) -> Any:
        return apply_inplace(ops.I0(), self)

    def sinc_(self) -> Any:
        return apply_inplace(ops.Sinc(), self)

    def atan2_(self, other: Any) -> Any:
        return apply_inplace(ops.Atan2(), self, engine.operand(other))

    def remainder_(self, other: Any) -> Any:
        return apply_inplace(ops.Remainder(), self, engine.operand(other))

    def fmod_(self, other: Any) -> Any:
        return apply_inplace(ops.Fmod(), self, engine.operand(other))

    arcsin_, arccos_, arctan_, arctan2_ = asin_, acos_, atan_, atan2_
    arcsinh_, arccosh_, arctanh_ = asinh_, acosh_, atanh_

    def lerp_(self, end: Any, weight: Any) -> Any:
        return self.copy_(self.lerp(end, weight))

    def nan_to_num_(
        self, nan: float = 0.0, posinf: float | None = None, neginf: float | None = None
    ):
        return self.copy_(self.nan_to_num(nan, posinf, neginf))

    def logit_(self, eps: float | None = None) -> Any:
        return self.copy_(self.logit(eps))

    def frac_(self) -> Any:
        return self.copy_(self.frac())

    exp2_, deg2rad_, rad2deg_ = _copy_back("exp2"), _copy_back("deg2rad"), _copy_back("rad2deg")
    fix_, sgn_, floor_divide_ = _copy_back("fix"), _copy_back("sgn"), _copy_back("floor_divide")
    copysign_, hypot_, xlogy_ = _copy_back("copysign"), _copy_back("hypot"), _copy_back("xlogy")
    heaviside_, nextafter_ = _copy_back("heaviside"), _copy_back("nextafter")
    bitwise_and_, bitwise_or_ = _copy_back("bitwise_and"), _copy_back("bitwise_or")
    bitwise_xor_, bitwise_not_ = _copy_back("bitwise_xor"), _copy_back("bitwise_not")
    bitwise_left_shift_ = _copy_back("bitwise_left_shift")
    bitwise_right_shift_ = _copy_back("bitwise_right_shift")

    def float_power_(self, exponent: Any) -> Any:
        if self.dtype != np.float64:
            raise RuntimeError(
                f"the base given to float_power_ has dtype {self.dtype} but the operation's "
                "result requires dtype float64"
            )
        return self.copy_(self.float_power(exponent))

    # ----------------------------------------------------------------- scans, order statistics
    @numpy_names
    def cumprod(self, dim: int, *, dtype: Any = None) -> Any:
        """Running products along ``dim``; exact gradients also where elements are 0."""
        x = _accumulated(self) if dtype is None else self.to(dtype)
        return apply(ops.Cumprod(dim), x)

    def cumprod_(self, dim: int, *, dtype: Any = None) -> Any:
        return self.copy_(self.cumprod(dim, dtype=dtype))

    @numpy_names
    def logcumsumexp(self, dim: int) -> Any:
        floating_kernel("logcumsumexp", self)
        return apply(ops.LogCumSumExp(dim), _floating_input(self))

    @numpy_names
    def cummax(self, dim: int) -> Any:
        """``(values, indices)``: the running maximum along ``dim`` and where it was taken
        (the latest of tied maxima; a NaN, once seen, stays the maximum)."""
        return _running_extreme(self, dim, np.maximum, np.greater_equal, "cummax")

    @numpy_names
    def cummin(self, dim: int) -> Any:
        """As :meth:`cummax`, for the running minimum."""
        return _running_extreme(self, dim, np.minimum, np.less_equal, "cummin")

    @engine.reads_values
    @numpy_names
    def median(self, dim: Any = None, keepdim: bool = False) -> Any:
        """The lower median (of all elements, or ``(values, indices)`` along ``dim``); NaN
        if a NaN is present. Without ``dim``, tied medians share the gradient evenly."""
        if dim is None:
            data = self._data.reshape(-1)
            if not data.size:
                if self.dtype.kind != "f":
                    _empty_reduction("median")
                return wrap(np.array(np.nan, dtype=self.dtype))
            order = _nan_last_order(data)
            picked = data[order[(data.size - 1) // 2]] if not np.isnan(data).any() else np.nan
            mask = np.isnan(data) if np.isnan(picked) else data == picked
            flat = self.reshape(-1)
            return functions.where(mask, flat, _lowest(self.dtype)).amax()
        return _kth(self, dim, keepdim, None, "median")

    @numpy_names
    def kthvalue(self, k: int, dim: int = -1, keepdim: bool = False) -> Any:
        """``(values, indices)`` of the k-th smallest element along ``dim`` (k counts from 1)."""
        return _kth(self, dim, keepdim, k, "kthvalue")

    @numpy_names
    def aminmax(self, *, dim: Any = None, keepdim: bool = False) -> Any:
        return MinMax(self.amin(dim, keepdim), self.amax(dim, keepdim))

    @engine.reads_values
    @numpy_names
    def count_nonzero(self, dim: Any = None) -> Any:
        axes = None if dim is None else ops.normalize_axes(dim, max(self.ndim, 1), "count_nonzero")
        data = self._data
        if not data.ndim:
            return wrap(np.array(int(data != 0), dtype=np.int64))
        return wrap(np.asarray(np.count_nonzero(data, axis=axes), dtype=np.int64))

    @engine.reads_values
    @numpy_names
    def nansum(self, dim: Any = None, keepdim: bool = False, *, dtype: Any = None) -> Any:
        """The sum with NaN counted as 0 (the gradient at a NaN is 0)."""
        x = self if dtype is None else self.to(dtype)
        if x.dtype.kind == "f":
            x = functions.where(np.isnan(x._data), 0.0, x)
        return x.sum(dim, keepdim)  # integers and bools: in int64, as sum does

    @engine.reads_values
    @numpy_names
    def nanmean(self, dim: Any = None, keepdim: bool = False, *, dtype: Any = None) -> Any:
        """The mean of the elements that are not NaN."""
        x = self if dtype is None else self.to(dtype)
        _floating("nanmean", x)
        present = wrap((~np.isnan(x._data)).astype(x.dtype))
        return x.nansum(dim, keepdim) / present.sum(dim, keepdim)

    def trace(self) -> Any:
        """The sum of a matrix's main diagonal."""
        if self.ndim != 2:
            raise RuntimeError(f"trace: expected a matrix, but got tensor with dim {self.ndim}")
        if self.dtype == np.bool_:
            raise NotImplementedError("\"trace\" not implemented for 'Bool'")
        return self.diagonal().sum()  # integers: in int64, as sum does

    # ----------------------------------------------------------------- more products
    def mv(self, vec: Any) -> Any:
        _tensor_argument("mv", vec, "vec")
        _check_ndim("mv", self, 2, "self")
        _check_ndim("mv", vec, 1, "vec")
        return _product("mv", self, vec, ("self", "vec"))

    def inner(self, other: Any) -> Any:
        """The sum over the last dimension of the product (PyTorch's ``inner``)."""
        other = engine.as_tensor(other)
        if not self.ndim or not other.ndim:
            return self * other
        if self.shape[-1] != other.shape[-1]:
            raise RuntimeError(
                f"inner() the last dimension must match on both input tensors but got shapes "
                f"{list(self.shape)} and {list(other.shape)}"
            )
        return functions.tensordot(self, other, ([self.ndim - 1], [other.ndim - 1]))

    def vdot(self, other: Any) -> Any:
        return self.dot(other)

    def kron(self, other: Any) -> Any:
        """The Kronecker product: blocks ``self[i…] · other``."""
        other = engine.as_tensor(other)
        ndim = max(self.ndim, other.ndim)
        a = self.reshape((1,) * (ndim - self.ndim) + self.shape)
        b = other.reshape((1,) * (ndim - other.ndim) + other.shape)
        spread_a = a.reshape(tuple(d for n in a.shape for d in (n, 1)))
        spread_b = b.reshape(tuple(d for n in b.shape for d in (1, n)))
        return (spread_a * spread_b).reshape(tuple(m * n for m, n in zip(a.shape, b.shape)))

    def addmm(self, mat1: Any, mat2: Any, *, beta: float = 1, alpha: float = 1) -> Any:
        """``beta · self + alpha · (mat1 @ mat2)`` (``self`` ignored when beta is 0, but its
        dtype must still be the product's, as in PyTorch)."""
        check_same_dtype("addmm", ("self", self), ("mat1", mat1), ("mat2", mat2))
        check_kernel("addmm", "addmm_impl_cpu_", self)
        return _add_product(self, engine.as_tensor(mat1).mm(mat2), beta, alpha)

    def addmv(self, mat: Any, vec: Any, *, beta: float = 1, alpha: float = 1) -> Any:
        check_same_dtype("addmv", ("self", self), ("mat", mat), ("vec", vec))
        check_kernel("addmv", "addmv_impl_cpu", self)
        return _add_product(self, engine.as_tensor(mat).mv(vec), beta, alpha)

    def baddbmm(self, batch1: Any, batch2: Any, *, beta: float = 1, alpha: float = 1) -> Any:
        check_same_dtype("baddbmm", ("self", self), ("batch1", batch1))  # PyTorch's order
        check_kernel("baddbmm", "baddbmm", self)
        check_same_dtype("baddbmm", ("batch1", batch1), ("batch2", batch2))
        return _add_product(self, engine.as_tensor(batch1).bmm(batch2), beta, alpha)

    def addmm_(self, mat1: Any, mat2: Any, *, beta: float = 1, alpha: float = 1) -> Any:
        return self.copy_(self.addmm(mat1, mat2, beta=beta, alpha=alpha))

    def addmv_(self, mat: Any, vec: Any, *, beta: float = 1, alpha: float = 1) -> Any:
        return self.copy_(self.addmv(mat, vec, beta=beta, alpha=alpha))

    def baddbmm_(self, batch1: Any, batch2: Any, *, beta: float = 1, alpha: float = 1) -> Any:
        return self.copy_(self.baddbmm(batch1, batch2, beta=beta, alpha=alpha))

    def cross(self, other: Any, dim: int | None = None) -> Any:
        """The cross product of 3-vectors along ``dim`` (the first dimension of size 3 when
        None, as ``torch.cross``), the two broadcast."""
        other = engine.as_tensor(other)
        check_same_dtype("cross", ("self", self), ("other", other))
        try:
            shape = np.broadcast_shapes(self.shape, other.shape)
        except ValueError as exc:
            raise RuntimeError(
                f"cross: shapes {self.shape} and {other.shape} do not broadcast"
            ) from exc
        a, b = self.expand(shape), other.expand(shape)
        if dim is None:
            dims = [d for d, n in enumerate(shape) if n == 3]
            if not dims:
                raise RuntimeError(f"cross: no dimension of size 3 in input of shape {shape}")
            dim = dims[0]
        axis = ops.normalize_axis(dim, len(shape), "cross")
        if shape[axis] != 3:
            raise RuntimeError(
                f"linalg.cross: inputs dimension {dim} must have length 3. Got {shape[axis]} "
                f"and {shape[axis]}"
            )
        a0, a1, a2 = a.unbind(axis)
        b0, b1, b2 = b.unbind(axis)
        return functions.stack([a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0], axis)


# --------------------------------------------------------------------------- helpers
def _unique_result(values, inverse, counts, return_inverse: bool, return_counts: bool) -> Any:
    """``unique``'s result: the values alone, or a tuple with the inverse and/or the counts
    (int64, as PyTorch's)."""
    result = [wrap(np.ascontiguousarray(values))]
    if return_inverse:
        result.append(wrap(np.asarray(inverse, dtype=np.int64)))
    if return_counts:
        result.append(wrap(np.asarray(counts, dtype=np.int64)))
    return result[0] if len(result) == 1 else tuple(result)


#: PyTorch's legacy tensor type names by dtype (``Tensor.type()``)
_TYPE_DTYPES: dict[str, Any] = {
    "FloatTensor": array_backend.float32,
    "DoubleTensor": array_backend.float64,
    "HalfTensor": array_backend.float16,
    "LongTensor": array_backend.int64,
    "IntTensor": array_backend.int32,
    "ShortTensor": array_backend.int16,
    "CharTensor": array_backend.int8,
    "ByteTensor": array_backend.uint8,
    "BoolTensor": array_backend.bool_,
}
_TYPE_NAMES = {array_backend.as_dtype(d): f"torch.{name}" for name, d in _TYPE_DTYPES.items()}


def _floating_input(x: Any) -> Any:
    """``x`` itself when floating; an integer or bool tensor in the default float dtype, in
    which PyTorch computes exp, log, sin, ... of it (NumPy would pick float64 or float16)."""
    return x if x.dtype.kind == "f" else x.astype(array_backend.DEFAULT_FLOAT)


def floating_kernel(name: str, x: Any, *others: Any) -> Any:
    """``x``, where PyTorch computes ``name`` for floating operands only (softmax, gelu, elu,
    hypot, ...): integer or bool operands (promoted together with ``others``, numbers
    included) are its NotImplementedError, not a silent cast."""
    dtype = (
        x.dtype
        if not others
        else array_backend.result_type(*(_raw(engine.operand(v)) for v in (x, *others)))
    )
    if dtype.kind != "f":
        raise NotImplementedError(
            f'"{name}" not implemented for {dtype} tensors (PyTorch has no integer or bool '
            f"kernel for it; convert with .float())"
        )
    return x


def no_bool_kernel(name: str, x: Any, error: type[Exception] = NotImplementedError) -> Any:
    """``x`` (a tensor, or the dtype of a result), where PyTorch has no bool kernel for
    ``name`` (abs, floor, argmax, ``//`` and ``%`` of bools, ...)."""
    if getattr(x, "dtype", x) == np.bool_:
        raise error(f'"{name}" not implemented for bool tensors (convert with .int() or .float())')
    return x


def check_integer_divisor(name: str, dtype: np.dtype, divisor: Any, dividend: Any = None) -> None:
    """PyTorch's error for an integer ``//`` or ``%`` by zero (NumPy gives 0 and a warning);
    none where the result has no element (PyTorch computes nothing)."""
    if dtype.kind == "f":
        return
    if dividend is not None:
        try:
            if 0 in np.broadcast_shapes(np.shape(dividend), np.shape(divisor)):
                return
        except ValueError:
            return  # the op itself reports the shapes
    if np.any(np.asarray(_raw(divisor)) == 0):
        raise RuntimeError(f"{name}: ZeroDivisionError (integer division by zero)")


def remainder(op_type: type[ops.Op], x: Any, y: Any) -> Any:
    """``x % y`` (``ops.Remainder``) or ``fmod`` (``ops.Fmod``) with PyTorch's promotion and
    its error for an integer divisor of 0; differentiable (1 with respect to ``x``)."""
    ax, ay = _raw(engine.operand(x)), _raw(engine.operand(y))
    if ax is NotImplemented or ay is NotImplemented:
        return NotImplemented
    dtype = array_backend.result_type(ax, ay)
    no_bool_kernel(op_type.name, dtype)
    check_integer_divisor(op_type.name, dtype, ay, ax)
    return binary(op_type, x, y)


def rounded_division(x: Any, y: Any, rounding_mode: str) -> Any:
    """``x / y`` rounded down (``//``, ``div(rounding_mode="floor")``) or towards zero, in
    PyTorch's result dtype, exact for integers; its gradient is 0, as PyTorch's ``div``."""
    x, y = engine.operand(x), engine.operand(y)
    if x is NotImplemented or y is NotImplemented:
        return NotImplemented
    dtype = array_backend.result_type(_raw(x), _raw(y))
    no_bool_kernel(f"div_{rounding_mode}", dtype)
    check_integer_divisor("div", dtype, _raw(y), _raw(x))
    x, y = engine._cast(x, dtype), engine._cast(y, dtype)
    divide = _floor_divide if rounding_mode == "floor" else _trunc_divide
    return apply(ops.Rounding(f"div_{rounding_mode}", divide), x, y)


def _floor_divide(x: Any, y: Any) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):  # a float 0 divisor: ±inf or NaN
        return np.asarray(np.floor_divide(x, y))


def _trunc_divide(x: Any, y: Any) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        if np.result_type(x, y).kind == "f":
            return np.asarray(np.trunc(np.true_divide(x, y)))
        quotient = np.asarray(np.floor_divide(x, y))  # integers: exact, then towards zero
        inexact = (np.remainder(x, y) != 0) & ((np.asarray(x) < 0) != (np.asarray(y) < 0))
        return quotient + inexact.astype(quotient.dtype)


def _integers_unchanged(function: Any) -> Any:
    """``function`` (floor, ceil, trunc) for floats; integers are already whole (NumPy would
    return them as float64)."""

    def rounded(x: np.ndarray) -> np.ndarray:
        return x.copy() if x.dtype.kind in "biu" else function(x)

    rounded.__name__ = function.__name__
    return rounded


def _sign(x: np.ndarray) -> np.ndarray:
    """PyTorch's sign: 0 for NaN, a bool tensor unchanged (NumPy has no bool loop)."""
    if x.dtype == np.bool_:
        return x.copy()
    out = np.sign(x)
    return np.where(np.isnan(out), 0, out) if out.dtype.kind == "f" else out


def _triangle(x: Any, keep: Any, name: str, diagonal: int) -> np.ndarray:
    """Where a triangle of ``x``'s last two dimensions is (``keep``: np.tril or np.triu)."""
    if x.ndim < 2:
        raise RuntimeError(f"{name}: input tensor must have at least 2 dimensions")
    return keep(np.ones(x.shape[-2:], dtype=bool), diagonal)


def _raw(value: Any) -> Any:
    return value._data if isinstance(value, engine.Tensor) else value


def _bound(value: Any) -> Any:
    """A clamp bound: None, a tensor, or a number (kept as a weak Python scalar)."""
    if value is None or isinstance(value, engine.Tensor):
        return value
    if isinstance(value, np.ndarray):
        return value
    return array_backend.scalar_operand(value)


def _product(name: str, x: Any, y: Any, names: tuple[str, str]) -> Any:
    """The matrix product ``x @ y`` under ``name``'s dtype checks (``product_dtypes``)."""
    check_matmul_dtypes(name, x, y, names)
    return binary(ops.MatMul, x, y)


def _truth_values(x: Any, found: Any) -> np.ndarray:
    """``any``/``all``'s result: bool, uint8 for a uint8 ``x`` (PyTorch's legacy masks)."""
    return np.asarray(found, np.uint8 if x.dtype == np.uint8 else np.bool_)


def _accumulated(x: Any) -> Any:
    """``x`` in the dtype that a sum or product without ``dtype=`` accumulates in: int64 for
    bool and integer tensors, PyTorch's rule for ``sum``, ``prod``, ``cumsum``, ``cumprod``,
    ``nansum`` and ``trace`` (NumPy would sum uint8 in uint64)."""
    return x.long() if x.dtype.kind in "biu" and x.dtype != np.int64 else x


def _reduction_input(name: str, x: Any, dtype: Any, dim: Any) -> Any:
    """``x`` in a reduction's ``dtype=``; PyTorch refuses an integer one for a tensor that
    requires grad (the gradient would have nowhere to go)."""
    target = array_backend.as_dtype(dtype)
    if dim is not None:  # PyTorch checks the dims first
        reduction_axes(_all_if_empty(dim), x.ndim, name)
    if x.requires_grad and grad_mode.is_grad_enabled() and not array_backend.is_floating(target):
        raise RuntimeError(f"{name}: autograd does not support dtype {target} (x requires grad)")
    return x.to(target)


def _valid_dim(dim: Any, ndim: int) -> bool:
    return isinstance(dim, int) and -max(ndim, 1) <= dim < max(ndim, 1)


def _in_dtype(result: Any, dtype: Any) -> Any:
    """A reduction's result in the ``dtype=`` asked for: NumPy sums small integers in int64."""
    return (
        result
        if dtype is None or result.dtype == array_backend.as_dtype(dtype)
        else result.to(dtype)
    )


def _nonempty_dims(name: str, x: Any, dim: Any) -> None:
    """PyTorch's IndexError for a maximum or minimum over a dimension of size 0 (over all
    of an empty tensor it is a RuntimeError, from the op)."""
    dim = _all_if_empty(dim)
    if dim is None or x.numel() or not x.ndim:
        return
    for d in (dim,) if isinstance(dim, int) else dim:
        if isinstance(d, int) and -x.ndim <= d < x.ndim and x.shape[d] == 0:
            raise IndexError(f"{name}(): Expected reduction dim {d} to have non-zero size")


def _logical(ufunc: Any, x: Any, other: Any) -> Any:
    """``logical_and``/``or``/``xor``: a bool tensor, PyTorch's errors for bad operands."""
    other_operand = _tensor_argument(ufunc.__name__, other)
    other = _raw(other_operand)
    try:
        if engine.state.vmapping:  # inside vmap: the batch axes lined up (core.batching)
            out = engine.batched_values(ufunc, (x, other_operand), (x._data, other))
            if out is not None:
                return out
        return wrap(ufunc(x._data, other))
    except (ValueError, TypeError) as exc:  # a failed broadcast: PyTorch's RuntimeError
        raise engine.named_error(ufunc.__name__, exc) from exc


def _tensor_argument(name: str, other: Any, what: str = "other") -> Any:
    """``other`` where PyTorch asks for a Tensor (``maximum``, ``logical_and``, ``isclose``,
    the matrix products): a Python number is its TypeError, not a broadcast constant."""
    if isinstance(other, (bool, int, float, complex, np.generic)):
        raise TypeError(
            f"{name}(): argument '{what}' (position 2) must be Tensor, not {type(other).__name__}"
        )
    return other


def _check_alpha(name: str, x: Any, other: Any, alpha: Any) -> Any:
    """``alpha`` by PyTorch's rules: a float alpha needs a floating result, and a bool result
    takes it as a bool (``add(True, True, alpha=2)`` is True, not 3)."""
    if type(alpha) is int and alpha == 1:  # (True is checked: a bool alpha needs a bool result)
        return alpha
    dtype = array_backend.result_type(_raw(x), _raw(engine.operand(other)))
    if isinstance(alpha, bool) and dtype != np.bool_:
        raise RuntimeError(f"{name}: Boolean alpha only supported for Boolean results, got {dtype}")
    if isinstance(alpha, float) and dtype.kind != "f":
        raise RuntimeError(
            f"{name}: for integral input tensors, argument alpha must not be a floating point "
            f"number, got {alpha}"
        )
    return bool(alpha) if dtype == np.bool_ else alpha


def _check_ndim(name: str, x: Any, ndim: int, what: str) -> None:
    shape = np.shape(_raw(x))
    if len(shape) != ndim:
        raise RuntimeError(f"{name}: {what} must be a {ndim}-D tensor, got shape {shape}")


def _floating(name: str, x: Any) -> None:
    if x.dtype.kind != "f":
        raise RuntimeError(
            f"{name}(): could not infer output dtype. Input dtype must be a floating point "
            f"dtype, got {x.dtype} (pass dtype=, or convert with .float())"
        )


def _correction(unbiased: bool | None, correction: int | None) -> int:
    if unbiased is not None and correction is not None:
        raise TypeError("var/std: pass unbiased or correction, not both")
    if correction is not None:
        return correction
    return 0 if unbiased is False else 1


def _descending_key(data: np.ndarray) -> np.ndarray:
    """A key whose ascending order is ``data``'s descending order, ties kept in place."""
    if data.dtype == np.bool_:
        return ~data
    if data.dtype.kind == "u":
        return np.iinfo(data.dtype).max - data
    return ~data if data.dtype.kind == "i" else -data  # ~x = -x - 1: no overflow at the minimum


def _is_dtype_name(value: Any) -> bool:
    if not isinstance(value, str):
        return False
    try:
        array_backend.as_dtype(value)
    except TypeError:
        return False
    return True


def _index_reduction(function: Any, x: Any, dim: Any, keepdim: bool) -> Any:
    name = function.__name__
    if dim is not None:
        dim = ops.normalize_axis(dim, max(x.ndim, 1), name)
    data = x._data
    if data.size == 0 and (dim is None or not data.ndim or data.shape[dim] == 0):
        raise IndexError(f"{name}: cannot take the {name[3:]} of an empty tensor")
    if dim is None and keepdim:
        return wrap(np.reshape(function(data), (1,) * data.ndim))
    return wrap(function(data, axis=dim if data.ndim else None, keepdims=keepdim))


# --------------------------------------------------------------------------- helpers of the
# functions added for issue 22
#: what ``aminmax`` returns, as PyTorch's return type
MinMax = namedtuple("MinMax", ["min", "max"])


def _float_operands(x: Any, y: Any) -> tuple[Any, Any]:
    """Two operands in their PyTorch result type, or the default float where that is an
    integer type (the functions that always compute in float: atan2, hypot, ...)."""
    y = engine.operand(y)
    if y is NotImplemented:
        raise TypeError(f"expected a tensor or a number, got {type(y).__name__}")
    dtype = array_backend.result_type(x._data, _raw(y))
    if dtype.kind != "f":
        dtype = array_backend.DEFAULT_FLOAT
    x = engine._cast(x, dtype)
    y = engine._cast(y, dtype) if isinstance(y, (engine.Tensor, np.ndarray)) else y
    return x, (y if isinstance(y, engine.Tensor) else engine.as_tensor(np.asarray(y, dtype)))


def _float_binary(op_type: Any, x: Any, y: Any) -> Any:
    a, b = _float_operands(x, y)
    return apply(op_type(), a, b)


def _same_dtype_operands(x: Any, y: Any) -> tuple[Any, Any]:
    y = engine.operand(y)
    if y is NotImplemented:
        raise TypeError(f"expected a tensor or a number, got {type(y).__name__}")
    dtype = array_backend.result_type(x._data, _raw(y))
    x = engine._cast(x, dtype)
    y = engine._cast(y, dtype) if isinstance(y, (engine.Tensor, np.ndarray)) else y
    return x, (y if isinstance(y, engine.Tensor) else engine.as_tensor(np.asarray(y, dtype)))


@engine.reads_values
def _bitwise(ufunc: Any, name: str, x: Any, y: Any) -> Any:
    other = _raw(engine.operand(y))
    dtype = array_backend.result_type(x._data, other)
    if dtype.kind not in "biu":
        raise NotImplementedError(f'"{name}_cpu" not implemented for {dtype}')
    if name.endswith("shift") and dtype == np.bool_:
        raise NotImplementedError(f"\"{name}_cpu\" not implemented for 'Bool'")
    return wrap(np.asarray(ufunc(x._data.astype(dtype, copy=False), np.asarray(other, dtype))))


def _lowest(dtype: np.dtype) -> Any:
    return -np.inf if dtype.kind == "f" else np.iinfo(dtype).min


def _empty_reduction(name: str) -> Any:
    raise IndexError(f"{name}(): Expected reduction dim to be specified for input.numel() == 0.")


def _nan_last_order(data: np.ndarray, axis: int = -1) -> np.ndarray:
    """A stable ascending order with NaN last."""
    return np.argsort(data, axis=axis, kind="stable")


@engine.reads_values
def _running_extreme(x: Any, dim: int, extreme: Any, better: Any, name: str) -> Any:
    axis = ops.normalize_axis(dim, max(x.ndim, 1), name)
    if not x.ndim:
        return ValuesIndices(x.clone(), wrap(np.zeros((), np.int64)))
    data = x._data
    running = extreme.accumulate(data, axis=axis) if data.size else data.copy()
    positions = np.arange(data.shape[axis]).reshape(
        [-1 if d == axis else 1 for d in range(data.ndim)]
    )
    if data.dtype.kind == "f":
        wins = np.isnan(data) | (~np.isnan(running) & better(data, running))
    else:
        wins = better(data, running)
    candidates = np.where(wins, positions, 0)
    indices = np.maximum.accumulate(candidates, axis=axis) if data.size else candidates
    indices = indices.astype(np.int64)
    return ValuesIndices(x.gather(axis, indices), wrap(indices))


@engine.reads_values
def _kth(x: Any, dim: int, keepdim: bool, k: int | None, name: str) -> Any:
    """The k-th smallest along ``dim`` (the lower median when k is None), as (values,
    indices); a slice holding NaN gives its first NaN for the median."""
    axis = ops.normalize_axis(dim, max(x.ndim, 1), name)
    data = x._data if x.ndim else x._data.reshape(1)
    size = data.shape[axis]
    if k is None:
        if not size:
            raise IndexError(f"median(): Expected reduction dim {axis} to have non-zero size.")
        position = (size - 1) // 2
    else:
        if not 1 <= k <= size:
            raise RuntimeError(
                f"kthvalue(): selected number k out of range for dimension {axis}: k = {k}, "
                f"size {size}"
            )
        position = k - 1
    order = _nan_last_order(data, axis)
    index = np.take(order, [position], axis=axis)
    if k is None and data.dtype.kind == "f":
        nan = np.isnan(data)
        first_nan = np.argmax(nan, axis=axis, keepdims=True)
        index = np.where(nan.any(axis=axis, keepdims=True), first_nan, index)
    index = index.astype(np.int64)
    values = (x if x.ndim else x.reshape(1)).gather(axis, index)
    if not keepdim:
        index = np.squeeze(index, axis)
        values = values.squeeze(axis)
    if not x.ndim:
        index, values = index.reshape(()), values.reshape(())
    return ValuesIndices(values, wrap(index))


def _add_product(base: Any, product: Any, beta: float, alpha: float) -> Any:
    """``beta · base + alpha · product``; with beta 0 the base is ignored (NaN in it too, as
    PyTorch), but its shape still broadcasts."""
    scaled = product if alpha == 1 else product * alpha
    if beta == 0:
        shape = np.broadcast_shapes(np.shape(_raw(base)), scaled.shape)
        return scaled if shape == scaled.shape else scaled.expand(shape)
    return (base if beta == 1 else base * beta) + scaled
